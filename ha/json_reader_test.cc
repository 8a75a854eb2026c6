#include "ha/json_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ha/base64.h"

namespace shelfmark::ha {
namespace {

TEST(JsonReader, ReadsEtcdShapedReplies) {
  auto v = ParseJson(R"({"header":{"revision":"12"},"kvs":[{"key":"YQ==","lease":7}],
                        "more":false,"n":null, "s":"a\"\\\/\n\u00e9\ud83d\ude00"})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*JsonInt64(v->Find("header")->Find("revision")), 12);
  EXPECT_EQ(*JsonInt64(v->Find("kvs")->items[0].Find("lease")), 7);
  EXPECT_EQ(*JsonInt64(v->Find("absent")), 0);
  EXPECT_FALSE(*JsonBool(v->Find("more")));
  EXPECT_EQ(v->Find("n")->type, JsonValue::Type::kNull);
  EXPECT_EQ(v->Find("s")->text, "a\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v->Find("nope"), nullptr);
  EXPECT_EQ(v->Find("s")->Find("x"), nullptr);  // not an object
}

TEST(JsonReader, RefusesEveryKindOfGarbage) {
  for (std::string bad : std::vector<std::string>{"", " ", "{", "}", "[1,]", "{\"a\"}", "{\"a\":}", "{a:1}", "\"abc", "\"\\x\"",
        "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\nb\"", "01", "-", "1.", "1e", "+1",
        "tru", "nul", "[1] [2]", "{\"a\":1,}", std::string("\"\0\"", 3), "\xff"}) {
    EXPECT_EQ(ParseJson(bad).error(), ErrorCode::DATA_CORRUPTED) << bad;
  }
}

TEST(JsonReader, LimitsSizeDepthAndCount) {
  EXPECT_EQ(ParseJson(std::string(100'000, '[')).error(), ErrorCode::DATA_CORRUPTED);
  JsonLimits limits;
  limits.max_depth = 2;
  EXPECT_TRUE(ParseJson("[[1]]", limits).ok());
  EXPECT_EQ(ParseJson("[[[1]]]", limits).error(), ErrorCode::DATA_CORRUPTED);
  limits = JsonLimits();
  limits.max_bytes = 4;
  EXPECT_EQ(ParseJson("[1,2]", limits).error(), ErrorCode::DATA_CORRUPTED);
  limits = JsonLimits();
  limits.max_values = 3;
  EXPECT_TRUE(ParseJson("[1,2]", limits).ok());
  EXPECT_EQ(ParseJson("[1,2,3]", limits).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(JsonReader, Int64IsStrict) {
  auto v = ParseJson(R"(["9223372036854775807","9223372036854775808",1.5,"x","",-3,true,"1e3"])");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*JsonInt64(&v->items[0]), INT64_MAX);
  for (size_t i : {1, 2, 3, 4, 6, 7}) {
    EXPECT_EQ(JsonInt64(&v->items[i]).error(), ErrorCode::DATA_CORRUPTED) << i;
  }
  EXPECT_EQ(*JsonInt64(&v->items[5]), -3);
  EXPECT_EQ(JsonBool(&v->items[0]).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(JsonReader, WriteReadsBackTheSame) {
  const std::string text = "{\"a\":[1,-2.5e+3,\"x\\u0001\\\"\",null,true,{}],\"\xff\":\"\"}";
  auto v = ParseJson(text);
  ASSERT_TRUE(v.ok());
  const std::string once = WriteJson(*v);
  auto again = ParseJson(once);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(WriteJson(*again), once);
  EXPECT_EQ(again->members[1].name, "\xff");
}

TEST(Base64, RoundTripsAndRefusesNonCanonicalText) {
  for (std::string s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff", 2)}) {
    auto back = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(back.has_value()) << s;
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  for (const char* bad : {"Zm8", "Zm9=", "Z===", "====", "Zm8=Zm8=", "Zm!v", "Zg=a"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace shelfmark::ha
