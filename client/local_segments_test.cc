// LocalSegments: which ops are copied locally (range checks against the
// descriptor and the attached segment), both directions, the counters, and
// streamed reads (the same bytes and checksums as cached ones).
#include "client/local_segments.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/checksum.h"

namespace shelfmark {
namespace {

class LocalSegmentsTest : public ::testing::Test {
 protected:
  LocalSegmentsTest() : memory_(4096, 'm'), id_(UUID::Generate()) {}

  MemoryDescriptor At(uint64_t offset, uint64_t size) const {
    MemoryDescriptor d;
    d.segment_id = id_;
    d.buffer_address = reinterpret_cast<uint64_t>(memory_.data()) + offset;
    d.size = size;
    return d;
  }

  static TransferOp Op(const MemoryDescriptor* d, uint64_t offset, void* local, uint64_t length) {
    TransferOp op;
    op.remote = d;
    op.remote_offset = offset;
    op.local = local;
    op.length = length;
    return op;
  }

  std::vector<char> memory_;
  UUID id_;
  LocalSegments local_;
};

TEST_F(LocalSegmentsTest, CopiesBothWaysInsideAnAttachedSegment) {
  ASSERT_EQ(local_.Attach(id_, memory_.data(), memory_.size()), ErrorCode::OK);
  const MemoryDescriptor d = At(100, 50);
  char buf[10];
  std::memcpy(buf, "abcdefghij", 10);
  EXPECT_TRUE(local_.TryCopy(TransferKind::WRITE, Op(&d, 5, buf, 10)));
  EXPECT_EQ(std::memcmp(memory_.data() + 105, "abcdefghij", 10), 0);
  char back[10] = {};
  EXPECT_TRUE(local_.TryCopy(TransferKind::READ, Op(&d, 5, back, 10)));
  EXPECT_EQ(std::memcmp(back, "abcdefghij", 10), 0);
  EXPECT_TRUE(local_.Holds(d));
  EXPECT_EQ(local_.stats().copies, 2u);
  EXPECT_EQ(local_.stats().bytes, 20u);
}

TEST_F(LocalSegmentsTest, LeavesOtherOpsToTheEngines) {
  ASSERT_EQ(local_.Attach(id_, memory_.data(), memory_.size()), ErrorCode::OK);
  char buf[64];
  const MemoryDescriptor past_descriptor = At(0, 16);
  EXPECT_FALSE(local_.TryCopy(TransferKind::READ, Op(&past_descriptor, 10, buf, 10)));
  const MemoryDescriptor past_segment = At(4090, 16);  // a forged size
  EXPECT_FALSE(local_.TryCopy(TransferKind::READ, Op(&past_segment, 0, buf, 16)));
  EXPECT_FALSE(local_.Holds(past_segment));
  MemoryDescriptor before = At(0, 16);
  before.buffer_address -= 8;
  EXPECT_FALSE(local_.TryCopy(TransferKind::READ, Op(&before, 0, buf, 4)));
  MemoryDescriptor other = At(0, 16);
  other.segment_id = UUID::Generate();
  EXPECT_FALSE(local_.TryCopy(TransferKind::READ, Op(&other, 0, buf, 4)));
  const MemoryDescriptor fine = At(0, 16);
  local_.Detach(id_);
  EXPECT_FALSE(local_.TryCopy(TransferKind::READ, Op(&fine, 0, buf, 4)));
  EXPECT_EQ(local_.stats().copies, 0u);
  EXPECT_EQ(local_.Attach(id_, nullptr, 10), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(local_.Attach(id_, memory_.data(), 0), ErrorCode::INVALID_PARAMS);
}

TEST_F(LocalSegmentsTest, StreamedReadsCopyTheSameBytesAndChecksums) {
  // A segment of distinct bytes, read whole and in pieces into destinations
  // a streamed store can take (64-byte aligned) and cannot (5 and 16 bytes
  // past), with and without a checksum, by a cached and a streaming one
  // (streaming for every read, or for this call: TryCopy's stream_read).
  std::vector<char> segment(256 << 10);
  for (size_t i = 0; i < segment.size(); ++i) segment[i] = static_cast<char>(i * 7 + i / 251);
  LocalSegments streaming(/*stream_reads=*/true);
  ASSERT_EQ(streaming.Attach(id_, segment.data(), segment.size()), ErrorCode::OK);
  ASSERT_EQ(local_.Attach(id_, segment.data(), segment.size()), ErrorCode::OK);
  MemoryDescriptor d;
  d.segment_id = id_;
  d.buffer_address = reinterpret_cast<uint64_t>(segment.data());
  d.size = segment.size();
  alignas(64) static char cached[(256 << 10) + 64], streamed[(256 << 10) + 64];
  for (const uint64_t offset : {uint64_t{0}, uint64_t{3}, uint64_t{4096}}) {
    for (const uint64_t length :
         {uint64_t{100}, uint64_t{240}, uint64_t{65536}, uint64_t{200000}}) {
      for (const uint64_t skew : {uint64_t{0}, uint64_t{16}, uint64_t{5}}) {
        for (const int sum_and_call : {0, 1, 2, 3}) {
          const bool sum = sum_and_call & 1, per_call = sum_and_call & 2;
          std::memset(cached, 0, sizeof(cached));
          std::memset(streamed, 0, sizeof(streamed));
          std::optional<uint64_t> a, b;
          TransferOp ca = Op(&d, offset, cached + skew, length),
                     st = Op(&d, offset, streamed + skew, length);
          if (sum) {
            ca.checksum = &a;
            st.checksum = &b;
          }
          ASSERT_TRUE(local_.TryCopy(TransferKind::READ, ca));
          ASSERT_TRUE(per_call ? local_.TryCopy(TransferKind::READ, st, /*stream_read=*/true)
                               : streaming.TryCopy(TransferKind::READ, st));
          const std::string what = std::to_string(offset) + "+" + std::to_string(length) + " @" +
                                   std::to_string(skew) + (sum ? " sum" : "") +
                                   (per_call ? " per call" : "");
          EXPECT_EQ(std::memcmp(streamed + skew, segment.data() + offset, length), 0) << what;
          EXPECT_EQ(std::memcmp(cached, streamed, sizeof(cached)), 0) << what;  // nothing else
          if (sum) {
            ASSERT_TRUE(b.has_value()) << what;
            EXPECT_EQ(*b, Checksum64(segment.data() + offset, length)) << what;
            EXPECT_EQ(a, b) << what;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace shelfmark
