#include "common/uuid.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace shelfmark {
namespace {

TEST(UUID, GeneratedIdsAreDistinctVersion4) {
  std::unordered_set<UUID, UUIDHash> seen;
  for (int i = 0; i < 1000; ++i) {
    UUID id = UUID::Generate();
    EXPECT_FALSE(id.is_nil());
    EXPECT_EQ((id.hi >> 12) & 0xF, 4u);
    EXPECT_TRUE(seen.insert(id).second);
  }
}

TEST(UUID, TextRoundTrip) {
  UUID id = UUID::Generate();
  std::string text = id.ToString();
  ASSERT_EQ(text.size(), 36u);
  auto parsed = UUID::Parse(text);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, id);
}

TEST(UUID, ParseRejectsMalformed) {
  EXPECT_FALSE(UUID::Parse("").has_value());
  EXPECT_FALSE(UUID::Parse("00000000-0000-0000-0000-00000000000").has_value());
  EXPECT_FALSE(UUID::Parse("00000000x0000-0000-0000-000000000000").has_value());
  EXPECT_FALSE(UUID::Parse("0000000g-0000-0000-0000-000000000000").has_value());
  EXPECT_TRUE(UUID::Parse("0123abcd-0000-4000-8000-00000000ffff").has_value());
}

}  // namespace
}  // namespace shelfmark
