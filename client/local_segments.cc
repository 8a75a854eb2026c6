#include "client/local_segments.h"

#include <algorithm>

#include "common/work_splitter.h"
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
  std::vector<TransferOp> left;
  CopyAll(kind, {&op, 1}, stream_read, &left);
  return left.empty();
}

void LocalSegments::CopyAll(TransferKind kind, std::span<const TransferOp> ops, bool stream_read,
                            std::vector<TransferOp>* left) {
  std::vector<std::pair<const TransferOp*, uint8_t*>> copies;  // op, its range here
  uint64_t bytes = 0;
  for (const TransferOp& op : ops) {
    uint8_t* at = op.remote == nullptr || op.local == nullptr
                      ? nullptr
                      : Find(*op.remote, op.remote_offset, op.length);
    if (at == nullptr) {
      left->push_back(op);
      continue;
    }
    copies.emplace_back(&op, at);
    bytes += op.length;
  }
  const bool stream = stream_reads_ || stream_read;
  SplitJobs(copies.size(), bytes, [&](size_t i) {
    const TransferOp& op = *copies[i].first;
    CopyLocal(kind, op.local, copies[i].second, op.length, op.checksum, stream);
  });
  copies_.fetch_add(copies.size(), std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

LocalCopyStats LocalSegments::stats() const {
  return {copies_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed)};
}

}  // namespace shelfmark
