// LocalSegments: which ops are copied locally (range checks against the
// descriptor and the attached segment), both directions, and the counters.
#include "client/local_segments.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

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

}  // namespace
}  // namespace shelfmark
