// Real UCX active messages between a node engine and a client engine.
#include "transport/ucx_am.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <thread>

#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

TransportOptions Options(std::string token, bool listen) {
  TransportOptions options;
  options.client_id = UUID::Generate();
  options.cluster_token = std::move(token);
  if (listen) options.listen_ip = "127.0.0.1";
  options.connect_timeout_ms = 3000;
  return options;
}

class UcxAmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto node = UcxEngine::Create(Options("token", true));
    ASSERT_TRUE(node.ok());
    node_ = std::move(node).value();
    auto client = UcxEngine::Create(Options("token", false));
    ASSERT_TRUE(client.ok());
    client_ = std::move(client).value();
    // Echo: header back reversed, data = payload repeated to the size asked in the header.
    node_->am().SetHandler(7, [](AmRequest request, AmResponder responder) {
      const size_t size = std::stoul(request.header);
      std::string data(size, '\0');
      for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>('a' + i % 26);
      responder.Reply("re:" + request.header + ":" + request.payload, std::move(data));
    });
  }

  std::unique_ptr<UcxEngine> node_, client_;
};

TEST_F(UcxAmTest, SmallAndLargeReplies) {
  for (size_t size : {size_t{0}, size_t{100}, size_t{64} << 10, size_t{4} << 20}) {
    auto reply = client_->am().Call(node_->endpoint(), 7, std::to_string(size), "pay", 5000);
    ASSERT_TRUE(reply.ok()) << size << " " << static_cast<int>(reply.error());
    EXPECT_EQ(reply->header, "re:" + std::to_string(size) + ":pay");
    ASSERT_EQ(reply->data.size(), size);
    for (size_t i = 0; i < size; i += 4099) ASSERT_EQ(reply->data[i], static_cast<char>('a' + i % 26));
  }
}

TEST_F(UcxAmTest, LargeRequestPayload) {
  node_->am().SetHandler(8, [](AmRequest request, AmResponder responder) {
    responder.Reply(std::to_string(request.payload.size()), request.payload.substr(0, 10));
  });
  std::string payload(3 << 20, 'p');
  auto reply = client_->am().Call(node_->endpoint(), 8, "", payload, 5000);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->header, std::to_string(payload.size()));
  EXPECT_EQ(reply->data, "pppppppppp");
}

TEST_F(UcxAmTest, HandlerRepliesFromAnotherThread) {
  std::thread worker;
  node_->am().SetHandler(9, [&worker](AmRequest request, AmResponder responder) {
    worker = std::thread([request = std::move(request), responder = std::move(responder)]() mutable {
      responder.Reply("later", std::string(1 << 20, 'L'));
    });
  });
  auto reply = client_->am().Call(node_->endpoint(), 9, "", "", 5000);
  worker.join();
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->header, "later");
  EXPECT_EQ(reply->data.size(), 1u << 20);
}

TEST_F(UcxAmTest, ErrorsAreTyped) {
  // No handler for the id.
  EXPECT_EQ(client_->am().Call(node_->endpoint(), 99, "", "", 5000).error(),
            ErrorCode::INVALID_PARAMS);
  // The handler fails, or drops its responder.
  node_->am().SetHandler(10, [](AmRequest, AmResponder responder) {
    responder.Fail(ErrorCode::OBJECT_NOT_FOUND);
  });
  node_->am().SetHandler(11, [](AmRequest, AmResponder) {});
  EXPECT_EQ(client_->am().Call(node_->endpoint(), 10, "", "", 5000).error(),
            ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client_->am().Call(node_->endpoint(), 11, "", "", 5000).error(),
            ErrorCode::INTERNAL_ERROR);
  // Too large a header.
  std::string huge(client_->am().max_header_size() + 1, 'h');
  EXPECT_EQ(client_->am().Call(node_->endpoint(), 7, huge, "", 5000).error(),
            ErrorCode::INVALID_PARAMS);
}

TEST_F(UcxAmTest, NoReplyTimesOut) {
  // The handler runs on the node's progress thread: it hands the responder
  // over through a promise, which orders it before the test thread's use.
  std::promise<AmResponder> handed;
  node_->am().SetHandler(12, [&handed](AmRequest, AmResponder responder) {
    handed.set_value(std::move(responder));  // never answered before the deadline
  });
  EXPECT_EQ(client_->am().Call(node_->endpoint(), 12, "", "", 300).error(),
            ErrorCode::TRANSFER_FAIL);
  // The late reply is dropped as unmatched; the connection still serves.
  AmResponder kept = handed.get_future().get();
  kept.Reply("late", "");
  auto reply = client_->am().Call(node_->endpoint(), 7, "1", "", 5000);
  ASSERT_TRUE(reply.ok());
}

TEST_F(UcxAmTest, WrongTokenIsRejectedAndNotServed) {
  int served = 0;
  node_->am().SetHandler(13, [&served](AmRequest, AmResponder responder) {
    ++served;
    responder.Reply("", "");
  });
  auto intruder = UcxEngine::Create(Options("wrong", false));
  ASSERT_TRUE(intruder.ok());
  EXPECT_EQ((*intruder)->am().Call(node_->endpoint(), 13, "", "", 3000).error(),
            ErrorCode::ILLEGAL_CLIENT);
  ASSERT_TRUE(client_->am().Call(node_->endpoint(), 13, "", "", 3000).ok());
  EXPECT_EQ(served, 1);
}

TEST_F(UcxAmTest, NodeGoneFailsWithinTimeout) {
  ASSERT_TRUE(client_->am().Call(node_->endpoint(), 7, "1", "", 5000).ok());
  const std::string endpoint = node_->endpoint();
  node_.reset();
  EXPECT_EQ(client_->am().Call(endpoint, 7, "1", "", 2000).error(), ErrorCode::TRANSFER_FAIL);
}

}  // namespace
}  // namespace shelfmark
