#include "directory/ghost_keys.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

TEST(GhostKeys, RemembersUntilTakenOnce) {
  GhostKeys g;
  g.Add(1, 10);
  g.Add(2, 10);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_TRUE(g.Take(1));
  EXPECT_FALSE(g.Take(1)) << "taken once";
  EXPECT_FALSE(g.Take(3)) << "never added";
  EXPECT_TRUE(g.Take(2));
  EXPECT_EQ(g.size(), 0u);
}

TEST(GhostKeys, ForgetsTheOldestPastItsLimit) {
  GhostKeys g;
  for (uint64_t h = 1; h <= 5; ++h) g.Add(h, 3);
  EXPECT_EQ(g.size(), 3u);
  EXPECT_FALSE(g.Take(1));
  EXPECT_FALSE(g.Take(2));
  EXPECT_TRUE(g.Take(3));
  EXPECT_TRUE(g.Take(5));
}

TEST(GhostKeys, ManyAddsAndTakesLeaveNothingBehind) {
  GhostKeys g;
  for (uint64_t h = 0; h < 100'000; ++h) {
    g.Add(h, 4);
    ASSERT_TRUE(g.Take(h));
  }
  EXPECT_EQ(g.size(), 0u);
  g.Add(7, 4);
  EXPECT_TRUE(g.Take(7));
  g.Clear();
  EXPECT_EQ(g.size(), 0u);
}

}  // namespace
}  // namespace shelfmark
