// XXH3 with AVX2 (this file alone is built with -mavx2; common/checksum.cc
// calls it only when the CPU has AVX2). It includes no C++ header: an
// inline function of one, emitted here with AVX2 code, could be the copy
// the linker keeps for every caller, and run on a CPU without AVX2.
#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#if !defined(__AVX2__)
#error "checksum_avx2.cc must be built with -mavx2"
#endif

namespace shelfmark {

uint64_t Checksum64Avx2(const void* data, size_t size) { return XXH3_64bits(data, size); }

void Checksum64UpdateAvx2(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

}  // namespace shelfmark
