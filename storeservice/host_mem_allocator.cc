#include "storeservice/host_mem_allocator.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>

#include "common/mutex.h"

namespace shelfmark::storeservice {
namespace {

struct Allocation {
  uint64_t size = 0;
  int fd = -1;
};

struct Table {
  Mutex mu;
  std::map<uint64_t, Allocation> by_base GUARDED_BY(mu);
};

Table& Allocations() {
  static Table* table = new Table();  // never destroyed: used until exit
  return *table;
}

}  // namespace

uint64_t AllocShm(uint64_t size) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (size == 0 || size > UINT64_MAX - page) return 0;
  size = (size + page - 1) / page * page;
  UniqueFd fd(memfd_create("shelfmark-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid() || ftruncate(fd.get(), static_cast<off_t>(size)) != 0 ||
      fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return 0;
  }
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (memory == MAP_FAILED) return 0;
  const auto base = reinterpret_cast<uint64_t>(memory);
  Table& t = Allocations();
  MutexLock lock(&t.mu);
  t.by_base[base] = Allocation{size, fd.Release()};
  return base;
}

bool FreeShm(uint64_t ptr) {
  Allocation a;
  {
    Table& t = Allocations();
    MutexLock lock(&t.mu);
    auto it = t.by_base.find(ptr);
    if (it == t.by_base.end()) return false;
    a = it->second;
    t.by_base.erase(it);
  }
  munmap(reinterpret_cast<void*>(ptr), a.size);
  close(a.fd);
  return true;
}

std::optional<ShmRegion> FindShm(uint64_t ptr, uint64_t size) {
  Table& t = Allocations();
  MutexLock lock(&t.mu);
  auto it = t.by_base.upper_bound(ptr);
  if (it == t.by_base.begin()) return std::nullopt;
  --it;
  const uint64_t offset = ptr - it->first;
  if (offset > it->second.size || size > it->second.size - offset) return std::nullopt;
  UniqueFd fd(fcntl(it->second.fd, F_DUPFD_CLOEXEC, 0));
  if (!fd.valid()) return std::nullopt;
  return ShmRegion{it->first, it->second.size, std::move(fd)};
}

}  // namespace shelfmark::storeservice
