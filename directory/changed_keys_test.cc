// ChangedKeys yields each changed pair once, sorted, and starts empty again.
#include "directory/changed_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace shelfmark {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs Take(ChangedKeys& c) {
  Pairs out;
  for (const ChangedKeys::Pair& p : c.Distinct()) out.emplace_back(p.tenant, p.key);
  c.Clear();
  return out;
}

TEST(ChangedKeysTest, EachPairOnceInOrderThenEmpty) {
  ChangedKeys c;
  EXPECT_TRUE(Take(c).empty());
  c.Add("default", "b");
  c.Add("default", "a");
  c.Add("t", "a");
  c.Add("default", "b");
  // Same bytes split differently are different pairs.
  c.Add("defaul", "tb");
  c.Add("default", std::string(5000, 'k'));
  EXPECT_EQ(c.size(), 6u);
  EXPECT_EQ(Take(c), (Pairs{{"defaul", "tb"},
                            {"default", "a"},
                            {"default", "b"},
                            {"default", std::string(5000, 'k')},
                            {"t", "a"}}));
  EXPECT_TRUE(c.empty());
  EXPECT_TRUE(Take(c).empty()) << "Clear forgets every pair";
  c.Add("x", "y");
  EXPECT_EQ(Take(c), (Pairs{{"x", "y"}}));
}

}  // namespace
}  // namespace shelfmark
