#include "common/json_line.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shelfmark {
namespace {

TEST(JsonQuote, PlainTextPassesThrough) { EXPECT_EQ(JsonQuote("abc-1/2"), "\"abc-1/2\""); }

TEST(JsonQuote, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(JsonQuote(std::string("a\0b", 3)), "\"a\\u0000b\"");
}

TEST(JsonQuote, ValidUtf8PassesThrough) {
  EXPECT_EQ(JsonQuote("\xc3\xa9t\xc3\xa9"), "\"\xc3\xa9t\xc3\xa9\"");        // été
  EXPECT_EQ(JsonQuote("\xe4\xb8\xad"), "\"\xe4\xb8\xad\"");                  // 中
  EXPECT_EQ(JsonQuote("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");          // emoji
}

TEST(JsonQuote, InvalidUtf8BytesAreEscaped) {
  EXPECT_EQ(JsonQuote("\xff"), "\"\\u00ff\"");
  EXPECT_EQ(JsonQuote("\xc3"), "\"\\u00c3\"");                   // truncated
  EXPECT_EQ(JsonQuote("\xc0\xaf"), "\"\\u00c0\\u00af\"");        // overlong
  EXPECT_EQ(JsonQuote("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");  // surrogate
}

TEST(JsonObject, BuildsOneLineInOrder) {
  JsonObject j;
  j.Str("bench", "master").Int("batch", -3).Uint("big", 18446744073709551615ULL)
      .Num("p50_us", 12.345, 1).Bool("ok", true).Null("none").Raw("list", "[1,2]");
  EXPECT_EQ(j.str(),
            "{\"bench\":\"master\",\"batch\":-3,\"big\":18446744073709551615,"
            "\"p50_us\":12.3,\"ok\":true,\"none\":null,\"list\":[1,2]}");
}

TEST(JsonObject, EmptyAndNonFinite) {
  EXPECT_EQ(JsonObject().str(), "{}");
  JsonObject j;
  j.Num("x", 1.0 / 0.0).Num("y", 2.5e20, 1);
  EXPECT_EQ(j.str(), "{\"x\":null,\"y\":2.5e+20}");
}

TEST(JsonObject, EscapesNames) {
  JsonObject j;
  j.Str("a\"b", "v");
  EXPECT_EQ(j.str(), "{\"a\\\"b\":\"v\"}");
}

TEST(JsonArray, JoinsEncodedElements) {
  EXPECT_EQ(JsonArray(std::vector<std::string>{}), "[]");
  EXPECT_EQ(JsonArray(std::vector<std::string>{JsonQuote("a"), "1"}), "[\"a\",1]");
}

}  // namespace
}  // namespace shelfmark
