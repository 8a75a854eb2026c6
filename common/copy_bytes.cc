#include "common/copy_bytes.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace shelfmark {
namespace {

// Below this size memcpy's own choice (vector moves) is as fast.
constexpr size_t kLoopMinBytes = 4096;

#if defined(__x86_64__)
// Copies whole 64-byte lines from s to d while 64 bytes remain; returns
// the bytes copied. Streaming stores need d aligned to 16 bytes.
template <bool kStream>
size_t CopyLines(uint8_t* d, const uint8_t* s, size_t size) {
  size_t i = 0;
  for (; i + 64 <= size; i += 64) {
    __m128i v[4];
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16 * k));
    }
    for (int k = 0; k < 4; ++k) {
      auto* to = reinterpret_cast<__m128i*>(d + i + 16 * k);
      if constexpr (kStream) {
        _mm_stream_si128(to, v[k]);
      } else {
        _mm_storeu_si128(to, v[k]);
      }
    }
  }
  return i;
}
#endif

}  // namespace

void CopyBytes(void* dst, const void* src, size_t size) {
#if defined(__x86_64__)
  if (size >= kLoopMinBytes) {
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(src);
    const size_t i = CopyLines<false>(d, s, size);
    std::memcpy(d + i, s + i, size - i);
    return;
  }
#endif
  if (size > 0) std::memcpy(dst, src, size);
}

void StreamBytes(void* dst, const void* src, size_t size) {
#if defined(__x86_64__)
  if (size >= kLoopMinBytes) {
    auto* d = static_cast<uint8_t*>(dst);
    const auto* s = static_cast<const uint8_t*>(src);
    // The head up to a line boundary of d: streamed lines are whole lines.
    const size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
    std::memcpy(d, s, head);
    const size_t i = head + CopyLines<true>(d + head, s + head, size - head);
    std::memcpy(d + i, s + i, size - i);
    _mm_sfence();
    return;
  }
#endif
  CopyBytes(dst, src, size);
}

}  // namespace shelfmark
