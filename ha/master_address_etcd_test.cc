// ResolveLeader against a real etcd.
#include <gtest/gtest.h>

#include "ha/etcd_client.h"
#include "ha/leader_election.h"
#include "ha/leader_key.h"
#include "ha/master_address.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"

namespace shelfmark::ha {
namespace {

TEST(ResolveLeader, FindsTheLeaderOrSaysWhyNot) {
  testing::EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  auto address = ParseMasterAddress("etcd://" + etcd.endpoint());
  ASSERT_TRUE(address.ok() && address->uses_etcd());
  const auto& endpoints = address->etcd_endpoints;
  EXPECT_EQ(ResolveLeader(endpoints, "c1", 100).error(), ErrorCode::ETCD_KEY_NOT_EXIST);

  LeaderElectionOptions o;
  o.etcd_endpoints = endpoints;
  o.cluster_id = "c1";
  o.address = "10.1.2.3:50051";
  LeaderElection master(o);
  ASSERT_EQ(master.Start(), ErrorCode::OK);
  auto leader = ResolveLeader(endpoints, "c1", 30'000);
  ASSERT_TRUE(leader.ok()) << ErrorCodeName(leader.error());
  EXPECT_EQ(leader->ToString(), "10.1.2.3:50051");
  EXPECT_EQ(ResolveLeader(endpoints, "c2", 100).error(), ErrorCode::ETCD_KEY_NOT_EXIST);

  EtcdClient client({endpoints});
  ASSERT_EQ(client.Put(LeaderKey("bad"), "not an address"), ErrorCode::OK);
  EXPECT_EQ(ResolveLeader(endpoints, "bad", 1000).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(ResolveLeader, UnreachableEtcdIsAnEtcdError) {
  const uint16_t dead = testing::FreePort();
  EXPECT_EQ(ResolveLeader({{"127.0.0.1", dead}}, "c1", 200).error(),
            ErrorCode::ETCD_OPERATION_ERROR);
}

}  // namespace
}  // namespace shelfmark::ha
