// ViewSet against std::set as a model: random inserts and erases over a
// small key space force long probe runs, wrap-around at the array's end,
// backward shifts and resizes both ways.
#include "directory/view_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace shelfmark {
namespace {

std::set<std::string_view> Contents(const ViewSet& s) {
  std::set<std::string_view> out;
  for (std::string_view v : s) EXPECT_TRUE(out.insert(v).second) << "listed twice: " << v;
  return out;
}

TEST(ViewSetTest, InsertFindErase) {
  const std::string a = "alpha", b = "beta", a2 = "alpha";
  ViewSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(a));
  EXPECT_EQ(s.erase(a), 0u);
  EXPECT_TRUE(s.emplace(a));
  EXPECT_FALSE(s.emplace(a2)) << "equal bytes at another address are the same view";
  EXPECT_TRUE(s.emplace(b));
  EXPECT_TRUE(s.emplace(std::string_view(a.data(), 0)));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_TRUE(s.contains(a2));
  EXPECT_TRUE(s.contains(""));
  EXPECT_EQ(s.erase(a2), 1u);
  EXPECT_FALSE(s.contains(a));
  EXPECT_EQ(Contents(s), (std::set<std::string_view>{"", "beta"}));
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.begin(), s.end());
}

TEST(ViewSetTest, MatchesAModelUnderRandomChurn) {
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back("key-" + std::to_string(i * 7919));
  std::mt19937 rng(42);
  ViewSet s;
  std::set<std::string_view> model;
  size_t peak = 0;
  for (int step = 0; step < 200'000; ++step) {
    // Phases that grow towards all keys and shrink towards none.
    const bool growing = (step / 20'000) % 2 == 0;
    std::string_view k = keys[rng() % keys.size()];
    if ((rng() % 4 != 0) == growing) {
      ASSERT_EQ(s.emplace(k), model.insert(k).second) << "step " << step;
    } else {
      ASSERT_EQ(s.erase(k), model.erase(k)) << "step " << step;
    }
    ASSERT_EQ(s.size(), model.size());
    peak = std::max(peak, model.size());
    if (step % 997 == 0) {
      ASSERT_EQ(Contents(s), model) << "step " << step;
      for (std::string_view key : keys) ASSERT_EQ(s.contains(key), model.count(key) == 1);
    }
  }
  EXPECT_GE(peak, 200u) << "the churn reached a mostly full set";
}

TEST(ViewSetTest, MoveLeavesTheSourceEmpty) {
  const std::string k = "k";
  ViewSet a;
  a.emplace(k);
  ViewSet b = std::move(a);
  EXPECT_TRUE(b.contains(k));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): reset is the contract
  EXPECT_FALSE(a.contains(k));
  EXPECT_TRUE(a.emplace(k)) << "a moved-from set is usable";
}

}  // namespace
}  // namespace shelfmark
