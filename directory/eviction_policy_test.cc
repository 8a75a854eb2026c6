// The policies' arithmetic: queues, target splits and cutoffs.
#include "directory/eviction_policy.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

TEST(EvictionPolicy, ParsesItsNames) {
  EXPECT_EQ(ParseEvictionPolicy("lru"), EvictionPolicy::kLru);
  EXPECT_EQ(ParseEvictionPolicy("2q"), EvictionPolicy::k2q);
  EXPECT_FALSE(ParseEvictionPolicy("LRU").has_value());
  EXPECT_FALSE(ParseEvictionPolicy("").has_value());
  for (EvictionPolicy p : {EvictionPolicy::kLru, EvictionPolicy::k2q}) {
    EXPECT_EQ(ParseEvictionPolicy(EvictionPolicyName(p)), p);
  }
}

TEST(EvictionPolicy, LruHasOneQueue2qSplitsByReuse) {
  for (uint32_t uses : {0u, 1u, 2u, 3u}) {
    EXPECT_EQ(QueueOf(EvictionPolicy::kLru, uses), kProtectedQueue);
  }
  EXPECT_EQ(QueueOf(EvictionPolicy::k2q, 1), kProbationQueue);
  EXPECT_EQ(QueueOf(EvictionPolicy::k2q, 2), kProtectedQueue);
  EXPECT_EQ(QueueOf(EvictionPolicy::k2q, 3), kProtectedQueue);
}

TEST(EvictionPolicy, TwoQTakesProbationsExcessFirst) {
  const uint64_t bytes[kQueueCount] = {/*probation=*/500, /*protected=*/1000};
  // 300 over probation's limit of 200: all of a 100-byte target from there.
  QueueTargets t = SplitTarget(EvictionPolicy::k2q, 100, bytes, 200);
  EXPECT_EQ(t.bytes[kProbationQueue], 100u);
  EXPECT_EQ(t.bytes[kProtectedQueue], 0u);
  // 400 wanted: the 300 of excess, then 100 from protected.
  t = SplitTarget(EvictionPolicy::k2q, 400, bytes, 200);
  EXPECT_EQ(t.bytes[kProbationQueue], 300u);
  EXPECT_EQ(t.bytes[kProtectedQueue], 100u);
  // More than protected holds: probation gives the rest.
  t = SplitTarget(EvictionPolicy::k2q, 1400, bytes, 200);
  EXPECT_EQ(t.bytes[kProbationQueue], 400u);
  EXPECT_EQ(t.bytes[kProtectedQueue], 1000u);
  // Everything and more: each queue gives all it has, no more.
  t = SplitTarget(EvictionPolicy::k2q, 5000, bytes, 200);
  EXPECT_EQ(t.bytes[kProbationQueue], 500u);
  EXPECT_EQ(t.bytes[kProtectedQueue], 1000u);
  // Probation under its limit: protected first.
  t = SplitTarget(EvictionPolicy::k2q, 100, bytes, 800);
  EXPECT_EQ(t.bytes[kProbationQueue], 0u);
  EXPECT_EQ(t.bytes[kProtectedQueue], 100u);
}

TEST(EvictionPolicy, LruTakesEverythingFromItsQueue) {
  const uint64_t bytes[kQueueCount] = {0, 1000};
  QueueTargets t = SplitTarget(EvictionPolicy::kLru, 300, bytes, 0);
  EXPECT_EQ(t.bytes[kProtectedQueue], 300u);
  EXPECT_EQ(t.bytes[kProbationQueue], 0u);
}

TEST(EvictionPolicy, CutoffsWalkEachQueueFromTheLeastRecentlyUsed) {
  QueueCandidates q[kQueueCount];
  for (uint64_t use : {50u, 10u, 40u, 20u, 30u}) q[kProtectedQueue].sample.push_back({use, 10});
  q[kProtectedQueue].bytes = 50;
  q[kProbationQueue].sample.push_back({5, 10});
  q[kProbationQueue].bytes = 10;
  QueueTargets t;
  t.bytes[kProtectedQueue] = 25;  // the three least recently used: 10, 20, 30
  EvictionCutoffs cut = ComputeCutoffs(q, t);
  EXPECT_TRUE(cut.evict[kProtectedQueue]);
  EXPECT_EQ(cut.last_use[kProtectedQueue], 30u);
  EXPECT_FALSE(cut.evict[kProbationQueue]) << "no target: nothing from probation";
  EXPECT_TRUE(cut.any());
}

TEST(EvictionPolicy, SampleBytesScaleToThePopulation) {
  QueueCandidates q[kQueueCount];
  for (uint64_t use = 1; use <= 10; ++use) q[kProtectedQueue].sample.push_back({use, 1});
  q[kProtectedQueue].bytes = 100;  // the sample is a tenth of the population
  QueueTargets t;
  t.bytes[kProtectedQueue] = 30;
  EXPECT_EQ(ComputeCutoffs(q, t).last_use[kProtectedQueue], 3u);
}

TEST(EvictionPolicy, EmptyQueuesGiveNoCutoff) {
  QueueCandidates q[kQueueCount];
  QueueTargets t;
  t.bytes[kProtectedQueue] = 10;
  EXPECT_FALSE(ComputeCutoffs(q, t).any());
}

}  // namespace
}  // namespace shelfmark
