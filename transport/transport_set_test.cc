#include "transport/transport_set.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transport/loopback_engine.h"

namespace shelfmark {
namespace {

TEST(ChooseProtocolTest, Rules) {
  EXPECT_EQ(*ChooseProtocol("rdma", false), "rdma");
  EXPECT_EQ(*ChooseProtocol("ucx", true), "ucx");
  EXPECT_EQ(*ChooseProtocol("auto", true), "rdma");
  EXPECT_EQ(*ChooseProtocol("auto", false), "ucx");
  EXPECT_EQ(ChooseProtocol("tcp", true).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ChooseProtocol("", false).error(), ErrorCode::INVALID_PARAMS);
}

TEST(TransportSetTest, OpenBuildsOnceAndForFindsIt) {
  TransportSet set;
  EXPECT_EQ(set.For("loopback"), nullptr);
  auto first = set.Open("loopback", TransportOptions{});
  ASSERT_TRUE(first.ok());
  auto again = set.Open("loopback", TransportOptions{});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(set.For("loopback"), *first);
  EXPECT_EQ(set.Open("nope", TransportOptions{}).error(), ErrorCode::INVALID_PARAMS);
}

TEST(TransportSetTest, RegisteredFactoryAndAdd) {
  TransportSet set;
  int built = 0;
  set.RegisterFactory("rdma", [&](const TransportOptions& options)
                                  -> Result<std::unique_ptr<TransportEngine>> {
    ++built;
    if (options.device == "missing") return ErrorCode::TRANSFER_FAIL;
    return std::unique_ptr<TransportEngine>(new LoopbackEngine(options));
  });
  TransportOptions options;
  options.device = "missing";
  EXPECT_EQ(set.Open("rdma", options).error(), ErrorCode::TRANSFER_FAIL);
  EXPECT_EQ(set.For("rdma"), nullptr);
  EXPECT_EQ(built, 1);
  // Add() keys by the engine's own protocol and refuses a duplicate.
  ASSERT_TRUE(set.Add(std::make_unique<LoopbackEngine>(TransportOptions{})).ok());
  EXPECT_EQ(set.Add(std::make_unique<LoopbackEngine>(TransportOptions{})).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(set.Add(nullptr).error(), ErrorCode::INVALID_PARAMS);
}

TEST(TransportSetTest, TransferRoutesByProtocolAndRefusesUnknownFirst) {
  TransportSet node_set, client_set;
  TransportEngine* node = *node_set.Open("loopback", TransportOptions{});
  TransportEngine* client = *client_set.Open("loopback", TransportOptions{});
  std::vector<char> segment(4096, 'n'), local(4096, 0);
  auto remote = node->RegisterMemory(segment.data(), segment.size(), true);
  ASSERT_TRUE(remote.ok());
  ASSERT_TRUE(client->RegisterMemory(local.data(), local.size(), false).ok());
  MemoryDescriptor desc{node->endpoint(), "loopback", reinterpret_cast<uint64_t>(segment.data()),
                        segment.size(), remote->rkey, UUID{}};
  MemoryDescriptor unknown = desc;
  unknown.protocol = "carrier-pigeon";

  std::vector<TransferOp> ops = {{&desc, 0, local.data(), 100}, {&unknown, 0, local.data(), 100}};
  TransferStatus status = client_set.Transfer(TransferKind::READ, ops, 1000);
  EXPECT_EQ(status.code, ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(status.message, "unknown protocol 'carrier-pigeon'");
  EXPECT_EQ(local[0], 0);  // nothing moved

  ops.pop_back();
  ASSERT_TRUE(client_set.Transfer(TransferKind::READ, ops, 1000).ok());
  EXPECT_EQ(local[0], 'n');
  std::vector<TransferOp> null_op = {{nullptr, 0, local.data(), 1}};
  EXPECT_EQ(client_set.Transfer(TransferKind::READ, null_op, 1000).code,
            ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark
