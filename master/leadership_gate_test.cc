// LeadershipGate alone, and through a real RpcServer on loopback: a closed
// gate answers NOT_LEADER on Cap'n Proto and on the lookup channel (the
// handshake still answers); an open, fenced gate serves reads and Ping and
// refuses mutations; the method table's kinds are what docs/ha.md says.
#include "master/leadership_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>

#include "master/rpc_server_test_util.h"
#include "master/service_shared.h"
#include "rpc/lookup_client.h"

namespace shelfmark {
namespace {

using master_internal::kMethodKinds;
using master_internal::kMethodNames;

TEST(LeadershipGate, WithoutHaAlwaysOpen) {
  LeadershipGate gate;
  EXPECT_TRUE(gate.is_open());
  EXPECT_EQ(gate.Admit(CallKind::kMutation), ErrorCode::OK);
  gate.Close();
  EXPECT_EQ(gate.Admit(CallKind::kRead), ErrorCode::OK);
  EXPECT_EQ(gate.not_leader_refusals(), 0u);
}

TEST(LeadershipGate, ClosedRefusesAllButTheHandshake) {
  LeadershipGate gate([] { return true; });
  EXPECT_FALSE(gate.is_open());
  for (CallKind k : {CallKind::kRead, CallKind::kLiveness, CallKind::kMutation}) {
    EXPECT_EQ(gate.Admit(k), ErrorCode::NOT_LEADER);
  }
  EXPECT_EQ(gate.Admit(CallKind::kHandshake), ErrorCode::OK);
  EXPECT_EQ(gate.not_leader_refusals(), 3u);
  EXPECT_EQ(gate.fenced_refusals(), 0u);
}

TEST(LeadershipGate, FencedRefusesOnlyMutationsAndAsksOncePerMutation) {
  std::atomic<bool> sure{false};
  std::atomic<int> asked{0};
  LeadershipGate gate([&] {
    asked.fetch_add(1);
    return sure.load();
  });
  gate.Open();
  EXPECT_EQ(gate.Admit(CallKind::kRead), ErrorCode::OK);
  EXPECT_EQ(gate.Admit(CallKind::kLiveness), ErrorCode::OK);
  EXPECT_EQ(asked.load(), 0);
  EXPECT_EQ(gate.Admit(CallKind::kMutation), ErrorCode::NOT_LEADER);
  EXPECT_EQ(asked.load(), 1);
  EXPECT_EQ(gate.Admit(CallKind::kMutation), ErrorCode::NOT_LEADER);
  EXPECT_EQ(asked.load(), 2);
  EXPECT_EQ(gate.fenced_refusals(), 2u);
  sure = true;
  EXPECT_EQ(gate.Admit(CallKind::kMutation), ErrorCode::OK);
  gate.Close();
  EXPECT_EQ(gate.Admit(CallKind::kRead), ErrorCode::NOT_LEADER);
  EXPECT_EQ(gate.not_leader_refusals(), 1u);
}

TEST(LeadershipGate, MethodKindsAreTheDocumentedOnes) {
  const std::set<std::string> reads = {"GetReplicaList", "ExistKey", "Stat", "ListKeys",
                                       "CountKeys", "GroupMembers", "BatchGetReplicaList",
                                       "BatchExistKey", "QueryTask"};
  for (int i = 0; i < master_internal::kMethodCount; ++i) {
    const std::string name = kMethodNames[i];
    CallKind expected = CallKind::kMutation;
    if (reads.count(name)) expected = CallKind::kRead;
    if (name == "Ping") expected = CallKind::kLiveness;
    if (name == "AuthChallenge" || name == "Authenticate") expected = CallKind::kHandshake;
    EXPECT_EQ(kMethodKinds[i], expected) << name;
  }
}

// A real server whose gate the test drives.
class GatedServerTest : public RpcServerFixture {
 protected:
  void Configure(RpcServerOptions& options) override { options.gate = &gate_; }

  // Mounts a segment and puts "k" while the gate is open.
  void PutWhileOpen(MasterClient& client) {
    gate_.Open();
    ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
    Put(client, "k");
  }

  std::atomic<bool> sure_{true};
  LeadershipGate gate_{[this] { return sure_.load(); }};
};

TEST_F(GatedServerTest, ClosedAnswersNotLeaderOnBothProtocols) {
  MasterClient client(ClientOptions());
  PutWhileOpen(client);
  gate_.Close();
  auto capnp_get = client.ExistKey("", "k");
  ASSERT_FALSE(capnp_get.ok());
  EXPECT_EQ(capnp_get.error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(client.Remove("", "k"), ErrorCode::NOT_LEADER);
  EXPECT_FALSE(client.Ping().ok());
  LookupClient lookup({"127.0.0.1:" + std::to_string(port_), "", 5000});
  auto looked_up = lookup.GetReplicaList("", "k");
  ASSERT_FALSE(looked_up.ok());
  EXPECT_EQ(looked_up.error(), ErrorCode::NOT_LEADER);
  auto batch = lookup.BatchGetReplicaList("", {"k"});
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.error(), ErrorCode::NOT_LEADER);
  EXPECT_GE(gate_.not_leader_refusals(), 5u);
  EXPECT_GE(Metric("shelfmark_master_rpc_failures_total", "GetReplicaList"), 1);
  gate_.Open();
  EXPECT_TRUE(lookup.GetReplicaList("", "k").ok());
  EXPECT_EQ(client.Remove("", "k", /*force=*/true), ErrorCode::OK);  // it has a read lease
}

TEST_F(GatedServerTest, FencedServesReadsAndRefusesMutations) {
  MasterClient client(ClientOptions());
  PutWhileOpen(client);
  sure_ = false;
  EXPECT_TRUE(client.ExistKey("", "k").ok());
  EXPECT_TRUE(client.Ping().ok());
  LookupClient lookup({"127.0.0.1:" + std::to_string(port_), "", 5000});
  EXPECT_TRUE(lookup.GetReplicaList("", "k").ok());
  EXPECT_EQ(client.Remove("", "k"), ErrorCode::NOT_LEADER);
  auto started = client.PutStart("", "k2", 1024, {});
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(gate_.fenced_refusals(), 2u);
  sure_ = true;
  EXPECT_EQ(client.Remove("", "k", /*force=*/true), ErrorCode::OK);  // it has a read lease
}

}  // namespace
}  // namespace shelfmark
