// The object checksum: XXH3-64 (seed 0) of the value's bytes, as the client
// stores it with a put (client/client.h, ObjectChecksum) and the SSD store
// with each record (ssdstore/storage_backend.h, ValueChecksum).
//
// Every whole read computes it, so its speed is part of every get's cost:
// on an x86-64 CPU with AVX2 the AVX2 code runs (checksum_avx2.cc, chosen
// once at run time), else xxhash's baseline SSE2 code. Both give the same
// value (xxhash's contract); only the speed differs (AVX2 about 3x at 1 MiB
// on the benchmark machine).
//
// Thread safety: Checksum64 is a pure function; a Checksum64Stream belongs
// to one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace shelfmark {

uint64_t Checksum64(const void* data, size_t size);
inline uint64_t Checksum64(std::string_view bytes) {
  return Checksum64(bytes.data(), bytes.size());
}

// Copies `size` bytes from src to dst (CopyBytes' contract, copy_bytes.h)
// and returns Checksum64 of the bytes copied: with AVX2 in one pass (each
// 64-byte stripe hashed as it is stored), else a copy, then a checksum of dst.
uint64_t CopyChecksum64(void* dst, const void* src, size_t size);
// CopyChecksum64 for writes into a segment (StreamBytes' contract: the
// stores bypass the cache where dst's alignment allows and are fenced
// before it returns), so a put reads its source once.
uint64_t StreamChecksum64(void* dst, const void* src, size_t size);

// The checksum of several pieces in order: equal to Checksum64 of their
// concatenation.
class Checksum64Stream {
 public:
  Checksum64Stream();
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

  // Bytes of xxhash's XXH3_state_t (checked in checksum.cc).
  static constexpr size_t kStateBytes = 576;

 private:
  alignas(64) unsigned char state_[kStateBytes];
};

}  // namespace shelfmark
