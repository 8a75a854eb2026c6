// FrameMeter: follows the Cap'n Proto stream framing of the bytes a
// connection receives, so the RPC server can see each request's size as
// soon as its segment table arrives (before Cap'n Proto allocates a buffer
// of that size) and when the request is complete.
//
// Framing (capnp/serialize.h): a little-endian u32 segment count minus one,
// a u32 size in words per segment, padding to a whole word, then the
// segments. The meter never interprets the segments. A frame that starts
// with kLookupFrameTag is a lookup channel frame instead (rpc/lookup_wire.h:
// the tag, a u32 body size in bytes, the body), and so is one that starts
// with kReplicationFrameTag (replication/replication_wire.h); the first
// frame of a connection tells the server which protocol it speaks.
//
// Contract: Feed() takes the received bytes in order, in pieces of any size
// (including 0), and reports through its callbacks, in stream order:
//   on_start(total_bytes) once a frame's table is complete (total_bytes =
//     table + segments); a first word declaring more than kMaxSegments
//     segments (which Cap'n Proto refuses) reports UINT64_MAX at once, and
//     the meter follows nothing after it;
//   on_end() when its last byte has been fed.
// A callback returning false stops Feed() at once (the caller drops the
// connection); Feed() then returns false, and the meter is not used again.
//
// Thread safety: none; one meter per connection, used by its loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace shelfmark {

class FrameMeter {
 public:
  static constexpr uint32_t kMaxSegments = 512;  // Cap'n Proto's own limit

  std::function<bool(uint64_t total_bytes)> on_start;
  std::function<bool()> on_end;

  bool Feed(const uint8_t* data, size_t size);

  // True between a frame's first byte and its last (and once lost).
  bool in_frame() const { return state_ != State::kIdle; }

 private:
  enum class State { kIdle, kTable, kBody, kLost };
  // Consumes table bytes; true when the table is complete.
  bool TakeTable(const uint8_t*& data, size_t& size);

  State state_ = State::kIdle;
  uint8_t word_[4] = {};
  size_t word_have_ = 0;
  uint64_t segments_ = 0;       // declared count (0 until the first u32 is in)
  uint64_t sizes_read_ = 0;     // segment sizes read so far
  uint64_t table_bytes_ = 0;    // header + sizes + padding
  uint64_t table_have_ = 0;     // table bytes consumed
  uint64_t body_words_ = 0;     // sum of the sizes read
  uint64_t body_left_ = 0;      // body bytes still to come
  bool lookup_ = false;         // the frame is a lookup frame
};

}  // namespace shelfmark
