#include "common/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

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

// The fused copy: the same checksum as of the bytes alone, and the bytes
// copied exactly, at sizes around the short/long boundary (240), a block
// (1 KiB) and its last stripe, and at misaligned addresses.
TEST(Checksum64, CopyChecksum64CopiesAndEqualsTheChecksumOfTheBytes) {
  std::string bytes(3 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 9));
  std::string out(bytes.size() + 64, '\x55');
  for (size_t size : {0ul, 1ul, 240ul, 241ul, 255ul, 1023ul, 1024ul, 1025ul, 1088ul, 1089ul,
                      65536ul, 65536ul + 1, 1000003ul, 3ul << 20}) {
    for (size_t offset : {0ul, 13ul}) {
      const size_t n = std::min(size, bytes.size() - offset);
      std::fill(out.begin(), out.end(), '\x55');
      EXPECT_EQ(CopyChecksum64(out.data() + 16, bytes.data() + offset, n),
                XXH3_64bits(bytes.data() + offset, n))
          << size << " " << offset;
      EXPECT_EQ(out.compare(16, n, bytes, offset, n), 0) << size;
      EXPECT_EQ(out[15], '\x55');
      EXPECT_EQ(out[16 + n], '\x55') << size;
    }
  }
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
