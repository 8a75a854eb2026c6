#include "transport/loopback_engine.h"

#include <atomic>
#include <charconv>
#include <cstring>
#include <map>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"

namespace shelfmark {
namespace {

struct Region {
  uintptr_t addr = 0;
  uint64_t size = 0;
  bool remote = false;
};

struct EngineEntry {
  std::string cluster_token;
  std::map<uint64_t, Region> regions;  // by handle; rkey = "lb<handle>"
};

// The process-wide table of live loopback engines and their regions.
struct Registry {
  SharedMutex mu;
  std::unordered_map<std::string, EngineEntry> engines GUARDED_BY(mu);
  std::atomic<uint64_t> next_engine{1};
  std::atomic<uint64_t> next_handle{1};
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: engines may outlive statics
  return *registry;
}

std::string RkeyFor(uint64_t handle) { return "lb" + std::to_string(handle); }

// "lb<digits>" -> handle; 0 for anything else.
uint64_t HandleFromRkey(std::string_view rkey) {
  if (rkey.size() < 3 || rkey.substr(0, 2) != "lb") return 0;
  uint64_t handle = 0;
  const char* end = rkey.data() + rkey.size();
  auto [ptr, ec] = std::from_chars(rkey.data() + 2, end, handle);
  if (ec != std::errc() || ptr != end) return 0;
  return handle;
}

bool Contains(const Region& region, uintptr_t addr, uint64_t length) {
  return addr >= region.addr && length <= region.size &&
         addr - region.addr <= region.size - length;
}

TransferStatus Fail(ErrorCode code, std::string message) { return {code, std::move(message)}; }

// The caller-side checks: descriptor bounds and the local buffer.
TransferStatus CheckOp(const TransferOp& op, const EngineEntry& self) {
  if (op.remote == nullptr || op.local == nullptr || op.length == 0) {
    return Fail(ErrorCode::INVALID_PARAMS, "transfer op without remote, local or length");
  }
  if (op.remote_offset > op.remote->size || op.length > op.remote->size - op.remote_offset) {
    return Fail(ErrorCode::INVALID_PARAMS, "transfer op outside the descriptor's range");
  }
  const auto local = reinterpret_cast<uintptr_t>(op.local);
  for (const auto& [handle, region] : self.regions) {
    if (Contains(region, local, op.length)) return {};
  }
  return Fail(ErrorCode::INVALID_PARAMS, "local buffer is not inside a registered region");
}

// The owner-side checks: live peer, cluster token, the rkey's region.
TransferStatus CheckRemote(const TransferOp& op, const EngineEntry& self,
                           const std::unordered_map<std::string, EngineEntry>& engines,
                           uintptr_t* remote_addr) {
  auto peer = engines.find(op.remote->endpoint);
  if (peer == engines.end()) {
    return Fail(ErrorCode::TRANSFER_FAIL, "peer gone: " + op.remote->endpoint);
  }
  if (peer->second.cluster_token != self.cluster_token) {
    return Fail(ErrorCode::TRANSFER_FAIL, "cluster token rejected by " + op.remote->endpoint);
  }
  auto region = peer->second.regions.find(HandleFromRkey(op.remote->rkey));
  const uint64_t addr = op.remote->buffer_address + op.remote_offset;
  if (region == peer->second.regions.end() || !region->second.remote ||
      addr < op.remote->buffer_address || !Contains(region->second, addr, op.length)) {
    return Fail(ErrorCode::TRANSFER_FAIL, "remote access error at " + op.remote->endpoint);
  }
  *remote_addr = addr;
  return {};
}

}  // namespace

LoopbackEngine::LoopbackEngine(TransportOptions options)
    : options_(std::move(options)),
      endpoint_("loopback:" + std::to_string(TheRegistry().next_engine.fetch_add(1))),
      am_(std::make_unique<LoopbackAm>(endpoint_, options_)) {
  Registry& registry = TheRegistry();
  WriterLock lock(&registry.mu);
  registry.engines[endpoint_].cluster_token = options_.cluster_token;
}

LoopbackEngine::~LoopbackEngine() {
  Registry& registry = TheRegistry();
  WriterLock lock(&registry.mu);
  registry.engines.erase(endpoint_);
}

Result<MemoryRegion> LoopbackEngine::RegisterMemory(void* addr, uint64_t size,
                                                    bool remote_access) {
  if (addr == nullptr || size == 0) return ErrorCode::INVALID_PARAMS;
  Registry& registry = TheRegistry();
  const uint64_t handle = registry.next_handle.fetch_add(1);
  {
    WriterLock lock(&registry.mu);
    registry.engines[endpoint_].regions[handle] =
        Region{reinterpret_cast<uintptr_t>(addr), size, remote_access};
  }
  MemoryRegion region;
  region.addr = addr;
  region.size = size;
  region.handle = handle;
  if (remote_access) region.rkey = RkeyFor(handle);
  return region;
}

void LoopbackEngine::UnregisterMemory(const MemoryRegion& region) {
  Registry& registry = TheRegistry();
  WriterLock lock(&registry.mu);
  registry.engines[endpoint_].regions.erase(region.handle);
}

TransferStatus LoopbackEngine::Transfer(TransferKind kind, std::span<const TransferOp> ops,
                                        int64_t /*timeout_ms: copies never wait*/) {
  Registry& registry = TheRegistry();
  ReaderLock lock(&registry.mu);
  const auto self = registry.engines.find(endpoint_);
  if (self == registry.engines.end()) return Fail(ErrorCode::INTERNAL_ERROR, "engine not registered");
  std::vector<uintptr_t> remote_addrs(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    TransferStatus status = CheckOp(ops[i], self->second);
    if (!status.ok()) return status;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    TransferStatus status = CheckRemote(ops[i], self->second, registry.engines, &remote_addrs[i]);
    if (!status.ok()) return status;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    auto* remote = reinterpret_cast<void*>(remote_addrs[i]);
    if (kind == TransferKind::READ) {
      std::memmove(ops[i].local, remote, ops[i].length);
    } else {
      std::memmove(remote, ops[i].local, ops[i].length);
    }
  }
  return {};
}

}  // namespace shelfmark
