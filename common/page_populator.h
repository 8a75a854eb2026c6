// Page tables for a shared mapping filled in batches on first use.
//
// A process that maps another process's shared memory (a node's segment,
// transport/local_share.h; a client's buffer, storeservice/) starts with no
// page table entries for it: every first touch of a 4 KiB page is a minor
// fault, which costs more than copying the page. PagePopulator fills the
// entries of a whole chunk (kChunkBytes) with one madvise(MADV_POPULATE_READ)
// the first time a copy touches it. A read populate, even for copies that
// write: the kernel maps a shared file page's neighbours with it (fault-
// around, 16 pages a fault) and, for memory without write notification (a
// memfd's), maps them writable, so later writes take no fault either; a
// write populate maps one page a fault. Measured here, 16 MiB copied in
// 64 KiB pieces into a fresh mapping of a populated memfd: 2.0 GB/s with a
// fault a page, 3.6 with MADV_POPULATE_WRITE, 6.0 with MADV_POPULATE_READ,
// 11 once mapped. The kernel's work remains, so what makes same-host copies
// fast is that mappings and their page tables live as long as the
// connection or registration.
// The work is bounded by the ranges copied, never by the mapping's size:
// a client of a 1 TiB segment populates only the chunks its objects lie in.
//
// Contracts: base is page-aligned and [base, base + size) is one writable
// shared mapping that outlives the populator. Populating only changes the
// cost of later accesses: a kernel without MADV_POPULATE_READ (before
// Linux 5.14) or a failing call leaves the pages to fault in one by one;
// pages the kernel unmaps later (reclaim) or maps read-only (write
// notification) fault again as usual.
// Thread safety: any thread; two threads may populate one chunk at once
// (harmless).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace shelfmark {

class PagePopulator {
 public:
  static constexpr uint64_t kChunkBytes = uint64_t{2} << 20;

  PagePopulator(void* base, uint64_t size);

  // Populates every chunk that [offset, offset + length)
  // (relative to base, clipped to the mapping) touches and that was not
  // populated before.
  void Touch(uint64_t offset, uint64_t length);

  // Chunks populated so far (each madvise counted once).
  uint64_t chunks_populated() const { return populated_.load(std::memory_order_relaxed); }

 private:
  uint8_t* base_;
  uint64_t size_;
  std::unique_ptr<std::atomic<uint64_t>[]> done_;  // a bit a chunk
  std::atomic<uint64_t> populated_{0};
};

}  // namespace shelfmark
