// MasterClient with an etcd:// address against a real etcd and two real
// RpcServers (each over its own Directory, as two masters): it finds the
// leader published in etcd, follows a new one when the old one goes away
// (read-only calls retried transparently, a mutation that may have reached
// the dead one answered RPC_FAIL), and reports RPC_FAIL when no leader is
// published. Each server answers through a LeadershipGate the test drives
// (open unless a test closes it): a closed gate answers NOT_LEADER naming
// the leader hint the test set, which clients follow without etcd (docs/ha.md,
// "NOT_LEADER names the leader").
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/clock.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "ha/etcd_client.h"
#include "ha/leader_key.h"
#include "master/leadership_gate.h"
#include "master/rpc_server.h"
#include "rpc/master_client.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"

namespace shelfmark {
namespace {

constexpr const char* kCluster = "follow-test";

// One master: a Directory served by an RpcServer on a loopback port that
// stays the same across Stop and Start.
struct Master {
  Master() : dir(MakeTestDirectory(&clock)) { gate.Open(); }
  void Start() {
    RpcServerOptions o;
    o.bind_address = "127.0.0.1";
    o.port = port;
    o.gate = &gate;
    server = std::make_unique<RpcServer>(*dir, nullptr, o);
    auto bound = server->Start();
    ASSERT_TRUE(bound.ok()) << ErrorCodeName(bound.error());
    port = *bound;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  // Closes the gate: every call answers NOT_LEADER naming `leader`.
  void Refuse(const std::string& leader) {
    gate.SetLeaderHint(leader);
    gate.Close();
  }

  ManualClock clock;
  LeadershipGate gate{[] { return true; }};
  std::unique_ptr<Directory> dir;
  std::unique_ptr<RpcServer> server;
  uint16_t port = 0;
};

class LeaderFollowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.Start()) << etcd_.StartFailure();
    etcd_client_ = std::make_unique<ha::EtcdClient>(
        ha::EtcdClientOptions{{{"127.0.0.1", etcd_.client_port()}}});
    a_.Start();
    b_.Start();
  }

  void Publish(const Master& m) {
    ASSERT_EQ(etcd_client_->Put(ha::LeaderKey(kCluster), m.address()), ErrorCode::OK);
  }

  MasterClientOptions Options(const std::string& cluster = kCluster) {
    MasterClientOptions o;
    o.address = "etcd://" + etcd_.endpoint();
    o.cluster_id = cluster;
    o.call_timeout_ms = 30'000;  // a bound for slow machines, not a measurement
    return o;
  }

  // Each segment its own range and endpoint, so no two overlap.
  Segment SegmentNamed(const std::string& name) {
    ++segments_;
    return MakeTestSegment(name, 0x10000000ull * segments_, 64 << 20,
                           "10.0.0.1:" + std::to_string(1000 + segments_));
  }

  static void Put(MasterClient& c, const std::string& key) {
    auto started = c.PutStart("", key, 1024, PutConfig{});
    ASSERT_TRUE(started.ok()) << key << ": " << ErrorCodeName(started.error());
    ASSERT_EQ(c.PutEnd("", key), ErrorCode::OK) << key;
  }

  testing::EtcdProcess etcd_;
  std::unique_ptr<ha::EtcdClient> etcd_client_;
  Master a_;
  Master b_;
  int segments_ = 0;
};

TEST_F(LeaderFollowTest, PutsAndGetsThroughThePublishedLeader) {
  Publish(a_);
  MasterClient c(Options());
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-a")), ErrorCode::OK);
  EXPECT_EQ(c.master_address(), a_.address());
  Put(c, "k1");
  auto replicas = c.GetReplicaList("", "k1");  // the lookup channel, at A
  ASSERT_TRUE(replicas.ok()) << ErrorCodeName(replicas.error());
  EXPECT_EQ(replicas->replicas.size(), 1u);
  EXPECT_EQ(*c.ExistKey("", "k1"), true);
}

TEST_F(LeaderFollowTest, ReadsFollowANewLeaderTransparently) {
  Publish(a_);
  MasterClient c(Options());
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-a")), ErrorCode::OK);
  Put(c, "k1");
  ASSERT_TRUE(c.GetReplicaList("", "k1").ok());

  Publish(b_);
  a_.server->Stop();
  // Read-only: retried on B (which never saw k1) within the call.
  EXPECT_EQ(c.GetReplicaList("", "k1").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(c.master_address(), b_.address());
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-b")), ErrorCode::OK);
  Put(c, "k2");
  EXPECT_TRUE(c.GetReplicaList("", "k2").ok());  // the lookup channel, now at B
  EXPECT_EQ(*c.ExistKey("", "k1"), false);
}

TEST_F(LeaderFollowTest, AMutationOnTheDeadLeaderFailsAndTheNextOneFollows) {
  Publish(a_);
  MasterClient c(Options());
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-a")), ErrorCode::OK);

  Publish(b_);
  a_.server->Stop();
  // A mutation sent on the dead connection may have arrived: RPC_FAIL. If
  // the client noticed the drop before sending, nothing was sent and it
  // follows to B at once. Either way the next mutation reaches B.
  const ErrorCode first = c.MountSegment(SegmentNamed("seg-b1"));
  EXPECT_TRUE(first == ErrorCode::RPC_FAIL || first == ErrorCode::OK) << ErrorCodeName(first);
  EXPECT_EQ(c.MountSegment(SegmentNamed("seg-b2")), ErrorCode::OK);
  EXPECT_EQ(c.master_address(), b_.address());
  Put(c, "on-b");
}

// A's gate closes naming B, and etcd dies: only the hint can take the
// clients to B. A lookup (its channel answers NOT_LEADER naming nobody; the
// Cap'n Proto call to A names B) and a mutation both reach B. Before
// NOT_LEADER named the leader, both asked etcd and failed RPC_FAIL.
TEST_F(LeaderFollowTest, ANotLeaderAnswerNamingTheLeaderIsFollowedWithoutEtcd) {
  Publish(a_);
  MasterClient reader(Options());
  MasterClient writer(Options());
  ASSERT_EQ(writer.MountSegment(SegmentNamed("seg-a")), ErrorCode::OK);
  Put(writer, "on-a");
  ASSERT_TRUE(reader.GetReplicaList("", "on-a").ok());  // the lookup channel, at A
  ASSERT_EQ(reader.master_address(), a_.address());

  a_.Refuse(b_.address());
  ASSERT_TRUE(etcd_.Kill());
  // B never saw "on-a": its answer, not A's refusal.
  EXPECT_EQ(reader.GetReplicaList("", "on-a").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(reader.master_address(), b_.address());
  ASSERT_EQ(writer.MountSegment(SegmentNamed("seg-b")), ErrorCode::OK);
  EXPECT_EQ(writer.master_address(), b_.address());
  Put(writer, "on-b");
  auto replicas = reader.GetReplicaList("", "on-b");  // the lookup channel, now at B
  ASSERT_TRUE(replicas.ok()) << ErrorCodeName(replicas.error());
  EXPECT_EQ(replicas->replicas.size(), 1u);
  // A refused the lookup on both protocols and the mount: 3 refusals, no more.
  EXPECT_EQ(a_.gate.not_leader_refusals(), 3u);
}

// A hint the client cannot use sends it back to etcd: a master that names
// nobody (as one before hints), and one naming an address where nothing
// listens (a stale view). It guards the way back; a client that ignores
// hints passes it too.
TEST_F(LeaderFollowTest, WithoutAUsableHintTheClientAsksEtcd) {
  Publish(a_);
  MasterClient c(Options());
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-a")), ErrorCode::OK);
  Publish(b_);
  a_.Refuse("");
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-b")), ErrorCode::OK);
  EXPECT_EQ(c.master_address(), b_.address());

  Publish(a_);
  a_.gate.Open();
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-b2")), ErrorCode::OK) << "B still open";
  b_.Refuse("127.0.0.1:" + std::to_string(testing::FreePort()));
  ASSERT_EQ(c.MountSegment(SegmentNamed("seg-a2")), ErrorCode::OK);
  EXPECT_EQ(c.master_address(), a_.address());
  EXPECT_EQ(b_.gate.not_leader_refusals(), 1u);
}

// A host:port client talks to that master alone unless it asks to follow
// hints; then it goes where the hint names, and back to its own address
// when the named master refuses it.
TEST_F(LeaderFollowTest, AFixedAddressFollowsHintsOnlyWhenAsked) {
  a_.Refuse(b_.address());
  MasterClientOptions o = Options();
  o.address = a_.address();
  MasterClient fixed(o);
  EXPECT_EQ(fixed.CountKeys("", true).error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(fixed.master_address(), a_.address());

  o.follow_leader_hints = true;
  MasterClient following(o);
  ASSERT_EQ(following.MountSegment(SegmentNamed("seg-b")), ErrorCode::OK);
  EXPECT_EQ(following.master_address(), b_.address());
  Put(following, "on-b");
  EXPECT_TRUE(following.GetReplicaList("", "on-b").ok());

  // Leadership moves back to A; B names A, but a hint is one hop: the
  // client goes back to its configured address, which leads.
  a_.gate.Open();
  b_.Refuse(a_.address());
  EXPECT_EQ(following.GetReplicaList("", "on-b").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(following.master_address(), a_.address());
}

TEST_F(LeaderFollowTest, NoLeaderPublishedIsRpcFail) {
  MasterClientOptions o = Options("nobody-leads");
  o.call_timeout_ms = 200;
  MasterClient c(o);
  EXPECT_EQ(c.Connect(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(c.CountKeys("", true).error(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(c.master_address(), "");
  EXPECT_EQ(c.cluster_id(), "nobody-leads");
}

TEST_F(LeaderFollowTest, BadEtcdAddressOrClusterIdIsInvalidParams) {
  MasterClientOptions o = Options("a/b");
  EXPECT_EQ(MasterClient(o).Connect(), ErrorCode::INVALID_PARAMS);
  o = Options();
  o.address = "etcd://";
  EXPECT_EQ(MasterClient(o).CountKeys("", true).error(), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark
