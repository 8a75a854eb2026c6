#include "testing/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace shelfmark::testing {
namespace {

TEST(TempDir, FreshPrivateAndRemovedWithItsContents) {
  std::string path;
  {
    TempDir a("tempdir_test");
    TempDir b("tempdir_test");
    path = a.path();
    ASSERT_FALSE(path.empty());
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_TRUE(std::filesystem::is_empty(path));
    EXPECT_EQ(path.front(), '/');
    EXPECT_NE(path.find("shelfmark_tempdir_test_"), std::string::npos);
    EXPECT_EQ(a.Join("x"), path + "/x");
    std::filesystem::create_directories(a.Join("sub/dir"));
    std::ofstream(a.Join("sub/dir/file")) << "bytes";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace shelfmark::testing
