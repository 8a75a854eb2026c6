#include "common/mapped_range.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

constexpr std::string_view kMaps =
    "1000-3000 r-xp 00000000 08:01 42 /usr/bin/x\n"
    "3000-5000 rw-p 00000000 00:00 0\n"
    "5000-6000 r--p 00000000 00:00 0\n"
    "8000-9000 rw-s 00000000 00:05 7 /memfd:seg (deleted)\n"
    "9000-a000 ---p 00000000 00:00 0\n";

TEST(MapsCover, ReadsTheProtectionOfEveryMappingTheRangeCrosses) {
  EXPECT_TRUE(MapsCover(kMaps, 0x1000, 0x6000, RangeAccess::kRead));  // three adjacent lines
  EXPECT_TRUE(MapsCover(kMaps, 0x3000, 0x5000, RangeAccess::kReadWrite));
  EXPECT_TRUE(MapsCover(kMaps, 0x3100, 0x3200, RangeAccess::kReadWrite));
  EXPECT_TRUE(MapsCover(kMaps, 0x8000, 0x9000, RangeAccess::kReadWrite));
  EXPECT_FALSE(MapsCover(kMaps, 0x2000, 0x4000, RangeAccess::kReadWrite));  // r-x part
  EXPECT_FALSE(MapsCover(kMaps, 0x4000, 0x5001, RangeAccess::kReadWrite));  // r-- part
  EXPECT_FALSE(MapsCover(kMaps, 0x5000, 0x8001, RangeAccess::kRead));       // the hole 6000-8000
  EXPECT_FALSE(MapsCover(kMaps, 0x6000, 0x6001, RangeAccess::kRead));
  EXPECT_FALSE(MapsCover(kMaps, 0x9000, 0x9001, RangeAccess::kRead));  // PROT_NONE
  EXPECT_FALSE(MapsCover(kMaps, 0x0, 0x1001, RangeAccess::kRead));     // below the first
  EXPECT_FALSE(MapsCover(kMaps, 0x9fff, 0xa001, RangeAccess::kRead));  // past the last
}

TEST(MapsCover, EdgeCases) {
  EXPECT_TRUE(MapsCover(kMaps, 0x7000, 0x7000, RangeAccess::kReadWrite));  // empty
  EXPECT_FALSE(MapsCover(kMaps, 0x3001, 0x3000, RangeAccess::kRead));
  EXPECT_FALSE(MapsCover("", 0x1000, 0x1001, RangeAccess::kRead));
  EXPECT_FALSE(MapsCover("not a maps line\n3000-5000 rw-p 0 0 0\n", 0x3000, 0x3001,
                         RangeAccess::kRead));
  EXPECT_FALSE(MapsCover("3000-5000\n", 0x3000, 0x3001, RangeAccess::kRead));
  EXPECT_FALSE(MapsCover("5000-3000 rw-p 0 0 0\n", 0x3000, 0x3001, RangeAccess::kRead));
  EXPECT_TRUE(MapsCover("3000-5000 rw-p 0 0 0", 0x3000, 0x5000, RangeAccess::kReadWrite));  // no \n
}

class MappedWithTest : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    void* p = ::mmap(nullptr, 4 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    base_ = static_cast<uint8_t*>(p);
  }
  void TearDown() override { ::munmap(base_, 4 * page_); }
  uint8_t* base_ = nullptr;
  size_t page_ = 0;
};

TEST_F(MappedWithTest, AMappingOfThisProcess) {
  EXPECT_TRUE(MappedWith(base_, 4 * page_, RangeAccess::kReadWrite));
  EXPECT_TRUE(MappedWith(base_ + 1, 10, RangeAccess::kReadWrite));
  std::vector<char> heap(1000);
  EXPECT_TRUE(MappedWith(heap.data(), heap.size(), RangeAccess::kReadWrite));
  static const char kText[] = "read-only data";
  EXPECT_TRUE(MappedWith(kText, sizeof(kText), RangeAccess::kRead));
  EXPECT_FALSE(MappedWith(kText, sizeof(kText), RangeAccess::kReadWrite));
}

TEST_F(MappedWithTest, UnmappedPagesAreRefused) {
  ASSERT_EQ(::munmap(base_ + page_, page_), 0);
  EXPECT_TRUE(MappedWith(base_, page_, RangeAccess::kReadWrite));
  EXPECT_FALSE(MappedWith(base_ + page_, 1, RangeAccess::kRead));
  EXPECT_FALSE(MappedWith(base_, 4 * page_, RangeAccess::kRead));  // a hole inside
  EXPECT_FALSE(MappedWith(base_ + page_ - 1, 2, RangeAccess::kRead));
  EXPECT_TRUE(MappedWith(base_ + 2 * page_, 2 * page_, RangeAccess::kReadWrite));
}

TEST_F(MappedWithTest, ProtectionIsRespected) {
  ASSERT_EQ(::mprotect(base_ + page_, page_, PROT_READ), 0);
  ASSERT_EQ(::mprotect(base_ + 2 * page_, page_, PROT_NONE), 0);
  EXPECT_TRUE(MappedWith(base_ + page_, page_, RangeAccess::kRead));
  EXPECT_FALSE(MappedWith(base_ + page_, page_, RangeAccess::kReadWrite));
  EXPECT_FALSE(MappedWith(base_, 2 * page_, RangeAccess::kReadWrite));
  EXPECT_FALSE(MappedWith(base_ + 2 * page_, 1, RangeAccess::kRead));
  EXPECT_TRUE(MappedWith(base_ + 3 * page_, page_, RangeAccess::kReadWrite));
}

// Hundreds of mappings (protections alternate, so none merge): the maps
// file spans many reads, and lines cut between two reads are joined.
TEST(MappedWith, EveryMappingOfALongMapsFile) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<uint8_t*> pages;
  for (int i = 0; i < 400; ++i) {
    void* p = ::mmap(nullptr, page, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    pages.push_back(static_cast<uint8_t*>(p));
  }
  for (size_t i = 0; i < pages.size(); ++i) {
    EXPECT_TRUE(MappedWith(pages[i], page, RangeAccess::kRead)) << i;
    EXPECT_EQ(MappedWith(pages[i], page, RangeAccess::kReadWrite), i % 2 == 0) << i;
  }
  for (uint8_t* p : pages) ::munmap(p, page);
  EXPECT_FALSE(MappedWith(pages[0], page, RangeAccess::kRead));
}

TEST(MappedWith, BadRanges) {
  EXPECT_FALSE(MappedWith(nullptr, 1, RangeAccess::kRead));
  EXPECT_FALSE(MappedWith(reinterpret_cast<void*>(0x1000), 16, RangeAccess::kRead));
  const char c = 0;
  EXPECT_FALSE(MappedWith(&c, UINT64_MAX, RangeAccess::kRead));  // wraps
}

}  // namespace
}  // namespace shelfmark
