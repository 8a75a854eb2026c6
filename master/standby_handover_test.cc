// The master's RPC port hands hot standbys' connections (the replication
// tag) to replication: a real ReplicationStandby copies the directory
// through the port while Cap'n Proto and lookup channel clients are served
// beside it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "master/rpc_server_test_util.h"
#include "replication/replication_leader.h"
#include "replication/replication_standby.h"
#include "rpc/lookup_client.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

class StandbyHandoverTest : public RpcServerFixture {
 protected:
  void Configure(RpcServerOptions& options) override {
    ReplicationLeaderOptions o;
    o.cluster_id = "c1";
    leader_ = std::make_unique<ReplicationLeader>(*dir_, o);
    leader_->Start();
    options.on_standby = [this](int fd, std::string first) { leader_->Adopt(fd, first); };
  }
  void TearDown() override {
    RpcServerFixture::TearDown();
    leader_->Stop();
  }
  std::unique_ptr<ReplicationLeader> leader_;
};

TEST_F(StandbyHandoverTest, AStandbyCopiesThroughTheRpcPort) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  Put(client, "k1");
  ReplicationStandby standby(ReplicationStandbyOptions{"c1", "", 5000});
  standby.Start();
  standby.Follow("127.0.0.1:" + std::to_string(port_));
  ASSERT_TRUE(testing::WaitFor([&] { return standby.stats().synced; }, 10'000));
  Put(client, "k2");
  const uint64_t seq = dir_->ChangeSeq();
  ASSERT_TRUE(testing::WaitFor([&] { return standby.stats().applied_seq >= seq; }, 10'000));
  size_t objects = 0;
  standby.WithState([&](const StandbyState& s) { objects = s.object_count(); });
  EXPECT_EQ(objects, 2u);
  // Both other protocols still answer on the same port.
  EXPECT_TRUE(client.ExistKey("", "k2").ok());
  LookupClient lookups({"127.0.0.1:" + std::to_string(port_), "", 5000});
  EXPECT_TRUE(lookups.GetReplicaList("", "k1").ok());
  standby.Stop();
}

}  // namespace
}  // namespace shelfmark
