#include "common/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shelfmark {
namespace {

// Sizes around every XXH3 path boundary (0, 16, 128, 240 bytes, the 1 KiB
// stripe block, the 4 KiB-ish block) and large ones; the dispatched code
// (AVX2 here when the CPU has it) must give xxhash's baseline value.
TEST(Checksum64, EqualsXxh3OfTheBytesAtEverySize) {
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 9));
  for (size_t size : {0ul, 1ul, 3ul, 16ul, 17ul, 128ul, 129ul, 240ul, 241ul, 1023ul, 1024ul,
                      1025ul, 4095ul, 65536ul, 1000003ul, 3ul << 20}) {
    EXPECT_EQ(Checksum64(bytes.data(), size), XXH3_64bits(bytes.data(), size)) << size;
  }
  EXPECT_NE(Checksum64("a"), Checksum64("b"));
}

// A fused copy (CopyChecksum64 or StreamChecksum64): the same checksum as
// of the bytes alone, and the bytes copied exactly (not one byte around
// them touched), at every size up to 5000 (the short/long boundary at 240,
// a block at 1 KiB and its last stripe), at 1 and 3 MiB, from sources and
// into destinations at 64-byte aligned, 32-byte aligned, 16-byte aligned
// and odd addresses (a streamed copy streams into a 32-byte aligned one
// stripe by stripe, into a 16-byte aligned one in halves of two stripes,
// into an odd one not at all).
void ExpectCopiesAndChecksums(uint64_t (*copy)(void*, const void*, size_t)) {
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 9));
  std::string out(bytes.size() + 256, '\x55');
  const size_t aligned = (64 - (reinterpret_cast<uintptr_t>(out.data()) & 63)) & 63;
  std::vector<size_t> sizes;
  for (size_t size = 0; size <= 5000; ++size) sizes.push_back(size);
  sizes.insert(sizes.end(), {1ul << 20, (1ul << 20) + 1, 3ul << 20});
  for (size_t size : sizes) {
    for (size_t src_offset : {0ul, 13ul}) {
      for (size_t dst_offset : {64ul, 96ul, 80ul, 77ul}) {
        const size_t n = std::min(size, bytes.size() - src_offset);
        char* dst = out.data() + aligned + dst_offset;
        const char* src = bytes.data() + src_offset;
        dst[-1] = dst[n] = '\x55';
        ASSERT_EQ(copy(dst, src, n), XXH3_64bits(src, n)) << size << " " << dst_offset;
        ASSERT_EQ(std::memcmp(dst, src, n), 0) << size << " " << dst_offset;
        ASSERT_EQ(dst[-1], '\x55') << size;
        ASSERT_EQ(dst[n], '\x55') << size;
      }
    }
  }
}

TEST(Checksum64, CopyChecksum64CopiesAndEqualsTheChecksumOfTheBytes) {
  ExpectCopiesAndChecksums(CopyChecksum64);
}

TEST(Checksum64, StreamChecksum64CopiesAndEqualsTheChecksumOfTheBytes) {
  ExpectCopiesAndChecksums(StreamChecksum64);
}

TEST(Checksum64, AStreamOfPiecesEqualsTheWhole) {
  std::string bytes(1 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 1);
  for (size_t cut : {0ul, 1ul, 100ul, 4096ul, 65535ul, 1ul << 19}) {
    Checksum64Stream stream;
    stream.Update(bytes.data(), cut);
    stream.Update(bytes.data() + cut, 3);
    stream.Update(bytes.data() + cut + 3, bytes.size() - cut - 3);
    EXPECT_EQ(stream.Digest(), Checksum64(bytes)) << cut;
  }
  EXPECT_EQ(Checksum64Stream().Digest(), Checksum64("", 0));
}

}  // namespace
}  // namespace shelfmark
