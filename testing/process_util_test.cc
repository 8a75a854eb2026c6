#include "testing/process_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "testing/temp_dir.h"

namespace shelfmark::testing {
namespace {

TEST(Files, WriteFileThenReadFileRoundTripsBinaryBytes) {
  TempDir dir("process_util_test");
  const std::string bytes("a\0b\r\n\xff", 6);
  WriteFile(dir.Join("f"), bytes);
  EXPECT_EQ(ReadFile(dir.Join("f")), bytes);
  WriteFile(dir.Join("f"), "shorter");  // replaced, not appended
  EXPECT_EQ(ReadFile(dir.Join("f")), "shorter");
  EXPECT_EQ(ReadFile(dir.Join("missing")), "");
}

TEST(Files, LogTailsShowsTheMatchingFilesByNameWithTheirLastBytes) {
  TempDir dir("process_util_test");
  WriteFile(dir.Join("b.log"), "0123456789");
  WriteFile(dir.Join("a.log"), "first");
  WriteFile(dir.Join("c.data"), "not a log");
  std::filesystem::create_directory(dir.Join("d.log"));  // not a file
  EXPECT_EQ(LogTails(dir.path(), ".log", 4), "--- a.log ---\n...irst\n--- b.log ---\n...6789\n");
  EXPECT_EQ(LogTails(dir.path(), ".log"), "--- a.log ---\nfirst\n--- b.log ---\n0123456789\n");
  EXPECT_EQ(LogTails(dir.Join("missing"), ".log"), "");
}

}  // namespace
}  // namespace shelfmark::testing
