#include "ha/master_address.h"

#include <gtest/gtest.h>

#include "ha/etcd_client.h"
#include "ha/leader_key.h"

namespace shelfmark::ha {
namespace {

TEST(MasterAddress, PlainHostPort) {
  auto a = ParseMasterAddress("master-1:50051");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->uses_etcd());
  EXPECT_EQ(a->direct.ToString(), "master-1:50051");
}

TEST(MasterAddress, EtcdEndpointsWithEitherSeparator) {
  auto a = ParseMasterAddress("etcd://10.0.0.1:2379;10.0.0.2:2379,[::1]:2380");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->uses_etcd());
  ASSERT_EQ(a->etcd_endpoints.size(), 3u);
  EXPECT_EQ(a->etcd_endpoints[0].ToString(), "10.0.0.1:2379");
  EXPECT_EQ(a->etcd_endpoints[1].port, 2379);
  EXPECT_EQ(a->etcd_endpoints[2].host, "::1");
}

TEST(MasterAddress, RefusesWhatIsNeither) {
  for (const char* bad : {"", "master", "master:0", "etcd://", "etcd://;", "etcd://h",
                          "etcd://h:1;x", "http://h:1", "h:99999"}) {
    EXPECT_EQ(ParseMasterAddress(bad).error(), ErrorCode::INVALID_PARAMS) << bad;
  }
}

TEST(EtcdEndpoints, AllowHttpPrefixAndSpaces) {
  auto e = ParseEtcdEndpoints(" http://127.0.0.1:2379/ , h:2 ;");
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 2u);
  EXPECT_EQ((*e)[0].ToString(), "127.0.0.1:2379");
  EXPECT_EQ((*e)[1].ToString(), "h:2");
}

TEST(LeaderKey, ClusterIdsCannotEscapeTheirPrefix) {
  EXPECT_EQ(LeaderKey("prod-a"), "shelfmark/prod-a/leader");
  for (const char* bad : {"", "a/b", "..", ".", "a b", "é"}) EXPECT_FALSE(ValidClusterId(bad)) << bad;
  EXPECT_TRUE(ValidClusterId("Cluster_1.x"));
  EXPECT_FALSE(ValidClusterId(std::string(kMaxClusterIdLength + 1, 'a')));
}

TEST(ResolveLeader, RefusesBadArgumentsWithoutAsking) {
  EXPECT_EQ(ResolveLeader({}, "c", 10).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ResolveLeader({{"127.0.0.1", 1}}, "a/b", 10).error(), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark::ha
