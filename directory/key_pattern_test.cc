// KeyPattern: POSIX ERE search semantics over keys, and the bounds that keep
// hostile patterns cheap.
#include "directory/key_pattern.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark {
namespace {

bool Match(std::string_view pattern, std::string_view key) {
  Result<KeyPattern> p = KeyPattern::Compile(pattern);
  EXPECT_TRUE(p.ok()) << pattern;
  return p.ok() && p->Matches(key);
}

ErrorCode Refusal(std::string_view pattern) { return KeyPattern::Compile(pattern).error(); }

TEST(KeyPatternTest, SearchesAnywhereInTheKey) {
  EXPECT_TRUE(Match("layer", "model/layer/3"));
  EXPECT_TRUE(Match("^model/", "model/layer/3"));
  EXPECT_FALSE(Match("^layer", "model/layer/3"));
  EXPECT_TRUE(Match("[0-9]$", "model/layer/3"));
  EXPECT_FALSE(Match("[0-9]$", "model/layer/x"));
  EXPECT_TRUE(Match("a|^z", "zebra"));
  EXPECT_TRUE(Match("^(ab)+$", "ababab"));
  EXPECT_FALSE(Match("^(ab)+$", "ababa"));
  EXPECT_TRUE(Match("x{2,3}", "axxb"));
  EXPECT_TRUE(Match("[[:digit:]]", "a1"));
  EXPECT_TRUE(Match("\\)", "a)"));
}

TEST(KeyPatternTest, KeysAreBytesNulsIncluded) {
  const std::string key("x\0abc", 5);
  EXPECT_TRUE(Match("abc", key));
  EXPECT_TRUE(Match("^x", key));
  EXPECT_FALSE(Match("x.a", key)) << "'.' matches every byte but NUL";
  EXPECT_TRUE(Match("x[^b]a", key));
}

TEST(KeyPatternTest, EcmaScriptOnlySyntaxIsNotSupported) {
  EXPECT_FALSE(Match("\\d", "7")) << "no \\d in POSIX ERE: use [0-9]";
  EXPECT_TRUE(Match("[0-9]", "7"));
}

TEST(KeyPatternTest, RefusesBadAndHostilePatterns) {
  EXPECT_EQ(Refusal(""), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal(std::string(KeyPattern::kMaxPatternBytes + 1, 'a')), ErrorCode::INVALID_PARAMS);
  EXPECT_TRUE(KeyPattern::Compile(std::string(KeyPattern::kMaxPatternBytes, 'a')).ok());
  EXPECT_EQ(Refusal(std::string("a\0b", 3)), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("(a)\\1"), ErrorCode::INVALID_PARAMS) << "back-references backtrack";
  EXPECT_EQ(Refusal("(a"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("a)|b"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("[a"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("*a"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("a{256}"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("(a{255}){255}"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Refusal("((((a{9}){9}){9}){9})"), ErrorCode::INVALID_PARAMS);
  EXPECT_TRUE(KeyPattern::Compile("a{255}").ok());
}

TEST(KeyPatternTest, ExpandedAtomsCountsCopiesOfRepeatedOperands) {
  EXPECT_EQ(*ExpandedAtoms("abc"), 3u);
  EXPECT_EQ(*ExpandedAtoms("a{4}b"), 5u);
  EXPECT_EQ(*ExpandedAtoms("(ab){3}"), 9u);  // the group counts one atom more
  EXPECT_EQ(*ExpandedAtoms("a{2,}"), 3u);
  EXPECT_EQ(*ExpandedAtoms("[]{}]{3}"), 3u) << "a bracket is one atom";
  EXPECT_EQ(*ExpandedAtoms("((a{100}){100})"), KeyPattern::kMaxExpandedAtoms + 1);
  EXPECT_EQ(ExpandedAtoms("\\3").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ExpandedAtoms("a{1000}").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ExpandedAtoms(")").error(), ErrorCode::INVALID_PARAMS);
}

TEST(KeyPatternTest, PathologicalPatternsOverLongKeysFinish) {
  // Exponential for a backtracking matcher, quadratic for an unanchored
  // glibc search: the compiled form makes one pass per key.
  const std::string key(4096, 'a');
  for (const char* pattern : {"(a|aa)*b", "(a*)*b", "((a|aa)*)*(a|aa)*b", "(.*a){20}b"}) {
    Result<KeyPattern> p = KeyPattern::Compile(pattern);
    ASSERT_TRUE(p.ok()) << pattern;
    for (int i = 0; i < 200; ++i) ASSERT_FALSE(p->Matches(key)) << pattern;
  }
}

}  // namespace
}  // namespace shelfmark
