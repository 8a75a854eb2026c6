// Directory::RemoveByRegex: RemoveAll's removal rules over the keys a POSIX
// ERE matches, in one tenant; hostile patterns refused or cheap.
#include <string>

#include "directory/directory.h"
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

class RemoveByRegexTest : public DirectoryFixture {
 protected:
  void SetUp() override { Mount(node_, "seg-a", 8 << 20); }

  std::vector<std::string> Keys(const std::string& tenant = "") {
    return dir_->ListKeys(tenant, "", 1000);
  }
};

TEST_F(RemoveByRegexTest, RemovesOnlyMatchingKeys) {
  for (const char* key : {"run1/layer0", "run1/layer1", "run2/layer0", "xrun1/layer9"}) {
    ASSERT_EQ(Put(key), ErrorCode::OK);
  }
  auto removed = dir_->RemoveByRegex("", "^run1/layer[0-9]$", false);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 2u);
  EXPECT_EQ(Keys(), (std::vector<std::string>{"run2/layer0", "xrun1/layer9"}));
  removed = dir_->RemoveByRegex("", "run1", false);  // a search: anywhere in the key
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  EXPECT_EQ(Keys(), (std::vector<std::string>{"run2/layer0"}));
  EXPECT_EQ(*dir_->RemoveByRegex("", "nothing", false), 0u);
  EXPECT_EQ(dir_->Stats().key_count, 1u);
}

TEST_F(RemoveByRegexTest, FollowsRemoveAllsLeaseAndForceRules) {
  for (int i = 0; i < 4; ++i) ASSERT_EQ(Put("k" + std::to_string(i)), ErrorCode::OK);
  ASSERT_TRUE(dir_->GetReplicaList("", "k1").ok());  // leased
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k9", 100, {}).ok());  // mid-put
  EXPECT_EQ(*dir_->RemoveByRegex("", "^k", false), 3u);
  EXPECT_EQ(Keys(), (std::vector<std::string>{"k1", "k9"}));
  EXPECT_EQ(*dir_->RemoveByRegex("", "^k", true), 2u);
  EXPECT_EQ(dir_->Stats().key_count, 0u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(RemoveByRegexTest, StaysInItsTenant) {
  ASSERT_EQ(Put("k", 100, {}, "t1"), ErrorCode::OK);
  ASSERT_EQ(Put("k", 100, {}, "t2"), ErrorCode::OK);
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  EXPECT_EQ(*dir_->RemoveByRegex("t1", "k", false), 1u);
  EXPECT_EQ(Keys("t1").size(), 0u);
  EXPECT_EQ(Keys("t2").size(), 1u);
  EXPECT_EQ(Keys("").size(), 1u);
  EXPECT_EQ(*dir_->RemoveByRegex("default", "k", false), 1u) << "\"\" is \"default\"";
  EXPECT_EQ(Keys("t2").size(), 1u);
}

TEST_F(RemoveByRegexTest, InvalidPatternsAndTenantsAreTypedErrors) {
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  for (const std::string& bad : {std::string(), std::string(257, 'k'), std::string("k\0", 2),
                                 std::string("(k)\\1"), std::string("(k"), std::string("k{1000}")}) {
    EXPECT_EQ(dir_->RemoveByRegex("", bad, true).error(), ErrorCode::INVALID_PARAMS) << bad;
  }
  EXPECT_EQ(dir_->RemoveByRegex(std::string(300, 't'), "k", true).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->Stats().key_count, 1u);
}

TEST_F(RemoveByRegexTest, APathologicalPatternOverLongKeysFinishes) {
  // (a|aa)*b backtracks exponentially in std::regex; here every key is
  // scanned once and none matches.
  for (int i = 0; i < 100; ++i) {
    std::string key(4096, 'a');
    key.replace(0, 4, std::to_string(1000 + i));
    ASSERT_EQ(Put(key), ErrorCode::OK);
  }
  auto removed = dir_->RemoveByRegex("", "(a|aa)*b", true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 0u);
  EXPECT_EQ(dir_->Stats().key_count, 100u);
  EXPECT_EQ(*dir_->RemoveByRegex("", "^1[0-9]{3}(a|aa)*$", true), 100u);
}

}  // namespace
}  // namespace shelfmark
