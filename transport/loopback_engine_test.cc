#include "transport/loopback_engine.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace shelfmark {
namespace {

TransportOptions Options(std::string token = "secret") {
  TransportOptions options;
  options.client_id = UUID::Generate();
  options.cluster_token = std::move(token);
  options.listen_ip = "127.0.0.1";
  return options;
}

// A node engine with a published segment and a client engine with a
// registered local buffer.
class LoopbackEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_unique<LoopbackEngine>(Options());
    client_ = std::make_unique<LoopbackEngine>(Options());
    segment_.assign(1 << 20, 0);
    local_.assign(1 << 20, 0);
    auto remote = node_->RegisterMemory(segment_.data(), segment_.size(), true);
    ASSERT_TRUE(remote.ok());
    remote_region_ = *remote;
    auto local = client_->RegisterMemory(local_.data(), local_.size(), false);
    ASSERT_TRUE(local.ok());
    local_region_ = *local;
    desc_.endpoint = node_->endpoint();
    desc_.protocol = "loopback";
    desc_.buffer_address = reinterpret_cast<uint64_t>(segment_.data());
    desc_.size = segment_.size();
    desc_.rkey = remote_region_.rkey;
  }

  TransferStatus One(TransferKind kind, const MemoryDescriptor& desc, uint64_t offset,
                     void* local, uint64_t length) {
    TransferOp op{&desc, offset, local, length};
    return client_->Transfer(kind, std::span<const TransferOp>(&op, 1), 1000);
  }

  std::unique_ptr<LoopbackEngine> node_, client_;
  std::vector<char> segment_, local_;
  MemoryRegion remote_region_, local_region_;
  MemoryDescriptor desc_;
};

TEST_F(LoopbackEngineTest, EndpointsAreDistinctAndRkeyOnlyForRemoteRegions) {
  EXPECT_NE(node_->endpoint(), client_->endpoint());
  EXPECT_EQ(node_->endpoint().rfind("loopback:", 0), 0u);
  EXPECT_EQ(node_->protocol(), "loopback");
  EXPECT_FALSE(remote_region_.rkey.empty());
  EXPECT_TRUE(local_region_.rkey.empty());
  EXPECT_EQ(node_->RegisterMemory(nullptr, 10, true).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(node_->RegisterMemory(segment_.data(), 0, true).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(LoopbackEngineTest, WriteThenReadAtSeveralOffsets) {
  for (uint64_t offset : {0ull, 1ull, 4095ull, 500000ull}) {
    const uint64_t length = 4096 + offset % 7;
    for (uint64_t i = 0; i < length; ++i) local_[i] = static_cast<char>(offset + i * 31);
    ASSERT_TRUE(One(TransferKind::WRITE, desc_, offset, local_.data(), length).ok());
    EXPECT_EQ(std::memcmp(segment_.data() + offset, local_.data(), length), 0);
    std::vector<char> expect(local_.begin(), local_.begin() + length);
    std::memset(local_.data() + 8192, 0, length);
    ASSERT_TRUE(One(TransferKind::READ, desc_, offset, local_.data() + 8192, length).ok());
    EXPECT_EQ(std::memcmp(local_.data() + 8192, expect.data(), length), 0);
  }
}

TEST_F(LoopbackEngineTest, BatchOfReads) {
  for (size_t i = 0; i < segment_.size(); ++i) segment_[i] = static_cast<char>(i * 7);
  std::vector<TransferOp> ops;
  for (uint64_t i = 0; i < 8; ++i) ops.push_back({&desc_, i * 1000, local_.data() + i * 100, 100});
  ASSERT_TRUE(client_->Transfer(TransferKind::READ, ops, 1000).ok());
  for (uint64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(std::memcmp(local_.data() + i * 100, segment_.data() + i * 1000, 100), 0);
  }
}

TEST_F(LoopbackEngineTest, OutOfDescriptorBoundsIsInvalidParams) {
  TransferStatus status = One(TransferKind::READ, desc_, desc_.size - 10, local_.data(), 11);
  EXPECT_EQ(status.code, ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(One(TransferKind::READ, desc_, ~0ull, local_.data(), 2).code,
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(One(TransferKind::READ, desc_, 0, local_.data(), 0).code, ErrorCode::INVALID_PARAMS);
}

TEST_F(LoopbackEngineTest, UnregisteredLocalBufferIsInvalidParams) {
  std::vector<char> other(100);
  EXPECT_EQ(One(TransferKind::READ, desc_, 0, other.data(), 100).code,
            ErrorCode::INVALID_PARAMS);
  // Straddling the end of the local region.
  EXPECT_EQ(One(TransferKind::READ, desc_, 0, local_.data() + local_.size() - 10, 20).code,
            ErrorCode::INVALID_PARAMS);
}

TEST_F(LoopbackEngineTest, ForgedDescriptorIsRemoteAccessError) {
  // A descriptor larger than the registered region: bounds pass, owner refuses.
  MemoryDescriptor forged = desc_;
  forged.size = desc_.size * 2;
  TransferStatus status = One(TransferKind::READ, forged, desc_.size, local_.data(), 100);
  EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(status.message.find("remote access error"), std::string::npos);
  // An address below the region.
  forged = desc_;
  forged.buffer_address -= 64;
  EXPECT_EQ(One(TransferKind::READ, forged, 0, local_.data(), 100).code, ErrorCode::TRANSFER_FAIL);
  // Wrong and garbage rkeys.
  for (std::string rkey : {std::string("lb999999999"), std::string("x"), std::string()}) {
    forged = desc_;
    forged.rkey = rkey;
    EXPECT_EQ(One(TransferKind::READ, forged, 0, local_.data(), 100).code,
              ErrorCode::TRANSFER_FAIL);
  }
  // A local-only region's handle as rkey.
  forged = desc_;
  forged.rkey = "lb" + std::to_string(local_region_.handle);
  forged.endpoint = client_->endpoint();
  forged.buffer_address = reinterpret_cast<uint64_t>(local_.data());
  EXPECT_EQ(One(TransferKind::READ, forged, 0, local_.data() + 1000, 100).code,
            ErrorCode::TRANSFER_FAIL);
}

TEST_F(LoopbackEngineTest, FailedBatchMovesNothing) {
  std::memset(segment_.data(), 'a', 100);
  MemoryDescriptor forged = desc_;
  forged.rkey = "lb0";
  std::vector<TransferOp> ops = {{&desc_, 0, local_.data(), 100}, {&forged, 0, local_.data(), 100}};
  EXPECT_EQ(client_->Transfer(TransferKind::READ, ops, 1000).code, ErrorCode::TRANSFER_FAIL);
  EXPECT_EQ(local_[0], 0);
}

TEST_F(LoopbackEngineTest, UnregisteredRegionAndGoneOwnerFail) {
  node_->UnregisterMemory(remote_region_);
  EXPECT_EQ(One(TransferKind::READ, desc_, 0, local_.data(), 10).code, ErrorCode::TRANSFER_FAIL);
  node_.reset();
  TransferStatus status = One(TransferKind::READ, desc_, 0, local_.data(), 10);
  EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(status.message.find("peer gone"), std::string::npos);
}

TEST_F(LoopbackEngineTest, WrongClusterTokenIsRejected) {
  LoopbackEngine intruder(Options("wrong"));
  auto local = intruder.RegisterMemory(local_.data(), local_.size(), false);
  ASSERT_TRUE(local.ok());
  TransferOp op{&desc_, 0, local_.data(), 10};
  TransferStatus status = intruder.Transfer(TransferKind::READ, std::span(&op, 1), 1000);
  EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(status.message.find("cluster token"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
