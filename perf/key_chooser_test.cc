#include "perf/key_chooser.h"

#include <gtest/gtest.h>

#include <vector>

namespace shelfmark {
namespace {

std::vector<uint64_t> Histogram(KeyChooser& chooser, uint64_t n, int draws) {
  std::vector<uint64_t> hits(n, 0);
  for (int i = 0; i < draws; ++i) {
    const uint64_t k = chooser.Next();
    EXPECT_LT(k, n);
    if (k < n) ++hits[k];
  }
  return hits;
}

TEST(KeyChooser, ParsesDistributions) {
  KeyDistribution d = KeyDistribution::kUniform;
  EXPECT_TRUE(ParseKeyDistribution("zipf", &d));
  EXPECT_EQ(d, KeyDistribution::kZipf);
  EXPECT_TRUE(ParseKeyDistribution("uniform", &d));
  EXPECT_EQ(d, KeyDistribution::kUniform);
  EXPECT_FALSE(ParseKeyDistribution("Zipf", &d));
  EXPECT_FALSE(ParseKeyDistribution("", &d));
}

TEST(KeyChooser, UniformCoversEveryKeyEvenly) {
  KeyChooser chooser(10, KeyDistribution::kUniform, 0, 1);
  const std::vector<uint64_t> hits = Histogram(chooser, 10, 100'000);
  for (uint64_t h : hits) {
    EXPECT_GT(h, 9'000u);
    EXPECT_LT(h, 11'000u);
  }
}

TEST(KeyChooser, ZipfFollowsRankLaw) {
  KeyChooser chooser(100, KeyDistribution::kZipf, 1.0, 7);
  const std::vector<uint64_t> hits = Histogram(chooser, 100, 200'000);
  // theta 1: P(rank 0) / P(rank 1) = 2 and P(rank 0) = 1 / H(100) ~ 0.193.
  EXPECT_NEAR(static_cast<double>(hits[0]) / static_cast<double>(hits[1]), 2.0, 0.15);
  EXPECT_NEAR(static_cast<double>(hits[0]) / 200'000.0, 0.193, 0.01);
  EXPECT_GT(hits[0], hits[9]);
  EXPECT_GT(hits[9], hits[99]);
}

TEST(KeyChooser, SameSeedSameSequenceAndOneKey) {
  KeyChooser a(1000, KeyDistribution::kZipf, 0.99, 42), b(1000, KeyDistribution::kZipf, 0.99, 42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
  KeyChooser one(1, KeyDistribution::kZipf, 0.99, 3);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(one.Next(), 0u);
}

}  // namespace
}  // namespace shelfmark
