// MasterTarget's leader hints (docs/ha.md, "NOT_LEADER names the leader"):
// which hints a target follows, the one hop, and where it goes when the
// hinted address fails. No network: a fixed target never asks etcd, and an
// etcd:// one is only asked to follow and leave hints here.
#include "rpc/master_target.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark {
namespace {

TEST(MasterTarget, AFixedAddressFollowsNoHintUnlessAsked) {
  MasterTarget target("10.0.0.1:50051", "");
  EXPECT_FALSE(target.follows_hints());
  EXPECT_FALSE(target.FollowHint("10.0.0.2:50051"));
  EXPECT_EQ(target.address(), "10.0.0.1:50051");
  EXPECT_FALSE(target.hinted());
}

TEST(MasterTarget, OneHopThenBackToTheConfiguredAddress) {
  MasterTarget target("10.0.0.1:50051", "", /*fixed_follows_hints=*/true);
  ASSERT_TRUE(target.FollowHint("10.0.0.2:50051"));
  EXPECT_EQ(target.address(), "10.0.0.2:50051");
  EXPECT_TRUE(target.hinted());
  EXPECT_FALSE(target.needs_refresh());
  // The named master names another: stale hints, not followed.
  EXPECT_FALSE(target.FollowHint("10.0.0.3:50051"));
  EXPECT_EQ(target.address(), "10.0.0.2:50051");
  EXPECT_TRUE(target.LeaveHint());
  EXPECT_EQ(target.address(), "10.0.0.1:50051");
  EXPECT_FALSE(target.hinted());
  EXPECT_FALSE(target.LeaveHint()) << "nothing to leave";
  EXPECT_TRUE(target.FollowHint("10.0.0.3:50051")) << "a hint from the configured address again";
}

TEST(MasterTarget, RefusesHintsThatNameNoOtherAddress) {
  MasterTarget target("10.0.0.1:50051", "", /*fixed_follows_hints=*/true);
  const std::string too_long = std::string(254, 'h') + ":65535";
  for (const std::string& hint : {std::string(), std::string("10.0.0.1:50051"),
                                  std::string("nohost"), std::string("h:0"),
                                  std::string("h:65536"), std::string("::1:5"),
                                  std::string("[::1"), std::string("h:1x"), too_long}) {
    EXPECT_FALSE(target.FollowHint(hint)) << hint;
    EXPECT_EQ(target.address(), "10.0.0.1:50051");
  }
  EXPECT_TRUE(target.FollowHint("[::1]:5"));
  EXPECT_TRUE(target.LeaveHint());
  EXPECT_TRUE(target.FollowHint(std::string(253, 'h') + ":65535"));
}

TEST(MasterTarget, AnEtcdTargetFollowsHintsAndAsksEtcdWhenOneFails) {
  MasterTarget target("etcd://127.0.0.1:2379", "hint-test");
  EXPECT_TRUE(target.follows_hints());
  EXPECT_TRUE(target.needs_refresh()) << "no leader resolved yet";
  ASSERT_TRUE(target.FollowHint("10.0.0.2:50051"));
  EXPECT_EQ(target.address(), "10.0.0.2:50051");
  EXPECT_FALSE(target.needs_refresh()) << "the hint is where calls go: no etcd round trip";
  EXPECT_FALSE(target.FollowHint("10.0.0.3:50051"));
  EXPECT_FALSE(target.LeaveHint()) << "the address changes only when etcd names another";
  EXPECT_TRUE(target.needs_refresh());
  EXPECT_FALSE(target.hinted());
}

}  // namespace
}  // namespace shelfmark
