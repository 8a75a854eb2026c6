#include "perf/bench_keys.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace shelfmark {
namespace {

const UUID kRun{0x1111, 0xabcdef0012345678ULL};

TEST(BenchKeys, ExactSizeAndLayout) {
  BenchKeys keys("pm", kRun, 't', 64);
  std::string k;
  keys.Make(42, &k);
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k.substr(0, 24), "pm12345678t-000000000042");
  EXPECT_EQ(k.find_first_not_of('x', 24), std::string::npos);
}

TEST(BenchKeys, MinimumSizeHasNoPadding) {
  BenchKeys keys("", kRun, 'm', BenchKeys::kIdBytes);
  std::string k;
  keys.Make(999999999999ULL, &k);
  EXPECT_EQ(k, "12345678m-999999999999");
}

TEST(BenchKeys, DistinctIdsPhasesAndPrefixesGiveDistinctKeys) {
  std::set<std::string> seen;
  std::string k;
  for (char phase : {'t', 'm'}) {
    for (const char* prefix : {"pm", "demo/"}) {
      BenchKeys keys(prefix, kRun, phase, 40);
      for (uint64_t id = 0; id < 100; ++id) {
        keys.Make(id, &k);
        EXPECT_EQ(k.size(), 40u);
        EXPECT_TRUE(seen.insert(k).second) << k;
      }
    }
  }
}

}  // namespace
}  // namespace shelfmark
