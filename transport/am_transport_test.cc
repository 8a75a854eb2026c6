// The AmTransport contract (am_transport.h), checked on both implementations:
// UcxAm over real UCX on 127.0.0.1 (eager and rendezvous sizes both ways)
// and the in-process LoopbackAm.
#include "transport/am_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/wait_for.h"
#include "transport/loopback_engine.h"
#include "transport/transport_test_util.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

constexpr int64_t kTimeoutMs = 10'000;
constexpr uint16_t kEcho = 7;  // header = decimal size; data = TestPattern(size)

std::unique_ptr<TransportEngine> OpenEngine(const std::string& protocol,
                                            const TransportOptions& options) {
  if (protocol == "loopback") return std::make_unique<LoopbackEngine>(options);
  auto engine = UcxEngine::Create(options);
  if (!engine.ok()) return nullptr;
  return std::move(engine).value();
}

class AmTransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    node_ = OpenEngine(GetParam(), testing::UcxTestOptions(true));
    client_options_ = testing::UcxTestOptions(false);
    client_ = OpenEngine(GetParam(), client_options_);
    ASSERT_NE(node_, nullptr);
    ASSERT_NE(client_, nullptr);
    ASSERT_NE(node_->messages(), nullptr);
    ASSERT_NE(client_->messages(), nullptr);
    node().SetHandler(kEcho, [](AmRequest request, AmResponder responder) {
      responder.Reply("re:" + request.header + ":" + request.payload,
                      testing::TestPattern(std::stoul(request.header), 'e'));
    });
  }

  AmTransport& node() { return *node_->messages(); }
  AmTransport& client() { return *client_->messages(); }
  Result<AmReply> Echo(uint64_t size, AmReplyTarget into, int64_t timeout_ms = kTimeoutMs) {
    return client().CallInto(node_->endpoint(), kEcho, std::to_string(size), "pay", into,
                             timeout_ms);
  }

  TransportOptions client_options_;
  std::unique_ptr<TransportEngine> node_, client_;
};

TEST_P(AmTransportTest, ReplyDataLandsInTheCallersBuffer) {
  // Eager and rendezvous sizes on UCX; the guard bytes after the target stay.
  for (uint64_t size : {uint64_t{0}, uint64_t{100}, uint64_t{64} << 10, uint64_t{4} << 20}) {
    std::string buffer(size + 64, 'g');
    auto reply = Echo(size, AmReplyTarget{buffer.data(), size});
    ASSERT_TRUE(reply.ok()) << size << " " << ErrorCodeName(reply.error());
    EXPECT_EQ(reply->header, "re:" + std::to_string(size) + ":pay");
    EXPECT_TRUE(reply->data.empty());
    EXPECT_EQ(reply->data_size, size);
    EXPECT_TRUE(buffer.compare(0, size, testing::TestPattern(size, 'e')) == 0) << size;
    EXPECT_EQ(buffer.substr(size), std::string(64, 'g')) << size;
  }
}

TEST_P(AmTransportTest, WithoutATargetTheDataIsReturned) {
  for (uint64_t size : {uint64_t{0}, uint64_t{100}, uint64_t{1} << 20}) {
    auto reply = client().Call(node_->endpoint(), kEcho, std::to_string(size), "", kTimeoutMs);
    ASSERT_TRUE(reply.ok()) << size;
    EXPECT_EQ(reply->data, testing::TestPattern(size, 'e'));
    EXPECT_EQ(reply->data_size, size);
  }
}

TEST_P(AmTransportTest, ALargeRequestPayloadArrivesWhole) {
  node().SetHandler(8, [](AmRequest request, AmResponder responder) {
    responder.Reply(std::to_string(request.payload.size()), request.payload.substr(0, 10));
  });
  const std::string payload = testing::TestPattern(3 << 20, 'p');  // rendezvous on UCX
  auto reply = client().Call(node_->endpoint(), 8, "", payload, kTimeoutMs);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->header, std::to_string(payload.size()));
  EXPECT_EQ(reply->data, payload.substr(0, 10));
}

TEST_P(AmTransportTest, AHandlerMayReplyFromAnotherThread) {
  std::promise<std::thread> worker;  // hands the thread to the test thread
  node().SetHandler(9, [&worker](AmRequest, AmResponder responder) {
    worker.set_value(std::thread([responder = std::move(responder)]() mutable {
      responder.Reply("later", std::string(1 << 20, 'L'));
    }));
  });
  std::string buffer(1 << 20, 'g');
  auto reply = client().CallInto(node_->endpoint(), 9, "", "",
                                 AmReplyTarget{buffer.data(), buffer.size()}, kTimeoutMs);
  worker.get_future().get().join();
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->header, "later");
  EXPECT_EQ(buffer, std::string(1 << 20, 'L'));
}

TEST_P(AmTransportTest, AReplyLargerThanTheTargetWritesNothing) {
  for (uint64_t size : {uint64_t{100}, uint64_t{1} << 20}) {
    std::string buffer(size, 'g');
    EXPECT_EQ(Echo(size, AmReplyTarget{buffer.data(), size - 1}).error(),
              ErrorCode::BUFFER_OVERFLOW)
        << size;
    EXPECT_EQ(buffer, std::string(size, 'g')) << size;
  }
  // The connection still serves.
  std::string buffer(10, 'g');
  EXPECT_TRUE(Echo(10, AmReplyTarget{buffer.data(), 10}).ok());
}

TEST_P(AmTransportTest, AReplyHeaderThatCannotTravelIsInvalidParams) {
  const size_t too_long = node().max_header_size() + 100;
  std::atomic<bool> refused{false};
  node().SetHandler(20, [&](AmRequest, AmResponder responder) {
    refused = !responder.Reply(std::string(too_long, 'h'), "data");
  });
  // Answered at once: with the old behaviour the call waited for its deadline
  // and reported TRANSFER_FAIL.
  EXPECT_EQ(client().Call(node_->endpoint(), 20, "", "", kTimeoutMs).error(),
            ErrorCode::INVALID_PARAMS);
  // Reply() returns after the refusal went out: the caller may see it first.
  EXPECT_TRUE(testing::WaitFor([&] { return refused.load(); }, kTimeoutMs));
}

TEST_P(AmTransportTest, ErrorsAreTyped) {
  EXPECT_EQ(client().Call(node_->endpoint(), 99, "", "", kTimeoutMs).error(),
            ErrorCode::INVALID_PARAMS);  // no handler
  node().SetHandler(10, [](AmRequest, AmResponder r) { r.Fail(ErrorCode::OBJECT_NOT_FOUND); });
  node().SetHandler(11, [](AmRequest, AmResponder) {});  // dropped responder
  EXPECT_EQ(client().Call(node_->endpoint(), 10, "", "", kTimeoutMs).error(),
            ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client().Call(node_->endpoint(), 11, "", "", kTimeoutMs).error(),
            ErrorCode::INTERNAL_ERROR);
  node().SetHandler(10, nullptr);  // removed
  EXPECT_EQ(client().Call(node_->endpoint(), 10, "", "", kTimeoutMs).error(),
            ErrorCode::INVALID_PARAMS);
  const std::string huge(client().max_header_size() + 1, 'h');
  EXPECT_EQ(client().Call(node_->endpoint(), kEcho, huge, "", kTimeoutMs).error(),
            ErrorCode::INVALID_PARAMS);
}

TEST_P(AmTransportTest, ALateReplyNeverTouchesTheCallersBuffer) {
  std::atomic<int> handled{0};
  AmResponder kept;  // written on the handler's thread before `handled` is set
  node().SetHandler(12, [&](AmRequest, AmResponder responder) {
    kept = std::move(responder);
    handled.fetch_add(1, std::memory_order_release);
  });
  std::string buffer(1 << 20, 'g');
  EXPECT_EQ(client()
                .CallInto(node_->endpoint(), 12, "", "", AmReplyTarget{buffer.data(), buffer.size()},
                          200)
                .error(),
            ErrorCode::TRANSFER_FAIL);
  ASSERT_TRUE(testing::WaitFor([&] { return handled.load(std::memory_order_acquire) == 1; },
                               kTimeoutMs));
  const uint64_t dropped = client().dropped_messages();
  kept.Reply("late", std::string(buffer.size(), 'L'));
  // The late reply is dropped as unmatched and the buffer keeps its bytes.
  EXPECT_TRUE(testing::WaitFor([&] { return client().dropped_messages() > dropped; }, kTimeoutMs));
  EXPECT_EQ(buffer, std::string(buffer.size(), 'g'));
  EXPECT_TRUE(Echo(1, AmReplyTarget{buffer.data(), 1}).ok());  // and the transport still serves
}

TEST_P(AmTransportTest, AWrongTokenIsRejectedAndNotServed) {
  std::atomic<int> served{0};
  node().SetHandler(13, [&](AmRequest, AmResponder responder) {
    served.fetch_add(1);
    responder.Reply("", "");
  });
  TransportOptions options = testing::UcxTestOptions(false);
  options.cluster_token = "wrong";
  auto intruder = OpenEngine(GetParam(), options);
  ASSERT_NE(intruder, nullptr);
  EXPECT_EQ(intruder->messages()->Call(node_->endpoint(), 13, "", "", kTimeoutMs).error(),
            ErrorCode::ILLEGAL_CLIENT);
  ASSERT_TRUE(client().Call(node_->endpoint(), 13, "", "", kTimeoutMs).ok());
  EXPECT_EQ(served.load(), 1);
}

TEST_P(AmTransportTest, TheRequestCarriesTheClientsId) {
  node().SetHandler(14, [](AmRequest request, AmResponder responder) {
    responder.Reply(request.client_id.ToString(), "");
  });
  auto reply = client().Call(node_->endpoint(), 14, "", "", kTimeoutMs);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->header, client_options_.client_id.ToString());
}

TEST_P(AmTransportTest, ANodeThatIsGoneIsTransferFail) {
  ASSERT_TRUE(Echo(1, AmReplyTarget{}).ok());
  const std::string endpoint = node_->endpoint();
  node_.reset();
  EXPECT_EQ(client().Call(endpoint, kEcho, "1", "", 2000).error(), ErrorCode::TRANSFER_FAIL);
}

INSTANTIATE_TEST_SUITE_P(Implementations, AmTransportTest,
                         ::testing::Values("ucx", "loopback"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace shelfmark
