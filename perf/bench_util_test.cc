#include "perf/bench_util.h"

#include <gtest/gtest.h>

#include <numeric>

namespace shelfmark {
namespace {

TEST(Percentile, NearestRank) {
  std::vector<int64_t> v(100);
  std::iota(v.begin(), v.end(), 1);  // 1..100
  std::vector<int64_t> shuffled(v.rbegin(), v.rend());
  EXPECT_EQ(Percentile(&shuffled, 50), 50);
  EXPECT_EQ(Percentile(&shuffled, 99), 99);
  EXPECT_EQ(Percentile(&shuffled, 100), 100);
  EXPECT_EQ(Percentile(&shuffled, 0), 1);
  EXPECT_EQ(Percentile(&shuffled, 99.5), 100);
}

TEST(Percentile, SmallAndEmpty) {
  std::vector<int64_t> empty;
  EXPECT_EQ(Percentile(&empty, 50), 0);
  std::vector<int64_t> one{7};
  EXPECT_EQ(Percentile(&one, 50), 7);
  EXPECT_EQ(Percentile(&one, 99), 7);
  std::vector<int64_t> two{10, 20};
  EXPECT_EQ(Percentile(&two, 50), 10);
  EXPECT_EQ(Percentile(&two, 99), 20);
}

TEST(SummarizeLatencyNs, MicrosecondsPerCall) {
  std::vector<int64_t> ns;
  for (int i = 1; i <= 1000; ++i) ns.push_back(i * 1000);  // 1..1000 us
  LatencySummary s = SummarizeLatencyNs(&ns);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.p50_us, 500);
  EXPECT_DOUBLE_EQ(s.p99_us, 990);
  EXPECT_DOUBLE_EQ(s.max_us, 1000);
}

TEST(DescribeLatencyNs, PerftestColumns) {
  std::vector<int64_t> ns;
  for (int64_t i = 1; i <= 1000; ++i) ns.push_back(i * 1000);  // 1..1000 us
  const LatencyStats s = DescribeLatencyNs(&ns);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 1000);
  EXPECT_DOUBLE_EQ(s.typical_us, 500);
  EXPECT_DOUBLE_EQ(s.avg_us, 500.5);
  EXPECT_NEAR(s.stdev_us, 288.675, 0.001);  // sqrt((n^2 - 1) / 12)
  EXPECT_DOUBLE_EQ(s.p99_us, 990);
  EXPECT_DOUBLE_EQ(s.p999_us, 999);
  std::vector<int64_t> none;
  EXPECT_EQ(DescribeLatencyNs(&none).count, 0u);
  EXPECT_EQ(DescribeLatencyNs(&none).max_us, 0);
  std::vector<int64_t> same(7, 2500);
  EXPECT_DOUBLE_EQ(DescribeLatencyNs(&same).stdev_us, 0);
}

TEST(ParseSizeList, AcceptsPositiveListsOnly) {
  std::vector<uint64_t> sizes;
  ASSERT_TRUE(ParseSizeList("4096,65536,1", &sizes));
  EXPECT_EQ(sizes, (std::vector<uint64_t>{4096, 65536, 1}));
  for (const char* bad : {"", ",", "1,", ",1", "0", "-5", "+5", "12a", "1,,2", " 1"}) {
    std::vector<uint64_t> out;
    EXPECT_FALSE(ParseSizeList(bad, &out)) << bad;
  }
}

}  // namespace
}  // namespace shelfmark
