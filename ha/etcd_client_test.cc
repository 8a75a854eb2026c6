// EtcdClient against a real etcd (testing/etcd_process.h) and against a
// fake server that answers garbage.
#include "ha/etcd_client.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "testing/etcd_process.h"
#include "testing/process_util.h"

namespace shelfmark::ha {
namespace {

using testing::EtcdProcess;

EtcdClientOptions Options(const std::string& endpoints) {
  EtcdClientOptions o;
  o.endpoints = *ParseEtcdEndpoints(endpoints);
  return o;
}

class EtcdClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    etcd_ = new EtcdProcess();
    ASSERT_TRUE(etcd_->Start()) << etcd_->StartFailure();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    if (etcd_ == nullptr || !etcd_->running()) GTEST_SKIP() << "etcd did not start";
  }
  static EtcdProcess* etcd_;
};
EtcdProcess* EtcdClientTest::etcd_ = nullptr;

TEST_F(EtcdClientTest, PutGetWithBinaryKeysAndValues) {
  EtcdClient etcd(Options(etcd_->endpoint()));
  const std::string key("k\0\xff/x", 5), value("v\0\n\"", 4);
  auto absent = etcd.Get(key);
  ASSERT_TRUE(absent.ok()) << etcd.last_error();
  EXPECT_FALSE(absent->has_value());
  ASSERT_EQ(etcd.Put(key, value), ErrorCode::OK) << etcd.last_error();
  auto got = etcd.Get(key);
  ASSERT_TRUE(got.ok() && got->has_value()) << etcd.last_error();
  EXPECT_EQ((*got)->key, key);
  EXPECT_EQ((*got)->value, value);
  EXPECT_GT((*got)->create_revision, 0);
  EXPECT_EQ((*got)->lease, 0);
}

TEST_F(EtcdClientTest, LeaseGrantKeepAliveRevoke) {
  EtcdClient etcd(Options(etcd_->endpoint()));
  auto lease = etcd.LeaseGrant(5);
  ASSERT_TRUE(lease.ok()) << etcd.last_error();
  EXPECT_NE(lease->id, 0);
  EXPECT_GE(lease->ttl_s, 5);
  auto ttl = etcd.LeaseKeepAliveOnce(lease->id);
  ASSERT_TRUE(ttl.ok()) << etcd.last_error();
  EXPECT_EQ(*ttl, lease->ttl_s);
  // A key under the lease goes with it.
  ASSERT_EQ(etcd.Put("leased", "v", lease->id), ErrorCode::OK) << etcd.last_error();
  EXPECT_EQ((*etcd.Get("leased"))->lease, lease->id);
  ASSERT_EQ(etcd.LeaseRevoke(lease->id), ErrorCode::OK) << etcd.last_error();
  EXPECT_FALSE(etcd.Get("leased")->has_value());
  // A lease etcd no longer knows is a typed error, for both calls.
  EXPECT_EQ(etcd.LeaseKeepAliveOnce(lease->id).error(), ErrorCode::ETCD_KEY_NOT_EXIST);
  EXPECT_NE(etcd.last_error().find("lease"), std::string::npos) << etcd.last_error();
  EXPECT_EQ(etcd.LeaseRevoke(lease->id), ErrorCode::ETCD_KEY_NOT_EXIST) << etcd.last_error();
}

TEST_F(EtcdClientTest, CreateIfAbsentAndDeleteIfCreatedAt) {
  EtcdClient etcd(Options(etcd_->endpoint()));
  auto lease = etcd.LeaseGrant(10);
  ASSERT_TRUE(lease.ok()) << etcd.last_error();
  auto won = etcd.CreateIfAbsent("cia", "me", lease->id);
  ASSERT_TRUE(won.ok()) << etcd.last_error();
  EXPECT_TRUE(won->created);
  auto lost = etcd.CreateIfAbsent("cia", "other", 0);
  ASSERT_TRUE(lost.ok()) << etcd.last_error();
  EXPECT_FALSE(lost->created);
  EXPECT_EQ(lost->holder.value, "me");
  EXPECT_EQ(lost->holder.create_revision, won->revision);
  EXPECT_EQ(lost->holder.lease, lease->id);
  EXPECT_EQ(etcd.DeleteIfCreatedAt("cia", won->revision + 1000), ErrorCode::ETCD_TRANSACTION_FAIL);
  EXPECT_EQ(etcd.DeleteIfCreatedAt("cia", won->revision), ErrorCode::OK) << etcd.last_error();
  EXPECT_FALSE(etcd.Get("cia")->has_value());
  EXPECT_EQ(etcd.DeleteIfCreatedAt("cia", won->revision), ErrorCode::ETCD_TRANSACTION_FAIL);
  // Re-created: a higher create_revision.
  auto again = etcd.CreateIfAbsent("cia", "me", 0);
  ASSERT_TRUE(again.ok() && again->created);
  EXPECT_GT(again->revision, won->revision);
  (void)etcd.LeaseRevoke(lease->id);
}

TEST_F(EtcdClientTest, CreateIfAbsentRaceHasExactlyOneWinner) {
  EtcdClient a(Options(etcd_->endpoint())), b(Options(etcd_->endpoint()));
  constexpr int kKeys = 20;
  std::vector<Result<EtcdCreateResult>> ra(kKeys, ErrorCode::INTERNAL_ERROR);
  std::vector<Result<EtcdCreateResult>> rb(kKeys, ErrorCode::INTERNAL_ERROR);
  std::atomic<bool> go{false};
  auto run = [&](EtcdClient* c, std::vector<Result<EtcdCreateResult>>* out, const char* me) {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < kKeys; ++i) (*out)[i] = c->CreateIfAbsent("race/" + std::to_string(i), me, 0);
  };
  std::thread ta(run, &a, &ra, "a"), tb(run, &b, &rb, "b");
  go = true;
  ta.join();
  tb.join();
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(ra[i].ok() && rb[i].ok()) << i;
    ASSERT_NE(ra[i]->created, rb[i]->created) << i;
    const EtcdCreateResult& winner = ra[i]->created ? *ra[i] : *rb[i];
    const EtcdCreateResult& loser = ra[i]->created ? *rb[i] : *ra[i];
    EXPECT_EQ(loser.holder.value, ra[i]->created ? "a" : "b") << i;
    EXPECT_EQ(loser.holder.create_revision, winner.revision) << i;
  }
}

TEST_F(EtcdClientTest, FailsOverFromADeadEndpoint) {
  const uint16_t dead = testing::FreePort();
  EtcdClient etcd(Options("127.0.0.1:" + std::to_string(dead) + ";" + etcd_->endpoint()));
  EXPECT_EQ(etcd.Put("failover", "v"), ErrorCode::OK) << etcd.last_error();
  auto got = etcd.Get("failover");
  ASSERT_TRUE(got.ok() && got->has_value()) << etcd.last_error();
  EXPECT_EQ((*got)->value, "v");
}

TEST(EtcdClient, UnreachableEndpointsGiveATypedErrorNamingThem) {
  const uint16_t p1 = testing::FreePort(), p2 = testing::FreePort();
  const std::string e1 = "127.0.0.1:" + std::to_string(p1), e2 = "127.0.0.1:" + std::to_string(p2);
  EtcdClient etcd(Options(e1 + "," + e2));
  EXPECT_EQ(etcd.Get("k").error(), ErrorCode::ETCD_OPERATION_ERROR);
  const std::string error = etcd.last_error();
  EXPECT_NE(error.find("ETCD_OPERATION_ERROR"), std::string::npos) << error;
  EXPECT_NE(error.find("/v3/kv/range"), std::string::npos) << error;
  EXPECT_NE(error.find(e1), std::string::npos) << error;
  EXPECT_NE(error.find(e2), std::string::npos) << error;
  EXPECT_EQ(etcd.LeaseGrant(2).error(), ErrorCode::ETCD_OPERATION_ERROR);
}

// A server on a free loopback port that answers every connection with
// `reply` (any bytes) and closes it.
class FakeServer {
 public:
  explicit FakeServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = testing::ListenLoopback(16, &port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve() {
    while (!stop_ && fd_ >= 0) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int conn = accept(fd_, nullptr, nullptr);
      if (conn < 0) continue;
      char buf[4096];
      pollfd c{conn, POLLIN, 0};
      if (poll(&c, 1, 1000) > 0) (void)!read(conn, buf, sizeof(buf));  // the request
      (void)!write(conn, reply_.data(), reply_.size());
      close(conn);
    }
  }
  const std::string reply_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string Http(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

TEST(EtcdClient, HostileRepliesGiveTypedErrorsAndNoCrash) {
  struct Case {
    std::string reply;
    ErrorCode expected;
  };
  const std::vector<Case> cases = {
      {std::string("\0\xff garbage, not HTTP\r\n\r\n", 24), ErrorCode::ETCD_OPERATION_ERROR},
      {"", ErrorCode::ETCD_OPERATION_ERROR},  // closed without a word
      {Http(200, "{{{{"), ErrorCode::DATA_CORRUPTED},
      {Http(200, std::string(100'000, '[')), ErrorCode::DATA_CORRUPTED},
      {Http(200, R"({"kvs":[{"key":"!!!"}]})"), ErrorCode::DATA_CORRUPTED},
      {Http(200, R"({"kvs":"no"})"), ErrorCode::DATA_CORRUPTED},
      {Http(200, std::string(2 << 20, ' ')), ErrorCode::ETCD_OPERATION_ERROR},  // too large
      {Http(404, "<html>not etcd</html>"), ErrorCode::ETCD_OPERATION_ERROR},
      {Http(400, R"({"error":"bad","code":3})"), ErrorCode::ETCD_OPERATION_ERROR},
      {Http(503, "busy"), ErrorCode::ETCD_OPERATION_ERROR},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n{}", ErrorCode::ETCD_OPERATION_ERROR},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    FakeServer server(cases[i].reply);
    EtcdClientOptions o = Options(server.endpoint());
    o.request_timeout_ms = 2000;
    EtcdClient etcd(o);
    EXPECT_EQ(etcd.Get("k").error(), cases[i].expected) << i << ": " << etcd.last_error();
    EXPECT_NE(etcd.last_error().find(server.endpoint()), std::string::npos)
        << i << ": " << etcd.last_error();
    EXPECT_FALSE(etcd.LeaseKeepAliveOnce(1).ok()) << i;
    EXPECT_FALSE(etcd.CreateIfAbsent("k", "v", 0).ok()) << i;
  }
}

}  // namespace
}  // namespace shelfmark::ha
