#include "common/page_populator.h"

#include <sys/mman.h>

#include <algorithm>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older headers lack it
#endif

namespace shelfmark {

PagePopulator::PagePopulator(void* base, uint64_t size)
    : base_(static_cast<uint8_t*>(base)),
      size_(size),
      done_(new std::atomic<uint64_t>[(size / kChunkBytes + 64) / 64]()) {}

void PagePopulator::Touch(uint64_t offset, uint64_t length) {
  if (length == 0 || offset >= size_) return;
  const uint64_t end = offset + std::min(length, size_ - offset);
  for (uint64_t chunk = offset / kChunkBytes; chunk <= (end - 1) / kChunkBytes; ++chunk) {
    std::atomic<uint64_t>& word = done_[chunk / 64];
    const uint64_t bit = uint64_t{1} << (chunk % 64);
    if ((word.load(std::memory_order_relaxed) & bit) != 0) continue;
    const uint64_t from = chunk * kChunkBytes;
    // A failure (EINVAL on an old kernel) is not retried: the pages fault
    // in one by one, as without the populator.
    madvise(base_ + from, std::min(kChunkBytes, size_ - from), MADV_POPULATE_READ);
    word.fetch_or(bit, std::memory_order_relaxed);
    populated_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace shelfmark
