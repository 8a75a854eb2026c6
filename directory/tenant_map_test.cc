// TenantMap keeps the default tenant's state one pointer away; these tests
// check that the pointer always agrees with the map it caches.
#include "directory/tenant_map.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace shelfmark {
namespace {

struct State {
  int value = 0;
};
using Map = BasicTenantMap<State>;

TEST(TenantMapTest, DefaultTenantFoundOnlyWhileItIsThere) {
  Map m;
  EXPECT_EQ(m.Find(kDefaultTenant), nullptr);
  auto [s, inserted] = m.TryEmplace(kDefaultTenant);
  ASSERT_TRUE(inserted);
  s->value = 7;
  EXPECT_EQ(m.Find(std::string(kDefaultTenant)), s) << "found by content, not by address";
  EXPECT_EQ(m.TryEmplace(kDefaultTenant), std::make_pair(s, false));
  EXPECT_TRUE(m.Erase(kDefaultTenant));
  EXPECT_EQ(m.Find(kDefaultTenant), nullptr);
  EXPECT_FALSE(m.Erase(kDefaultTenant));
  EXPECT_TRUE(m.empty());
}

TEST(TenantMapTest, OtherTenantsLiveBesideTheDefault) {
  Map m;
  m.TryEmplace("a").first->value = 1;
  m.TryEmplace(kDefaultTenant).first->value = 2;
  m.TryEmplace("defaulT").first->value = 3;
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.Find("a")->value, 1);
  EXPECT_EQ(m.Find(kDefaultTenant)->value, 2);
  EXPECT_EQ(m.Find("defaulT")->value, 3);
  EXPECT_TRUE(m.Erase("defaulT"));
  EXPECT_EQ(m.Find(kDefaultTenant)->value, 2) << "erasing another tenant keeps the default";
  int seen = 0;
  m.ForEach([&](std::string_view, const State& s) { seen += s.value; });
  EXPECT_EQ(seen, 3);
}

TEST(TenantMapTest, MoveCarriesTheDefaultAndEmptiesTheSource) {
  Map a;
  State* s = a.TryEmplace(kDefaultTenant).first;
  Map b = std::move(a);
  EXPECT_EQ(b.Find(kDefaultTenant), s) << "entries do not move with the map";
  EXPECT_EQ(a.Find(kDefaultTenant),
            nullptr);  // NOLINT(bugprone-use-after-move): reset is the contract
  EXPECT_TRUE(a.empty());
  Map c;
  c.TryEmplace("x");
  c = std::move(b);
  EXPECT_EQ(c.Find(kDefaultTenant), s);
  EXPECT_EQ(c.Find("x"), nullptr);
  EXPECT_EQ(b.Find(kDefaultTenant), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.empty());
}

}  // namespace
}  // namespace shelfmark
