// TransferPlan: where the bytes of one object's read or write lie in local
// memory, piece by piece, and the TransferOps that move them to or from a
// MEMORY replica. Every read and write of the client goes through one: a
// whole object in one staging block is a plan of one piece, a KV block made
// of per-layer parts a plan of several, a ranged read a plan of the
// caller's ranges. Internal to the client library.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "client/buffers.h"
#include "common/result.h"
#include "transport/transport.h"

namespace shelfmark {

// [offset, offset + length) of the object, at `local`.
struct PlanPiece {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* local = nullptr;
};

struct TransferPlan {
  std::vector<PlanPiece> pieces;  // no zero-length piece
  // The pieces tile [0, size) in order: the bytes are the whole object, so
  // its checksum can be verified (PlanChecksum). False for ranged reads.
  bool whole = false;
};

// The object's `size` bytes laid over `parts` in order (the last piece
// trimmed, parts beyond the object unused). BUFFER_OVERFLOW when the parts
// hold fewer than `size` bytes; INVALID_PARAMS for a null part that would
// receive bytes.
Result<TransferPlan> ScatterPlan(std::span<const MutableBuffer> parts, uint64_t size);
// A value made of `parts` in order (the object is their concatenation);
// INVALID_PARAMS for a null part of non-zero size.
Result<TransferPlan> GatherPlan(std::span<const ConstBuffer> parts);
// The caller's ranges of an object of `size` bytes. INVALID_PARAMS for a
// range past the object's end (or whose end overflows) or a null dst.
Result<TransferPlan> RangePlan(std::span<const ReadRange> ranges, uint64_t size);

// Sum of the pieces' lengths.
uint64_t PlanBytes(const TransferPlan& plan);
// XXH3-64 (seed 0) of the pieces' bytes in order: ObjectChecksum of the
// value when the plan is whole.
uint64_t PlanChecksum(const TransferPlan& plan);
// Copies each piece's range out of `object` (the whole object in memory).
void CopyPieces(const TransferPlan& plan, const uint8_t* object);
// One op per piece, against `replica`, appended to *ops.
void AppendOps(const TransferPlan& plan, const MemoryDescriptor& replica,
               std::vector<TransferOp>* ops);

}  // namespace shelfmark
