#include "client/transfer_plan.h"

#include <algorithm>
#include <cstring>

#include "common/checksum.h"

namespace shelfmark {

Result<TransferPlan> ScatterPlan(std::span<const MutableBuffer> parts, uint64_t size) {
  TransferPlan plan;
  plan.whole = true;
  uint64_t at = 0;
  for (const MutableBuffer& part : parts) {
    if (at == size) break;
    const uint64_t length = std::min(part.size, size - at);
    if (length == 0) continue;
    if (part.data == nullptr) return ErrorCode::INVALID_PARAMS;
    plan.pieces.push_back({at, length, static_cast<uint8_t*>(part.data)});
    at += length;
  }
  if (at < size) return ErrorCode::BUFFER_OVERFLOW;
  return plan;
}

Result<TransferPlan> GatherPlan(std::span<const ConstBuffer> parts) {
  TransferPlan plan;
  plan.whole = true;
  uint64_t at = 0;
  for (const ConstBuffer& part : parts) {
    if (part.size == 0) continue;
    if (part.data == nullptr) return ErrorCode::INVALID_PARAMS;
    // Writes only read from `local`.
    plan.pieces.push_back({at, part.size, static_cast<uint8_t*>(const_cast<void*>(part.data))});
    at += part.size;
  }
  return plan;
}

Result<TransferPlan> RangePlan(std::span<const ReadRange> ranges, uint64_t size) {
  TransferPlan plan;
  for (const ReadRange& r : ranges) {
    if (r.offset > size || r.length > size - r.offset) return ErrorCode::INVALID_PARAMS;
    if (r.length == 0) continue;
    if (r.dst == nullptr) return ErrorCode::INVALID_PARAMS;
    plan.pieces.push_back({r.offset, r.length, static_cast<uint8_t*>(r.dst)});
  }
  return plan;
}

uint64_t PlanBytes(const TransferPlan& plan) {
  uint64_t total = 0;
  for (const PlanPiece& p : plan.pieces) total += p.length;
  return total;
}

uint64_t PlanChecksum(const TransferPlan& plan) {
  if (plan.pieces.size() == 1) return Checksum64(plan.pieces[0].local, plan.pieces[0].length);
  Checksum64Stream stream;
  for (const PlanPiece& p : plan.pieces) stream.Update(p.local, p.length);
  return stream.Digest();
}

void CopyPieces(const TransferPlan& plan, const uint8_t* object) {
  for (const PlanPiece& p : plan.pieces) std::memcpy(p.local, object + p.offset, p.length);
}

void AppendOps(const TransferPlan& plan, const MemoryDescriptor& replica,
               std::vector<TransferOp>* ops) {
  for (const PlanPiece& p : plan.pieces) {
    TransferOp op;
    op.remote = &replica;
    op.remote_offset = p.offset;
    op.local = p.local;
    op.length = p.length;
    ops->push_back(op);
  }
}

}  // namespace shelfmark
