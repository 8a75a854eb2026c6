// Authentication of the master's RPC (master/connection_auth.h) over real
// Cap'n Proto on loopback TCP: MasterClient with and without tokens, raw
// capnp clients replaying a recorded handshake, a rogue master that cannot
// prove the token, every method against every role, tenant binding, and
// the limit on failed handshakes.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include <capnp/ez-rpc.h>
#include <capnp/schema.h>

#include "auth/proof.h"
#include "auth/token_table.h"
#include "common/clock.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "master/connection_auth.h"
#include "master/rpc_server.h"
#include "rpc/master_client.h"
#include "schemas/master.capnp.h"
#include "service/metrics.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

constexpr const char* kTokens =
    "# every role\n"
    "all-token-0123456789\n"
    "node node-token-0123456789\n"
    "client client-token-0123456789\n"
    "admin admin-token-0123456789\n"
    "client acme-token-0123456789 tenant=acme\n";

double Metric(const MetricsRegistry& m, const std::string& series) {
  return testing::MetricValue(m.RenderPrometheus(), series);
}

class RpcAuthTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  void Start(auth::HandshakeLimits limits) {
    if (server_) server_->Stop();
    dir_ = MakeTestDirectory(&clock_);
    metrics_ = std::make_unique<MetricsRegistry>();
    std::string error;
    auto table = auth::TokenTable::Parse(kTokens, &error);
    ASSERT_TRUE(table.ok()) << error;
    RpcServerOptions options;
    options.bind_address = "127.0.0.1";
    options.port = 0;
    options.tokens = *table;
    options.handshake_limits = limits;
    server_ = std::make_unique<RpcServer>(*dir_, metrics_.get(), options);
    auto port = server_->Start();
    ASSERT_TRUE(port.ok());
    port_ = *port;
  }

  MasterClientOptions Options(const std::string& token) {
    MasterClientOptions o;
    o.address = "127.0.0.1:" + std::to_string(port_);
    o.token = token;
    o.call_timeout_ms = 5'000;
    return o;
  }

  int OpenConnections() {
    int n = 0;
    for (int c : server_->OpenConnections()) n += c;
    return n;
  }

  ManualClock clock_;
  std::unique_ptr<Directory> dir_;
  std::unique_ptr<MetricsRegistry> metrics_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

TEST_F(RpcAuthTest, WithoutATokenEveryCallIsUnauthenticatedAndTheConnectionCloses) {
  MasterClient anonymous(Options(""));
  auto count = anonymous.CountKeys("", false);
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error(), ErrorCode::UNAUTHENTICATED);
  EXPECT_TRUE(testing::WaitFor([&] { return OpenConnections() == 0; }, 5'000))
      << "the master must close an unauthenticated connection after its answer";
  EXPECT_EQ(anonymous.Remove("", "k", true), ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(Metric(*metrics_, "shelfmark_master_auth_refused_calls_total{reason=\"unauthenticated\"}"),
            2);
}

TEST_F(RpcAuthTest, AWrongTokenIsRefusedAndARightOneServed) {
  MasterClient wrong(Options("not-a-token"));
  EXPECT_EQ(wrong.Connect(), ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.CountKeys("", false).error(), ErrorCode::UNAUTHENTICATED);
  MasterClient right(Options("all-token-0123456789"));
  ASSERT_EQ(right.Connect(), ErrorCode::OK);
  auto count = right.CountKeys("", false);
  ASSERT_TRUE(count.ok()) << ErrorCodeName(count.error());
  EXPECT_EQ(*count, 0u);
  EXPECT_EQ(Metric(*metrics_, "shelfmark_master_auth_handshakes_total{result=\"failed\"}"), 2);
  EXPECT_EQ(Metric(*metrics_, "shelfmark_master_auth_handshakes_total{result=\"ok\"}"), 1);
}

// A raw capnp client (its own event loop: no MasterClient may be alive on
// this thread meanwhile).
struct RawClient {
  explicit RawClient(uint16_t port)
      : ez("127.0.0.1", port), master(ez.getMain<wire::MasterService>()) {}
  std::string Challenge() {
    auto reply = master.authChallengeRequest().send().wait(ez.getWaitScope());
    EXPECT_TRUE(reply.getRequired());
    auto nonce = reply.getServerNonce();
    return std::string(reinterpret_cast<const char*>(nonce.begin()), nonce.size());
  }
  ErrorCode Authenticate(const std::string& client_nonce, const std::string& proof) {
    auto request = master.authenticateRequest();
    request.setClientNonce(capnp::Data::Reader(
        reinterpret_cast<const capnp::byte*>(client_nonce.data()), client_nonce.size()));
    request.setProof(
        capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(proof.data()), proof.size()));
    return ErrorCodeFromInt(request.send().wait(ez.getWaitScope()).getCode());
  }
  capnp::EzRpcClient ez;
  wire::MasterService::Client master;
};

TEST_F(RpcAuthTest, ARecordedHandshakeReplayedIsRefused) {
  const std::string client_nonce(auth::Bytes(auth::NewNonce()));
  std::string recorded_proof;
  {
    RawClient first(port_);
    const std::string server_nonce = first.Challenge();
    ASSERT_EQ(server_nonce.size(), auth::kNonceBytes);
    recorded_proof = std::string(auth::BytesOf(
        auth::Prove("client-token-0123456789", auth::kMasterClientLabel,
                    {server_nonce, client_nonce})));
    ASSERT_EQ(first.Authenticate(client_nonce, recorded_proof), ErrorCode::OK);
  }
  {
    // The same bytes on a new connection, after its own challenge.
    RawClient replay(port_);
    replay.Challenge();
    EXPECT_EQ(replay.Authenticate(client_nonce, recorded_proof), ErrorCode::UNAUTHENTICATED);
  }
  {
    // One try per challenge: a right proof after a failed try is too late.
    RawClient twice(port_);
    const std::string server_nonce = twice.Challenge();
    EXPECT_EQ(twice.Authenticate(client_nonce, "wrong"), ErrorCode::UNAUTHENTICATED);
  }
  {
    // No challenge at all.
    RawClient none(port_);
    EXPECT_EQ(none.Authenticate(client_nonce, recorded_proof), ErrorCode::UNAUTHENTICATED);
  }
}

// A master that answers the handshake without knowing the token.
class RogueMaster final : public wire::MasterService::Server {
 protected:
  kj::Promise<void> authChallenge(AuthChallengeContext ctx) override {
    auto out = ctx.getResults();
    out.setRequired(true);
    const auth::Nonce nonce = auth::NewNonce();
    out.setServerNonce(capnp::Data::Reader(nonce.data(), nonce.size()));
    return kj::READY_NOW;
  }
  kj::Promise<void> authenticate(AuthenticateContext ctx) override {
    auto out = ctx.getResults();
    const auth::Proof made_up{};
    out.setServerProof(capnp::Data::Reader(made_up.data(), made_up.size()));
    out.setRoles(auth::kAllRoles);
    return kj::READY_NOW;  // code 0: "OK"
  }
};

TEST(RpcAuthRogueTest, AClientRefusesAMasterThatCannotProveTheToken) {
  std::atomic<uint16_t> port{0};
  auto fulfiller = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>();
  std::atomic<bool> ready{false};
  std::thread rogue([&] {
    capnp::EzRpcServer server(kj::heap<RogueMaster>(), "127.0.0.1", 0);
    port = static_cast<uint16_t>(server.getPort().wait(server.getWaitScope()));
    auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
    *fulfiller = kj::mv(stop.fulfiller);
    ready = true;
    stop.promise.wait(server.getWaitScope());
  });
  ASSERT_TRUE(testing::WaitFor([&] { return ready.load(); }, 5'000));
  {
    MasterClientOptions o;
    o.address = "127.0.0.1:" + std::to_string(port.load());
    o.token = "client-token-0123456789";
    MasterClient client(o);
    EXPECT_EQ(client.Connect(), ErrorCode::UNAUTHENTICATED);
    EXPECT_EQ(client.PutEnd("", "k"), ErrorCode::UNAUTHENTICATED)
        << "no call may go to a master that did not prove the token";
  }
  (*fulfiller)->fulfill();
  rogue.join();
}

// ---- every method, every role ------------------------------------------------

template <typename T>
ErrorCode CodeOf(const Result<T>& r) {
  return r.ok() ? ErrorCode::OK : r.error();
}

struct Call {
  std::string method;  // the schema's name
  uint32_t roles;      // who may make it
  std::function<ErrorCode(MasterClient&, const std::string& tenant)> run;
};

std::vector<Call> EveryCall() {
  using namespace auth;
  const uint32_t kClient = kRoleClient | kRoleAdmin;
  const std::vector<std::string> keys = {"k1", "k2"};
  Segment segment = MakeTestSegment("s", 1 << 20, 1 << 20, "127.0.0.1:1");
  return {
      {"mountSegment", kRoleNode, [=](MasterClient& m, auto&) { return m.MountSegment(segment); }},
      {"unmountSegment", kRoleNode | kRoleAdmin,
       [](MasterClient& m, auto&) { return m.UnmountSegment(UUID::Generate()); }},
      {"drainSegment", kRoleNode | kRoleAdmin,
       [](MasterClient& m, auto&) { return m.DrainSegment(UUID::Generate()); }},
      {"ping", kRoleNode, [](MasterClient& m, auto&) { return CodeOf(m.Ping()); }},
      {"mountLocalDisk", kRoleNode,
       [](MasterClient& m, auto&) { return m.MountLocalDisk(true, "127.0.0.1:2"); }},
      {"putStart", kClient,
       [](MasterClient& m, auto& t) { return CodeOf(m.PutStart(t, "k", 64, PutConfig{})); }},
      {"putEnd", kClient, [](MasterClient& m, auto& t) { return m.PutEnd(t, "k"); }},
      {"putRevoke", kClient, [](MasterClient& m, auto& t) { return m.PutRevoke(t, "k"); }},
      {"getReplicaList", kAllRoles,
       [](MasterClient& m, auto& t) { return CodeOf(m.GetReplicaList(t, "k")); }},
      {"existKey", kAllRoles, [](MasterClient& m, auto& t) { return CodeOf(m.ExistKey(t, "k")); }},
      {"stat", kAllRoles, [](MasterClient& m, auto& t) { return CodeOf(m.Stat(t, "k")); }},
      {"listKeys", kClient,
       [](MasterClient& m, auto& t) { return CodeOf(m.ListKeys(t, "", 10)); }},
      {"countKeys", kClient,
       [](MasterClient& m, auto& t) { return CodeOf(m.CountKeys(t, false)); }},
      {"groupMembers", kAllRoles,
       [](MasterClient& m, auto& t) { return CodeOf(m.GroupMembers(t, "g")); }},
      {"remove", kClient, [](MasterClient& m, auto& t) { return m.Remove(t, "k", false); }},
      {"removeAll", kRoleAdmin,
       [](MasterClient& m, auto& t) { return CodeOf(m.RemoveAll(t, false, false)); }},
      {"removeByRegex", kClient,
       [](MasterClient& m, auto& t) { return CodeOf(m.RemoveByRegex(t, "^k", false)); }},
      {"batchPutStart", kClient,
       [=](MasterClient& m, auto& t) {
         return CodeOf(m.BatchPutStart(t, keys, {64, 64}, PutConfig{}));
       }},
      {"batchPutEnd", kClient,
       [=](MasterClient& m, auto& t) { return CodeOf(m.BatchPutEnd(t, keys)); }},
      {"batchPutRevoke", kClient,
       [=](MasterClient& m, auto& t) { return CodeOf(m.BatchPutRevoke(t, keys)); }},
      {"batchGetReplicaList", kAllRoles,
       [=](MasterClient& m, auto& t) { return CodeOf(m.BatchGetReplicaList(t, keys)); }},
      {"batchExistKey", kAllRoles,
       [=](MasterClient& m, auto& t) { return CodeOf(m.BatchExistKey(t, keys)); }},
      {"batchRemove", kClient,
       [=](MasterClient& m, auto& t) { return CodeOf(m.BatchRemove(t, keys, false)); }},
      {"offloadHeartbeat", kRoleNode,
       [](MasterClient& m, auto&) { return CodeOf(m.OffloadHeartbeat(4)); }},
      {"notifyOffloadSuccess", kRoleNode,
       [](MasterClient& m, auto&) { return CodeOf(m.NotifyOffloadSuccess({})); }},
      {"evictDiskReplica", kRoleNode,
       [](MasterClient& m, auto& t) { return m.EvictDiskReplica(t, "k"); }},
      {"notifyOffloadFailure", kRoleNode,
       [](MasterClient& m, auto& t) {
         return CodeOf(m.NotifyOffloadFailure({{t, "k", ErrorCode::FILE_WRITE_FAIL}}));
       }},
      {"promoteStart", kRoleNode,
       [](MasterClient& m, auto& t) { return CodeOf(m.PromoteStart({{t, "k", 64}})); }},
      {"promoteEnd", kRoleNode,
       [](MasterClient& m, auto& t) { return CodeOf(m.PromoteEnd({{t, "k", false}})); }},
      {"createTask", kClient,
       [](MasterClient& m, auto& t) {
         return CodeOf(m.CreateTask(t, {TaskType::REPLICA_COPY, "k", "", {"s"}}));
       }},
      {"queryTask", kClient,
       [](MasterClient& m, auto& t) { return CodeOf(m.QueryTask(t, UUID::Generate())); }},
      {"taskStart", kClient,
       [](MasterClient& m, auto& t) { return CodeOf(m.TaskStart(t, UUID::Generate())); }},
      {"taskEnd", kClient,
       [](MasterClient& m, auto& t) { return m.TaskEnd(t, UUID::Generate(), ErrorCode::OK); }},
  };
}

TEST_F(RpcAuthTest, TheTableCoversEveryMethodOfTheSchema) {
  std::set<std::string> covered;
  for (const Call& c : EveryCall()) covered.insert(c.method);
  for (auto method : capnp::Schema::from<wire::MasterService>().getMethods()) {
    std::string name = method.getProto().getName();
    if (name == "authChallenge" || name == "authenticate") continue;
    EXPECT_TRUE(covered.count(name)) << name << " has no row in EveryCall()";
  }
}

TEST_F(RpcAuthTest, EachRoleIsRefusedEveryCallOutsideIt) {
  const std::pair<const char*, uint32_t> tokens[] = {{"node-token-0123456789", auth::kRoleNode},
                                                     {"client-token-0123456789", auth::kRoleClient},
                                                     {"admin-token-0123456789", auth::kRoleAdmin},
                                                     {"all-token-0123456789", auth::kAllRoles}};
  for (const auto& [token, roles] : tokens) {
    MasterClient m(Options(token));
    ASSERT_EQ(m.Connect(), ErrorCode::OK) << token;
    for (const Call& c : EveryCall()) {
      ErrorCode code = c.run(m, "t1");
      if ((roles & c.roles) != 0) {
        EXPECT_NE(code, ErrorCode::PERMISSION_DENIED) << token << " " << c.method;
        EXPECT_NE(code, ErrorCode::UNAUTHENTICATED) << token << " " << c.method;
      } else {
        EXPECT_EQ(code, ErrorCode::PERMISSION_DENIED) << token << " " << c.method;
      }
    }
  }
}

TEST_F(RpcAuthTest, ForceAndAllTenantsNeedAnAdmin) {
  MasterClient client(Options("client-token-0123456789"));
  MasterClient admin(Options("admin-token-0123456789"));
  EXPECT_EQ(client.Remove("t", "k", /*force=*/true), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(CodeOf(client.BatchRemove("t", {"k"}, /*force=*/true)), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(CodeOf(client.CountKeys("t", /*all_tenants=*/true)), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(CodeOf(client.RemoveByRegex("t", "k", /*force=*/true)), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(CodeOf(client.RemoveByRegex("t", "k", /*force=*/false)), ErrorCode::OK);
  EXPECT_EQ(CodeOf(admin.RemoveByRegex("t", "k", true)), ErrorCode::OK);
  EXPECT_EQ(admin.Remove("t", "k", true), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(CodeOf(admin.CountKeys("t", true)), ErrorCode::OK);
  EXPECT_EQ(CodeOf(admin.RemoveAll("t", true, true)), ErrorCode::OK);
}

TEST_F(RpcAuthTest, ATenantBoundTokenStaysInItsTenant) {
  MasterClient writer(Options("client-token-0123456789"));
  auto replicas = writer.PutStart("other", "secret", 64, PutConfig{});
  EXPECT_NE(CodeOf(replicas), ErrorCode::PERMISSION_DENIED);  // an unbound client may
  MasterClient acme(Options("acme-token-0123456789"));
  for (const Call& c : EveryCall()) {
    if ((c.roles & auth::kRoleClient) == 0) continue;
    EXPECT_EQ(c.run(acme, "other"), ErrorCode::PERMISSION_DENIED) << c.method;
    EXPECT_NE(c.run(acme, "acme"), ErrorCode::PERMISSION_DENIED) << c.method;
  }
  EXPECT_EQ(CodeOf(acme.CountKeys("acme", /*all_tenants=*/true)), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(CodeOf(acme.ListKeys("", "", 10)), ErrorCode::PERMISSION_DENIED)
      << "the empty tenant is the default tenant, not acme";
}

TEST_F(RpcAuthTest, AHandshakeFloodIsLimitedWhileAuthenticatedClientsAreServed) {
  Start({/*burst=*/3, /*per_second=*/0.001, /*max_peers=*/16});
  MasterClient served(Options("client-token-0123456789"));
  ASSERT_EQ(served.Connect(), ErrorCode::OK);
  int limited = 0;
  for (int i = 0; i < 20; ++i) {
    MasterClient flood(Options("guess-" + std::to_string(i)));
    ErrorCode code = flood.Connect();
    ASSERT_TRUE(code == ErrorCode::UNAUTHENTICATED || code == ErrorCode::RATE_LIMITED)
        << ErrorCodeName(code);
    if (code == ErrorCode::RATE_LIMITED) ++limited;
    ASSERT_TRUE(CodeOf(served.CountKeys("", false)) == ErrorCode::OK) << "at attempt " << i;
  }
  EXPECT_EQ(limited, 17) << "3 failures allowed, the rest refused unchecked";
  EXPECT_EQ(Metric(*metrics_, "shelfmark_master_auth_handshakes_total{result=\"rate_limited\"}"),
            17);
  // While the peer's budget is spent even a right token waits (same address).
  MasterClient late(Options("client-token-0123456789"));
  EXPECT_EQ(late.Connect(), ErrorCode::RATE_LIMITED);
}

TEST(RpcAuthOpenTest, AMasterWithoutTokensServesEveryoneAndClientsWithTokensToo) {
  ManualClock clock;
  auto dir = MakeTestDirectory(&clock);
  RpcServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = 0;
  RpcServer server(*dir, nullptr, options);
  auto port = server.Start();
  ASSERT_TRUE(port.ok());
  for (const char* token : {"", "some-token"}) {
    MasterClientOptions o;
    o.address = "127.0.0.1:" + std::to_string(*port);
    o.token = token;
    MasterClient m(o);
    EXPECT_EQ(CodeOf(m.RemoveAll("", true, true)), ErrorCode::OK) << token;
  }
}

}  // namespace
}  // namespace shelfmark
