#include "ha/master_address.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

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

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ClusterId, FlagThenOursThenMooncakesThenDefault) {
  ScopedEnv ours(kClusterIdEnv, nullptr);
  ScopedEnv theirs(kMooncakeClusterIdEnv, nullptr);
  EXPECT_EQ(ResolveClusterId(""), kDefaultClusterId);
  ::setenv(kMooncakeClusterIdEnv, "mc", 1);
  EXPECT_EQ(ResolveClusterId(""), "mc");
  ::setenv(kClusterIdEnv, "", 1);  // empty counts as unset
  EXPECT_EQ(ResolveClusterId(""), "mc");
  ::setenv(kClusterIdEnv, "sm", 1);
  EXPECT_EQ(ResolveClusterId(""), "sm");
  EXPECT_EQ(ResolveClusterId("flag"), "flag");
}

TEST(MasterFlagError, NamesTheFlagAndWhatIsWrong) {
  ScopedEnv ours(kClusterIdEnv, nullptr);
  ScopedEnv theirs(kMooncakeClusterIdEnv, nullptr);
  EXPECT_EQ(MasterFlagError("master", "h:1", ""), "");
  EXPECT_EQ(MasterFlagError("master", "etcd://h:1;g:2", ""), "");
  EXPECT_EQ(MasterFlagError("master", "h:1", "bad/id"), "") << "unused without etcd";
  const std::string no_endpoint = MasterFlagError("master", "etcd://", "");
  EXPECT_NE(no_endpoint.find("flag --master: etcd:// needs"), std::string::npos) << no_endpoint;
  const std::string bad_endpoint = MasterFlagError("master_server_address", "etcd://h", "");
  EXPECT_NE(bad_endpoint.find("flag --master_server_address"), std::string::npos);
  EXPECT_NE(bad_endpoint.find("'etcd://h'"), std::string::npos);
  EXPECT_NE(MasterFlagError("master", "nope", "").find("expects HOST:PORT or etcd://"),
            std::string::npos);
  const std::string bad_id = MasterFlagError("master", "etcd://h:1", "a/b");
  EXPECT_NE(bad_id.find("flag --cluster_id"), std::string::npos) << bad_id;
  ::setenv(kClusterIdEnv, "x y", 1);
  EXPECT_NE(MasterFlagError("master", "etcd://h:1", "").find("got 'x y'"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark::ha
