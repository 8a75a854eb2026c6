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

// Where a fused copy's stores go (StripeStore).
enum class Store { kCached, kStream32, kStream16 };

// How stripes are stored into dst: cached stores at any address, or
// non-temporal ones into a 32-byte (kStream32) or a 16-byte (kStream16: a
// malloc'ed buffer, a numpy array 16 bytes past a page) aligned dst. The
// latter stores 32-byte aligned halves of two stripes (16-byte streamed
// stores each cut a line in two and run about 20% slower): each stripe
// stores its first 16 bytes with the previous stripe's last 16 (the first
// stripe's alone), so its own last 16 wait in `carry` for Finish.
template <Store kStore>
class StripeStore {
 public:
  [[gnu::always_inline]] void Put(xxh_u8* d, size_t at, __m256i a, __m256i b) {
    if constexpr (kStore == Store::kCached) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + at), a);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + at + 32), b);
    } else if constexpr (kStore == Store::kStream32) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + at), a);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + at + 32), b);
    } else {
      if (at == 0) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(a));
      } else {
        _mm256_stream_si256(
            reinterpret_cast<__m256i*>(d + at - 16),
            _mm256_inserti128_si256(_mm256_castsi128_si256(carry_), _mm256_castsi256_si128(a), 1));
      }
      _mm256_stream_si256(reinterpret_cast<__m256i*>(d + at + 16),
                          _mm256_permute2x128_si256(a, b, 0x21));
      carry_ = _mm256_extracti128_si256(b, 1);
    }
  }
  // Stores what Put left pending; `at`: the bytes Put was given (> 0).
  [[gnu::always_inline]] void Finish(xxh_u8* d, size_t at) {
    if constexpr (kStore == Store::kStream16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + at - 16), carry_);
    }
  }

 private:
  __m128i carry_ = _mm_setzero_si128();
};

// XXH3_accumulate_512_avx2 of the stripe held in (a, b): the same
// arithmetic on registers, so the stripe hashed is the one stored, with no
// read back from dst or from a stack copy.
XXH_FORCE_INLINE void AccumulateStripe(__m256i* acc, __m256i a, __m256i b, const xxh_u8* secret) {
  const __m256i data[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    const __m256i key = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(secret) + i);
    const __m256i data_key = _mm256_xor_si256(data[i], key);
    const __m256i data_key_lo = _mm256_shuffle_epi32(data_key, _MM_SHUFFLE(0, 3, 0, 1));
    const __m256i product = _mm256_mul_epu32(data_key, data_key_lo);
    const __m256i data_swap = _mm256_shuffle_epi32(data[i], _MM_SHUFFLE(1, 0, 3, 2));
    acc[i] = _mm256_add_epi64(product, _mm256_add_epi64(acc[i], data_swap));
  }
}

// xxhash's XXH3_hashLong_64b_internal (default secret) with a copy folded
// in: each 64-byte stripe is loaded once into registers, stored to dst
// (kStore) and hashed from the same registers, so the bytes are read from
// memory once and the checksum is of the bytes stored. Streamed stores need
// the caller's fence. checksum_test.cc checks every variant against
// XXH3_64bits at every size.
template <Store kStore>
uint64_t CopyChecksumLong(xxh_u8* d, const xxh_u8* s, size_t size) {
  XXH_ALIGN(XXH_ACC_ALIGN) xxh_u64 acc[XXH_ACC_NB] = XXH3_INIT_ACC;
  __m256i* const xacc = reinterpret_cast<__m256i*>(acc);
  const xxh_u8* secret = XXH3_kSecret;
  const size_t secret_size = sizeof(XXH3_kSecret);
  const size_t stripes_per_block = (secret_size - XXH_STRIPE_LEN) / XXH_SECRET_CONSUME_RATE;
  const size_t block_len = XXH_STRIPE_LEN * stripes_per_block;
  const size_t blocks = (size - 1) / block_len;
  size_t at = 0;
  StripeStore<kStore> store;
  auto stripe = [&](size_t k) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + at + 32));
    store.Put(d, at, a, b);
    AccumulateStripe(xacc, a, b, secret + k * XXH_SECRET_CONSUME_RATE);
    at += XXH_STRIPE_LEN;
  };
  for (size_t n = 0; n < blocks; ++n) {
    for (size_t k = 0; k < stripes_per_block; ++k) stripe(k);
    XXH3_scrambleAcc_avx2(acc, secret + secret_size - XXH_STRIPE_LEN);
  }
  const size_t last_stripes = ((size - 1) - block_len * blocks) / XXH_STRIPE_LEN;
  for (size_t k = 0; k < last_stripes; ++k) stripe(k);
  store.Finish(d, at);  // at > 0: a long input (> 240 bytes) has 3 stripes or more
  // The last stripe (the input's last 64 bytes) is hashed from a copy of
  // the source; its 1 to 64 bytes not yet stored are stored from that copy.
  XXH_ALIGN(32) xxh_u8 line[XXH_STRIPE_LEN];
  __builtin_memcpy(line, s + size - XXH_STRIPE_LEN, XXH_STRIPE_LEN);
  __builtin_memcpy(d + at, line + XXH_STRIPE_LEN - (size - at), size - at);
  XXH3_accumulate_512_avx2(acc, line,
                           secret + secret_size - XXH_STRIPE_LEN - XXH_SECRET_LASTACC_START);
  return XXH3_mergeAccs(acc, secret + XXH_SECRET_MERGEACCS_START,
                        static_cast<xxh_u64>(size) * XXH_PRIME64_1);
}

}  // namespace

// `stream`: non-temporal stores where dst allows them (16-byte aligned),
// fenced before the return.
uint64_t CopyChecksum64Avx2(void* dst, const void* src, size_t size, bool stream) {
  xxh_u8* d = static_cast<xxh_u8*>(dst);
  const xxh_u8* s = static_cast<const xxh_u8*>(src);
  if (size <= XXH3_MIDSIZE_MAX) {  // short inputs hash otherwise, and cost nothing
    if (size > 0) __builtin_memcpy(d, s, size);
    return XXH3_64bits(d, size);
  }
  const uintptr_t alignment = reinterpret_cast<uintptr_t>(d) & 31;
  if (!stream || (alignment & 15) != 0) return CopyChecksumLong<Store::kCached>(d, s, size);
  const uint64_t checksum = alignment == 0 ? CopyChecksumLong<Store::kStream32>(d, s, size)
                                           : CopyChecksumLong<Store::kStream16>(d, s, size);
  _mm_sfence();
  return checksum;
}

void Checksum64UpdateAvx2(void* state, const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, size);
}

}  // namespace shelfmark
