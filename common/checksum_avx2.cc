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

namespace {

// xxhash's XXH3_hashLong_64b_internal (default secret) with a copy folded
// in: each 64-byte stripe is loaded once, stored to dst and hashed at once
// from dst (store-to-load forwarding, L1), so the bytes are read from
// memory once and the checksum is of the bytes stored. kStream: the stores
// to dst are non-temporal (dst 32-byte aligned; the caller fences), so the
// stripe is hashed from a stack copy of what was stored, never read back
// from dst. checksum_test.cc checks both against XXH3_64bits at every size.
template <bool kStream>
uint64_t CopyChecksumLong(xxh_u8* d, const xxh_u8* s, size_t size) {
  XXH_ALIGN(XXH_ACC_ALIGN) xxh_u64 acc[XXH_ACC_NB] = XXH3_INIT_ACC;
  XXH_ALIGN(32) xxh_u8 line[XXH_STRIPE_LEN];
  const xxh_u8* secret = XXH3_kSecret;
  const size_t secret_size = sizeof(XXH3_kSecret);
  const size_t stripes_per_block = (secret_size - XXH_STRIPE_LEN) / XXH_SECRET_CONSUME_RATE;
  const size_t block_len = XXH_STRIPE_LEN * stripes_per_block;
  const size_t blocks = (size - 1) / block_len;
  size_t at = 0;
  auto stripe = [&](size_t k) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at + 32));
    const xxh_u8* hashed = d + at;
    if constexpr (kStream) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + at), a);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + at + 32), b);
      _mm256_store_si256(reinterpret_cast<__m256i*>(line), a);
      _mm256_store_si256(reinterpret_cast<__m256i*>(line + 32), b);
      hashed = line;
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + at), a);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + at + 32), b);
    }
    XXH3_accumulate_512_avx2(acc, hashed, secret + k * XXH_SECRET_CONSUME_RATE);
    at += XXH_STRIPE_LEN;
  };
  for (size_t n = 0; n < blocks; ++n) {
    for (size_t k = 0; k < stripes_per_block; ++k) stripe(k);
    XXH3_scrambleAcc_avx2(acc, secret + secret_size - XXH_STRIPE_LEN);
  }
  const size_t last_stripes = ((size - 1) - block_len * blocks) / XXH_STRIPE_LEN;
  for (size_t k = 0; k < last_stripes; ++k) stripe(k);
  // The last stripe (the input's last 64 bytes) is hashed from a copy of
  // the source; its 1 to 64 bytes not yet stored are stored from that copy.
  __builtin_memcpy(line, s + size - XXH_STRIPE_LEN, XXH_STRIPE_LEN);
  __builtin_memcpy(d + at, line + XXH_STRIPE_LEN - (size - at), size - at);
  XXH3_accumulate_512_avx2(acc, line,
                           secret + secret_size - XXH_STRIPE_LEN - XXH_SECRET_LASTACC_START);
  return XXH3_mergeAccs(acc, secret + XXH_SECRET_MERGEACCS_START,
                        static_cast<xxh_u64>(size) * XXH_PRIME64_1);
}

}  // namespace

// `stream`: non-temporal stores where dst allows them (32-byte aligned),
// fenced before the return.
uint64_t CopyChecksum64Avx2(void* dst, const void* src, size_t size, bool stream) {
  xxh_u8* d = static_cast<xxh_u8*>(dst);
  const xxh_u8* s = static_cast<const xxh_u8*>(src);
  if (size <= XXH3_MIDSIZE_MAX) {  // short inputs hash otherwise, and cost nothing
    if (size > 0) __builtin_memcpy(d, s, size);
    return XXH3_64bits(d, size);
  }
  if (!stream || (reinterpret_cast<uintptr_t>(d) & 31) != 0) {
    return CopyChecksumLong<false>(d, s, size);
  }
  const uint64_t checksum = CopyChecksumLong<true>(d, s, size);
  _mm_sfence();
  return checksum;
}

void Checksum64UpdateAvx2(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

}  // namespace shelfmark
