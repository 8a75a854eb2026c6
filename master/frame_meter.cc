#include "master/frame_meter.h"

#include <algorithm>
#include <limits>

#include "replication/replication_wire.h"
#include "rpc/lookup_wire.h"

namespace shelfmark {

bool FrameMeter::TakeTable(const uint8_t*& data, size_t& size) {
  while (size > 0 && (segments_ == 0 || table_have_ < table_bytes_)) {
    uint8_t byte = *data++;
    --size;
    ++table_have_;
    if (segments_ != 0 && sizes_read_ == segments_) continue;  // padding
    word_[word_have_++] = byte;
    if (word_have_ < 4) continue;
    word_have_ = 0;
    uint32_t value = static_cast<uint32_t>(word_[0]) | static_cast<uint32_t>(word_[1]) << 8 |
                     static_cast<uint32_t>(word_[2]) << 16 | static_cast<uint32_t>(word_[3]) << 24;
    if (segments_ == 0 && (value == kLookupFrameTag || value == kReplicationFrameTag)) {
      // A lookup frame (rpc/lookup_wire.h): its second u32 is the body's size
      // in bytes, kept in body_words_.
      lookup_ = true;
      segments_ = 1;
      table_bytes_ = kLookupHeaderBytes;
    } else if (segments_ == 0) {
      segments_ = uint64_t{value} + 1;
      if (segments_ > kMaxSegments) return true;
      table_bytes_ = (4 + 4 * segments_ + 7) / 8 * 8;
    } else {
      body_words_ += value;
      ++sizes_read_;
    }
  }
  return segments_ != 0 && (segments_ > kMaxSegments || table_have_ == table_bytes_);
}

bool FrameMeter::Feed(const uint8_t* data, size_t size) {
  while (size > 0) {
    switch (state_) {
      case State::kLost:
        return true;
      case State::kIdle:
        state_ = State::kTable;
        segments_ = sizes_read_ = table_bytes_ = table_have_ = body_words_ = 0;
        word_have_ = 0;
        lookup_ = false;
        break;
      case State::kTable: {
        if (!TakeTable(data, size)) return true;  // all consumed, table incomplete
        if (segments_ > kMaxSegments) {
          state_ = State::kLost;
          return !on_start || on_start(std::numeric_limits<uint64_t>::max());
        }
        body_left_ = lookup_ ? body_words_ : body_words_ * 8;
        state_ = State::kBody;
        if (on_start && !on_start(table_bytes_ + body_left_)) return false;
        break;
      }
      case State::kBody: {
        uint64_t take = std::min<uint64_t>(size, body_left_);
        data += take;
        size -= static_cast<size_t>(take);
        body_left_ -= take;
        break;
      }
    }
    if (state_ == State::kBody && body_left_ == 0) {
      state_ = State::kIdle;
      if (on_end && !on_end()) return false;
    }
  }
  return true;
}

}  // namespace shelfmark
