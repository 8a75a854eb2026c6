#include "client/local_segments.h"

#include <algorithm>

#include "transport/local_share.h"

namespace shelfmark {

ErrorCode LocalSegments::Attach(const UUID& id, void* base, uint64_t size) {
  if (base == nullptr || size == 0) return ErrorCode::INVALID_PARAMS;
  WriterLock lock(&mu_);
  std::erase_if(segments_, [&](const Attached& a) { return a.id == id; });
  segments_.push_back({id, reinterpret_cast<uint64_t>(base), size});
  return ErrorCode::OK;
}

void LocalSegments::Detach(const UUID& id) {
  WriterLock lock(&mu_);
  std::erase_if(segments_, [&](const Attached& a) { return a.id == id; });
}

uint8_t* LocalSegments::Find(const MemoryDescriptor& replica, uint64_t offset,
                             uint64_t length) const {
  // Inside the descriptor (overflow-safe), then inside the segment.
  if (offset > replica.size || length > replica.size - offset) return nullptr;
  const uint64_t start = replica.buffer_address + offset;
  if (start < replica.buffer_address) return nullptr;
  ReaderLock lock(&mu_);
  for (const Attached& a : segments_) {
    if (a.id != replica.segment_id) continue;
    if (start < a.base || start - a.base > a.size || length > a.size - (start - a.base)) {
      return nullptr;
    }
    return reinterpret_cast<uint8_t*>(start);
  }
  return nullptr;
}

bool LocalSegments::Holds(const MemoryDescriptor& replica) const {
  return Find(replica, 0, replica.size) != nullptr;
}

bool LocalSegments::TryCopy(TransferKind kind, const TransferOp& op, bool stream_read) {
  if (op.remote == nullptr || op.local == nullptr) return false;
  uint8_t* at = Find(*op.remote, op.remote_offset, op.length);
  if (at == nullptr) return false;
  CopyLocal(kind, op.local, at, op.length, op.checksum, stream_reads_ || stream_read);
  copies_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(op.length, std::memory_order_relaxed);
  return true;
}

LocalCopyStats LocalSegments::stats() const {
  return {copies_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed)};
}

}  // namespace shelfmark
