// Checked access to a node's segment over UCX (docs/transport.md, "MEMORY
// reads and writes over ucx"). UCX over tcp (and every transport UCX
// emulates RMA on) performs a one-sided get or put with the owner's CPU and
// checks neither the rkey's range nor who asks: anyone who reached the
// worker could read, overwrite or fault the owner. So the ucx engine runs no
// UCX RMA at all (its context has no UCP_FEATURE_RMA, so UCX installs no
// handler that would touch memory for a peer); a MEMORY read or write is an
// active message of UcxAm, served only on a session whose hello proved the
// cluster token, and checked here before a byte of the segment is touched:
//  - the descriptor's rkey names a region key: 64 random bits minted when
//    the region was registered in this process (its incarnation). A key
//    this process never minted, or whose region was unregistered (a
//    descriptor of a previous process on the same port, an unmounted
//    segment), is refused SEGMENT_NOT_FOUND;
//  - [address, address + length) lies inside that region, and a write
//    carries exactly `length` bytes; else INVALID_PARAMS.
// Every refusal is counted; nothing is served, nothing faults.
//
// Wire: rkey bytes = magic "SMRK" (u32) + region key (u64); the request's
// user header = region key, address, length (u64 each, little-endian);
// reads answer the bytes as reply data, writes carry them as payload and
// answer an empty reply once they are in the segment.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/error_code.h"
#include "common/mutex.h"
#include "transport/am_transport.h"

namespace shelfmark {

inline constexpr uint16_t kUcxMemoryReadAmId = 0x4d52;   // "MR"
inline constexpr uint16_t kUcxMemoryWriteAmId = 0x4d57;  // "MW"

struct UcxMemoryAccess {
  uint64_t key = 0;
  uint64_t address = 0;
  uint64_t length = 0;
};

std::string EncodeUcxRkey(uint64_t key);
std::optional<uint64_t> DecodeUcxRkey(std::string_view rkey);
std::string EncodeUcxMemoryAccess(const UcxMemoryAccess& access);
std::optional<UcxMemoryAccess> DecodeUcxMemoryAccess(std::string_view header);

// The regions a ucx engine serves, by region key, and the handlers that
// serve them (installed on the engine's UcxAm).
class UcxSegments {
 public:
  // Counts of refused accesses, by reason.
  struct Refused {
    uint64_t stale = 0;         // no live region with that key
    uint64_t out_of_range = 0;  // outside the region, or a write of the wrong size
    uint64_t malformed = 0;     // a header that is not an access
  };

  // A fresh random key (never 0) for [addr, addr + size).
  uint64_t Add(uintptr_t addr, uint64_t size);
  void Remove(uint64_t key);
  // Serves one request of kUcxMemoryReadAmId / kUcxMemoryWriteAmId.
  void Serve(bool write, const AmRequest& request, AmResponder responder);
  Refused refused() const;

 private:
  // OK with the region's address of `access`, or why it is refused (counted).
  ErrorCode Check(const std::optional<UcxMemoryAccess>& access, uint64_t payload_size, bool write,
                  char** at) REQUIRES_SHARED(mu_);

  mutable SharedMutex mu_;
  std::map<uint64_t, std::pair<uintptr_t, uint64_t>> regions_ GUARDED_BY(mu_);
  std::atomic<uint64_t> stale_{0}, out_of_range_{0}, malformed_{0};
};

}  // namespace shelfmark
