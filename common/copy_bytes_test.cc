#include "common/copy_bytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace shelfmark {
namespace {

// Every size class (memcpy's below the loop, the loop with and without a
// tail) at source and destination offsets that differ in alignment; the
// bytes around the destination range stay untouched.
TEST(CopyBytes, BothCopiesCopyExactlyTheRangeAtAnyAlignmentAndSize) {
  std::vector<uint8_t> src(70000), dst(70100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 8));
  for (bool streaming : {false, true}) {
    for (size_t size : {0ul, 1ul, 63ul, 4095ul, 4096ul, 4097ul, 65536ul, 65536ul + 37}) {
      for (size_t src_off : {0ul, 1ul, 16ul}) {
        for (size_t dst_off : {0ul, 7ul, 48ul}) {
          std::fill(dst.begin(), dst.end(), 0xEE);
          (streaming ? StreamBytes : CopyBytes)(dst.data() + dst_off, src.data() + src_off, size);
          for (size_t i = 0; i < size; ++i) {
            ASSERT_EQ(dst[dst_off + i], src[src_off + i]) << size << " " << src_off << " " << i;
          }
          for (size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], 0xEE);
          for (size_t i = dst_off + size; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xEE) << size;
        }
      }
    }
  }
}

}  // namespace
}  // namespace shelfmark
