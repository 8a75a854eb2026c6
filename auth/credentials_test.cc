#include "auth/credentials.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace shelfmark::auth {
namespace {

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shelfmark-cred-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& f : files_) std::remove(f.c_str());
    ::rmdir(dir_.c_str());
    ::unsetenv("SHELFMARK_TEST_TOKEN");
  }
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    files_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(CredentialsTest, FileTokenIsTheFirstWordLineAfterComments) {
  std::string warning;
  auto t = ReadTokenFile(Write("a", "# cluster token\n\n  s3cret-token \n other\n"), &warning);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "s3cret-token");
  EXPECT_TRUE(warning.empty()) << warning;
}

TEST_F(CredentialsTest, FileErrorsAreTyped) {
  EXPECT_EQ(ReadTokenFile(dir_ + "/missing").error(), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(ReadTokenFile(dir_).error(), ErrorCode::FILE_READ_FAIL);  // a directory
  EXPECT_EQ(ReadTokenFile(Write("empty", "# only a comment\n")).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(ReadTokenFile(Write("two", "two words\n")).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(CredentialsTest, WorldReadableFileWarns) {
  std::string warning;
  auto t = ReadTokenFile(Write("open", "tok\n", 0644), &warning);
  ASSERT_TRUE(t.ok());
  EXPECT_NE(warning.find("readable by other users"), std::string::npos);
}

TEST_F(CredentialsTest, SourcesInOrderFileThenLiteralThenEnvironment) {
  ::setenv("SHELFMARK_TEST_TOKEN", "from-env", 1);
  std::string warning;
  TokenSources s{Write("f", "from-file\n"), "from-flag", "SHELFMARK_TEST_TOKEN"};
  EXPECT_EQ(*ResolveToken(s, &warning), "from-file");
  s.file.clear();
  EXPECT_EQ(*ResolveToken(s, &warning), "from-flag");
  EXPECT_NE(warning.find("ps"), std::string::npos) << "a literal token must be warned about";
  s.literal.clear();
  warning.clear();
  EXPECT_EQ(*ResolveToken(s, &warning), "from-env");
  EXPECT_TRUE(warning.empty());
  ::unsetenv("SHELFMARK_TEST_TOKEN");
  EXPECT_EQ(*ResolveToken(s, &warning), "");
  s.file = dir_ + "/missing";
  EXPECT_EQ(ResolveToken(s, &warning).error(), ErrorCode::FILE_NOT_FOUND);
}

}  // namespace
}  // namespace shelfmark::auth
