// Shared memory an engine process hands to the host's store service
// (Mooncake's MooncakeHostMemAllocator): each allocation is a memfd of its
// own, sealed against shrinking and growing (the service maps it and must
// never see its pages go: store_service.h), mapped shared read-write here.
// Allocations are kept in a process-wide table, so a store's
// register_buffer(ptr, size) finds the memfd behind any address inside one.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>

#include "common/socket_io.h"

namespace shelfmark::storeservice {

// `size` bytes (rounded up to the page size) of a fresh sealed memfd,
// zero-filled; the address, or 0 for size 0 or when the kernel refuses.
uint64_t AllocShm(uint64_t size);

// Unmaps and closes the allocation at `ptr` (its start); false when `ptr`
// starts none. The service's mapping, if any, keeps the memory until the
// service lets go of it.
bool FreeShm(uint64_t ptr);

struct ShmRegion {
  uint64_t base = 0;  // the allocation's start
  uint64_t size = 0;  // its length
  UniqueFd fd;        // a duplicate of its memfd
};
// The allocation that holds [ptr, ptr + size); nullopt when none does.
std::optional<ShmRegion> FindShm(uint64_t ptr, uint64_t size);

}  // namespace shelfmark::storeservice
