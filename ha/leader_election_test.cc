// LeaderElection against a real etcd (testing/etcd_process.h). Orderings are
// asserted on steady-clock instants, never durations.
#include "ha/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ha/etcd_client.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark::ha {
namespace {

using Clock = std::chrono::steady_clock;
using testing::EtcdProcess;
using testing::WaitFor;

constexpr int kDeadlineMs = 30'000;

LeaderElectionOptions Options(const std::string& endpoints, const std::string& address) {
  LeaderElectionOptions o;
  o.etcd_endpoints = *ParseEtcdEndpoints(endpoints);
  o.cluster_id = "test-cluster";
  o.address = address;
  o.follower_poll_ms = 50;
  return o;
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.Start()) << etcd_.StartFailure(); }

  std::unique_ptr<LeaderElection> Master(const std::string& address, int ttl_s = 2) {
    LeaderElectionOptions o = Options(etcd_.endpoint(), address);
    o.lease_ttl_s = ttl_s;
    auto m = std::make_unique<LeaderElection>(o);
    EXPECT_EQ(m->Start(), ErrorCode::OK);
    return m;
  }

  // Waits until exactly one of a, b can acknowledge and the other follows
  // it; the leader, or null.
  static LeaderElection* WaitOneLeader(LeaderElection* a, LeaderElection* b) {
    LeaderElection* leader = nullptr;
    const bool ok = WaitFor(
        [&] {
          for (auto [l, f] : {std::pair{a, b}, std::pair{b, a}}) {
            const LeaderView lv = l->view(), fv = f->view();
            if (l->CanAcknowledge() && !f->CanAcknowledge() && lv.role == Role::kLeader &&
                fv.role == Role::kFollower && fv.term == lv.term &&
                fv.leader_address == lv.leader_address) {
              leader = l;
              return true;
            }
          }
          return false;
        },
        kDeadlineMs);
    return ok ? leader : nullptr;
  }

  EtcdProcess etcd_;
};

TEST_F(LeaderElectionTest, TwoMastersExactlyOneLeadsAndTheOtherKnowsItsAddress) {
  std::vector<LeaderView> changes;
  LeaderElectionOptions o = Options(etcd_.endpoint(), "m1:1");
  Mutex mu;
  o.on_change = [&](const LeaderView& v) {
    MutexLock lock(&mu);
    changes.push_back(v);
  };
  LeaderElection a(o);
  ASSERT_EQ(a.Start(), ErrorCode::OK);
  auto b = Master("m2:2");
  LeaderElection* leader = WaitOneLeader(&a, b.get());
  ASSERT_NE(leader, nullptr);
  LeaderElection* follower = leader == &a ? b.get() : &a;
  EXPECT_EQ(follower->view().leader_address, leader == &a ? "m1:1" : "m2:2");
  EXPECT_GT(leader->view().term, 0);
  EXPECT_EQ(leader->counts().elections_won, 1u);
  EXPECT_EQ(follower->counts().elections_won, 0u);
  EXPECT_GT(follower->counts().fenced_refusals, 0u);
  // The key holds the leader's address, with its term as create_revision.
  EtcdClient etcd({*ParseEtcdEndpoints(etcd_.endpoint())});
  auto key = etcd.Get("shelfmark/test-cluster/leader");
  ASSERT_TRUE(key.ok() && key->has_value()) << etcd.last_error();
  EXPECT_EQ((*key)->value, leader->view().leader_address);
  EXPECT_EQ((*key)->create_revision, leader->view().term);
  {
    MutexLock lock(&mu);
    ASSERT_FALSE(changes.empty());
    EXPECT_EQ(changes.back(), a.view());
  }
}

TEST_F(LeaderElectionTest, StopResignsSoTheFollowerWinsBeforeTheLeaseCouldExpire) {
  auto a = Master("m1:1", /*ttl_s=*/10), b = Master("m2:2", /*ttl_s=*/10);
  LeaderElection* leader = WaitOneLeader(a.get(), b.get());
  ASSERT_NE(leader, nullptr);
  LeaderElection* follower = leader == a.get() ? b.get() : a.get();
  const int64_t old_term = leader->view().term;
  const LeaderFence old_fence = leader->fence();
  leader->Stop();
  EXPECT_FALSE(leader->CanAcknowledge());
  EXPECT_EQ(leader->view().role, Role::kNone);
  ASSERT_TRUE(WaitFor([&] { return follower->CanAcknowledge(); }, kDeadlineMs));
  const Clock::time_point won_seen = Clock::now();
  // Won through the resignation, not the lease's expiry.
  EXPECT_LT(won_seen, old_fence.earliest_expiry());
  EXPECT_GT(follower->view().term, old_term);
  EXPECT_EQ(follower->view().leader_address, follower == a.get() ? "m1:1" : "m2:2");
}

TEST_F(LeaderElectionTest, PausedEtcdFencesTheLeaderBeforeItsLeaseCanExpire) {
  auto a = Master("m1:1"), b = Master("m2:2");
  LeaderElection* leader = WaitOneLeader(a.get(), b.get());
  ASSERT_NE(leader, nullptr);
  const int64_t old_term = leader->view().term;
  etcd_.Pause();
  ASSERT_TRUE(WaitFor([&] { return !leader->CanAcknowledge(); }, kDeadlineMs));
  const Clock::time_point fenced_seen = Clock::now();
  const LeaderFence fence = leader->fence();
  // No renewal got through since: the fence is the last successful one's.
  EXPECT_GE(fenced_seen, fence.ack_deadline);
  EXPECT_LT(fence.ack_deadline, fence.earliest_expiry());
  EXPECT_LT(fenced_seen, fence.earliest_expiry());
  EXPECT_FALSE(a->CanAcknowledge() || b->CanAcknowledge());
  EXPECT_GT(leader->counts().lease_renew_failures + leader->counts().fenced_refusals, 0u);
  etcd_.Resume();
  // Leadership resumes: the same master (its lease survived) or the other one
  // (with a higher term).
  LeaderElection* next = WaitOneLeader(a.get(), b.get());
  ASSERT_NE(next, nullptr);
  if (next != leader) {
    EXPECT_GT(next->view().term, old_term);
  }
}

TEST_F(LeaderElectionTest, AnAbandonedLeaseIsTakenOverOnlyAfterItExpires) {
  auto a = Master("m1:1"), b = Master("m2:2");
  LeaderElection* leader = WaitOneLeader(a.get(), b.get());
  ASSERT_NE(leader, nullptr);
  LeaderElection* follower = leader == a.get() ? b.get() : a.get();
  const int64_t old_term = leader->view().term;
  leader->Abandon();  // a crash: no resignation, no renewal
  const LeaderFence fence = leader->fence();
  EXPECT_FALSE(leader->CanAcknowledge());
  ASSERT_TRUE(WaitFor([&] { return follower->CanAcknowledge(); }, kDeadlineMs));
  const Clock::time_point won_seen = Clock::now();
  EXPECT_GT(won_seen, fence.earliest_expiry());  // etcd kept the lease its full TTL
  EXPECT_GT(follower->view().term, old_term);
  EXPECT_EQ(follower->counts().elections_won, 1u);
}

// LeaderGone: the follower revokes the gone leader's lease and wins long
// before etcd would have expired it (a 10 s TTL makes the order plain).
TEST_F(LeaderElectionTest, AGoneLeadersLeaseIsRevokedAndTheFollowerWinsAtOnce) {
  auto a = Master("m1:1", 10), b = Master("m2:2", 10);
  LeaderElection* leader = WaitOneLeader(a.get(), b.get());
  ASSERT_NE(leader, nullptr);
  LeaderElection* follower = leader == a.get() ? b.get() : a.get();
  const int64_t old_term = leader->view().term;
  leader->Abandon();  // a crash: no resignation
  const LeaderFence fence = leader->fence();
  follower->LeaderGone(old_term);
  ASSERT_TRUE(WaitFor([&] { return follower->CanAcknowledge(); }, kDeadlineMs));
  EXPECT_LT(Clock::now(), fence.earliest_expiry()) << "won before the lease could expire";
  EXPECT_GT(follower->view().term, old_term);
  EXPECT_EQ(follower->counts().gone_leaders_revoked, 1u);
  EXPECT_EQ(follower->view().last_term, follower->view().term) << "its win is recorded";
}

// The latest leader's term outlives its key (LastLeaderKey): a master that
// starts after the leader resigned still learns that the cluster had one,
// before it is asked whether to campaign.
TEST_F(LeaderElectionTest, AMasterStartedAfterTheLeaderWentSeesItsRecordedTerm) {
  auto a = Master("m1:1");
  ASSERT_TRUE(WaitFor([&] { return a->CanAcknowledge(); }, kDeadlineMs));
  const int64_t term = a->view().term;
  a->Stop();  // resigns: the leader key and its lease are gone
  LeaderElectionOptions o = Options(etcd_.endpoint(), "m2:2");
  std::atomic<int64_t> seen_when_asked{-1};
  LeaderElection* self = nullptr;
  o.may_campaign = [&] {
    seen_when_asked = self->view().last_term;
    return false;
  };
  LeaderElection c(o);
  self = &c;
  ASSERT_EQ(c.Start(), ErrorCode::OK);
  ASSERT_TRUE(WaitFor([&] { return seen_when_asked.load() >= 0; }, kDeadlineMs));
  EXPECT_EQ(seen_when_asked.load(), term);
  EXPECT_EQ(c.view().role, Role::kFollower);
  EXPECT_TRUE(c.view().leader_address.empty());
  c.Stop();
}

// Evidence about another term (an earlier leader's, or none) revokes
// nothing: the live leader keeps its lease through several renewals while
// the follower keeps polling.
TEST_F(LeaderElectionTest, LeaderGoneOfAnotherTermRevokesNothing) {
  auto a = Master("m1:1"), b = Master("m2:2");
  LeaderElection* leader = WaitOneLeader(a.get(), b.get());
  ASSERT_NE(leader, nullptr);
  LeaderElection* follower = leader == a.get() ? b.get() : a.get();
  const int64_t term = leader->view().term;
  follower->LeaderGone(term - 1);
  follower->LeaderGone(0);
  const Clock::time_point renewed = leader->fence().renew_sent;
  ASSERT_TRUE(WaitFor([&] { return leader->fence().renew_sent > renewed; }, kDeadlineMs));
  const Clock::time_point again = leader->fence().renew_sent;
  ASSERT_TRUE(WaitFor([&] { return leader->fence().renew_sent > again; }, kDeadlineMs));
  EXPECT_TRUE(leader->CanAcknowledge());
  EXPECT_EQ(leader->view().term, term);
  EXPECT_EQ(follower->counts().gone_leaders_revoked, 0u);
  EXPECT_EQ(follower->view().role, Role::kFollower);
}

TEST_F(LeaderElectionTest, LeadershipResumesAfterAnEtcdRestart) {
  auto a = Master("m1:1");
  ASSERT_TRUE(WaitFor([&] { return a->CanAcknowledge(); }, kDeadlineMs));
  ASSERT_TRUE(etcd_.Restart()) << etcd_.StartFailure();
  ASSERT_TRUE(WaitFor([&] { return a->CanAcknowledge(); }, kDeadlineMs));
  EXPECT_EQ(a->view().role, Role::kLeader);
}

TEST(LeaderElection, RefusesBadOptions) {
  LeaderElectionOptions good = Options("127.0.0.1:1", "m:1");
  auto with = [&](auto change) {
    LeaderElectionOptions o = good;
    change(o);
    return LeaderElection(o).Start();
  };
  EXPECT_EQ(with([](auto& o) { o.cluster_id = "a/b"; }), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(with([](auto& o) { o.address = ""; }), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(with([](auto& o) { o.etcd_endpoints.clear(); }), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(with([](auto& o) { o.lease_ttl_s = 0; }), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(with([](auto& o) { o.safety_margin_ms = 2000; }), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(with([](auto& o) { o.safety_margin_ms = -1; }), ErrorCode::INVALID_PARAMS);
}

TEST(LeaderElection, UnreachableEtcdNeverLeadsAndStopsCleanly) {
  const uint16_t dead = testing::FreePort();
  LeaderElection m(Options("127.0.0.1:" + std::to_string(dead), "m:1"));
  ASSERT_EQ(m.Start(), ErrorCode::OK);
  EXPECT_EQ(m.Start(), ErrorCode::INTERNAL_ERROR);  // already started
  EXPECT_FALSE(m.CanAcknowledge());
  m.Stop();  // returns although every etcd request fails
  EXPECT_EQ(m.view().role, Role::kNone);
  EXPECT_EQ(m.counts().elections_won, 0u);
}

}  // namespace
}  // namespace shelfmark::ha
