#include "common/checksum.h"

#include "common/copy_bytes.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shelfmark {

#if defined(__x86_64__)
// checksum_avx2.cc, built with -mavx2: call only when the CPU has AVX2.
uint64_t Checksum64Avx2(const void* data, size_t size);
void Checksum64UpdateAvx2(void* state, const void* data, size_t size);
uint64_t CopyChecksum64Avx2(void* dst, const void* src, size_t size, bool stream);
#define SHELFMARK_CHECKSUM_AVX2 1
#endif

namespace {

static_assert(sizeof(XXH3_state_t) == Checksum64Stream::kStateBytes);
static_assert(alignof(XXH3_state_t) <= 64);

#if defined(SHELFMARK_CHECKSUM_AVX2)
bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}
#endif

XXH3_state_t* State(unsigned char* bytes) { return reinterpret_cast<XXH3_state_t*>(bytes); }

}  // namespace

uint64_t Checksum64(const void* data, size_t size) {
#if defined(SHELFMARK_CHECKSUM_AVX2)
  if (HaveAvx2()) return Checksum64Avx2(data, size);
#endif
  return XXH3_64bits(data, size);
}

uint64_t CopyChecksum64(void* dst, const void* src, size_t size) {
#if defined(SHELFMARK_CHECKSUM_AVX2)
  if (HaveAvx2()) return CopyChecksum64Avx2(dst, src, size, false);
#endif
  CopyBytes(dst, src, size);
  return Checksum64(dst, size);
}

uint64_t StreamChecksum64(void* dst, const void* src, size_t size) {
#if defined(SHELFMARK_CHECKSUM_AVX2)
  if (HaveAvx2()) return CopyChecksum64Avx2(dst, src, size, true);
#endif
  StreamBytes(dst, src, size);
  return Checksum64(src, size);  // the same bytes, not read back from dst
}

Checksum64Stream::Checksum64Stream() { XXH3_64bits_reset(State(state_)); }

void Checksum64Stream::Update(const void* data, size_t size) {
#if defined(SHELFMARK_CHECKSUM_AVX2)
  if (HaveAvx2()) {
    Checksum64UpdateAvx2(state_, data, size);
    return;
  }
#endif
  XXH3_64bits_update(State(state_), data, size);
}

uint64_t Checksum64Stream::Digest() const {
  // The digest folds the last partial stripe with the baseline code: same
  // value whichever code filled the state.
  return XXH3_64bits_digest(reinterpret_cast<const XXH3_state_t*>(state_));
}

}  // namespace shelfmark
