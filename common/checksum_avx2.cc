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

// xxhash's XXH3_hashLong_64b_internal (default secret) with a copy folded
// in: each 64-byte stripe is stored to dst and hashed from there at once
// (store-to-load forwarding, L1), so the bytes are read from memory once and
// the checksum is of the bytes the caller gets. checksum_test.cc checks it
// against XXH3_64bits at every size class.
uint64_t CopyChecksum64Avx2(void* dst, const void* src, size_t size) {
  xxh_u8* d = static_cast<xxh_u8*>(dst);
  const xxh_u8* s = static_cast<const xxh_u8*>(src);
  if (size <= XXH3_MIDSIZE_MAX) {  // short inputs hash otherwise, and cost nothing
    if (size > 0) __builtin_memcpy(d, s, size);
    return XXH3_64bits(d, size);
  }
  XXH_ALIGN(XXH_ACC_ALIGN) xxh_u64 acc[XXH_ACC_NB] = XXH3_INIT_ACC;
  const xxh_u8* secret = XXH3_kSecret;
  const size_t secret_size = sizeof(XXH3_kSecret);
  const size_t stripes_per_block = (secret_size - XXH_STRIPE_LEN) / XXH_SECRET_CONSUME_RATE;
  const size_t block_len = XXH_STRIPE_LEN * stripes_per_block;
  const size_t blocks = (size - 1) / block_len;
  size_t at = 0;
  auto stripe = [&](size_t k) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at + 32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + at), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + at + 32), b);
    XXH3_accumulate_512_avx2(acc, d + at, secret + k * XXH_SECRET_CONSUME_RATE);
    at += XXH_STRIPE_LEN;
  };
  for (size_t n = 0; n < blocks; ++n) {
    for (size_t k = 0; k < stripes_per_block; ++k) stripe(k);
    XXH3_scrambleAcc_avx2(acc, secret + secret_size - XXH_STRIPE_LEN);
  }
  const size_t last_stripes = ((size - 1) - block_len * blocks) / XXH_STRIPE_LEN;
  for (size_t k = 0; k < last_stripes; ++k) stripe(k);
  __builtin_memcpy(d + at, s + at, size - at);  // 1 to 64 bytes
  XXH3_accumulate_512_avx2(acc, d + size - XXH_STRIPE_LEN,
                           secret + secret_size - XXH_STRIPE_LEN - XXH_SECRET_LASTACC_START);
  return XXH3_mergeAccs(acc, secret + XXH_SECRET_MERGEACCS_START,
                        static_cast<xxh_u64>(size) * XXH_PRIME64_1);
}

void Checksum64UpdateAvx2(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

}  // namespace shelfmark
