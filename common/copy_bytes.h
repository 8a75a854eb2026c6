// CopyBytes: memcpy for the store's bulk copies of object bytes (an own
// segment, another process's segment mapped on this host).
//
// Why not memcpy: glibc picks `rep movsb` for copies of a few KiB to a few
// MiB, which on the benchmark machine (AMD EPYC, glibc 2.36) runs at about
// 60% of the memory bandwidth when source and destination differ in their
// alignment to 64 bytes, as a numpy array (16 bytes past a page) and a
// segment do: 256 x 64 KiB took 2.5 ms where a copy of 16-byte vector loads
// and stores takes 1.2-1.7 ms at any alignment. Large copies go through that
// loop on x86-64 (SSE2: every x86-64 CPU has it); small ones and other CPUs
// use memcpy.
//
// StreamBytes: CopyBytes for bytes this process will not read back soon
// (writes into a segment): a large copy's stores bypass the cache
// (non-temporal, no read of the destination lines first: about 15% faster
// into a segment on the benchmark machine) and are fenced before it
// returns, so what follows (PutEnd) is ordered after them.
//
// Contract: as memcpy (the ranges must not overlap); size 0 is a no-op.
// Thread safety: pure functions.
#pragma once

#include <cstddef>

namespace shelfmark {

void CopyBytes(void* dst, const void* src, size_t size);
void StreamBytes(void* dst, const void* src, size_t size);

}  // namespace shelfmark
