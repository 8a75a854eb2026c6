#include "service/http_query.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark {
namespace {

TEST(HttpQuery, DecodesPercentEscapesAndPlus) {
  QueryParams params;
  std::string error;
  ASSERT_TRUE(ParseQuery("key=a%2Fb%20c+d%2B&segment=127.0.0.1%3A5000&flag", &params, &error))
      << error;
  EXPECT_EQ(params.size(), 3u);
  EXPECT_EQ(params.at("key"), "a/b c d+");
  EXPECT_EQ(params.at("segment"), "127.0.0.1:5000");
  EXPECT_EQ(params.at("flag"), "");
}

TEST(HttpQuery, EmptyQueryAndEmptyPairsGiveNothing) {
  QueryParams params{{"stale", "x"}};
  std::string error;
  ASSERT_TRUE(ParseQuery("", &params, &error));
  EXPECT_TRUE(params.empty());
  ASSERT_TRUE(ParseQuery("&&a=1&", &params, &error));
  EXPECT_EQ(params.size(), 1u);
  EXPECT_EQ(params.at("a"), "1");
}

TEST(HttpQuery, ValueKeepsLaterEqualsSigns) {
  QueryParams params;
  std::string error;
  ASSERT_TRUE(ParseQuery("key=a=b==", &params, &error));
  EXPECT_EQ(params.at("key"), "a=b==");
}

TEST(HttpQuery, DecodesEveryByte) {
  QueryParams params;
  std::string error;
  ASSERT_TRUE(ParseQuery("k=%00%ff%0A", &params, &error));
  EXPECT_EQ(params.at("k"), std::string("\0\xff\n", 3));
}

TEST(HttpQuery, RefusesBadEscapesEmptyNamesAndRepeats) {
  QueryParams params;
  for (const char* bad : {"key=%", "key=%4", "key=%zz", "k%g1=1", "=1", "key=1&key=2"}) {
    std::string error;
    EXPECT_FALSE(ParseQuery(bad, &params, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  std::string error;
  ASSERT_FALSE(ParseQuery("key=1&key=2", &params, &error));
  EXPECT_NE(error.find("'key' given more than once"), std::string::npos) << error;
  ASSERT_FALSE(ParseQuery("key=%zz", &params, &error));
  EXPECT_NE(error.find("percent escape"), std::string::npos) << error;
}

}  // namespace
}  // namespace shelfmark
