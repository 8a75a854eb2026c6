// LocalSegments: the DRAM segments this process hosts itself (an embedded
// node, embedded/), which the client reads and writes with memcpy instead of
// a transfer: same bytes, no engine, no connection.
//
// A segment is attached with its id (Segment::id, which MemoryDescriptor::
// segment_id names) and the address it is mapped at here, which is also its
// Segment::base: descriptors' buffer_address values are addresses in this
// process. An op is copied locally only when its descriptor names an
// attached segment and its range [buffer_address + remote_offset, + length)
// lies inside both the descriptor's [0, size) and the attached range;
// otherwise it is left to the engines (which check it as ever).
//
// Thread safety: Attach/Detach take the lock exclusively, TryCopy and
// CopyAll share it for the lookup and copy outside it. The memory must stay
// mapped while a copy may run: detach first, then stop using the memory (a
// Node's memory stays mapped until the process exits, node/node.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "common/mutex.h"
#include "common/uuid.h"
#include "transport/transport.h"

namespace shelfmark {

struct LocalCopyStats {
  uint64_t copies = 0;  // ops done by memcpy (reads and writes)
  uint64_t bytes = 0;   // their bytes
};

class LocalSegments {
 public:
  // `stream_reads`: reads copy into the caller's buffer with streamed
  // stores (CopyLocal, transport/local_share.h; ClientOptions::
  // stream_local_reads).
  explicit LocalSegments(bool stream_reads = false) : stream_reads_(stream_reads) {}

  // Replaces an attachment of the same id. INVALID_PARAMS for a null base
  // or a zero size.
  ErrorCode Attach(const UUID& id, void* base, uint64_t size);
  void Detach(const UUID& id);
  // True when `replica` lies in an attached segment (the read order puts
  // such replicas first).
  bool Holds(const MemoryDescriptor& replica) const;
  // Does `op` with memcpy when its range lies in an attached segment (see
  // above) and returns true (sets *op.checksum when asked,
  // TransferOp); false (nothing done) otherwise. `stream_read`: a READ
  // streams whatever stream_reads says (StreamsReads, local_share.h).
  bool TryCopy(TransferKind kind, const TransferOp& op, bool stream_read = false);
  // TryCopy for every op of a call: does those it can (split over helper
  // threads when they move kSplitCopyBytes or more together,
  // common/work_splitter.h) and appends the others to *left, in order.
  void CopyAll(TransferKind kind, std::span<const TransferOp> ops, bool stream_read,
               std::vector<TransferOp>* left);
  LocalCopyStats stats() const;

 private:
  struct Attached {
    UUID id;
    uint64_t base = 0;
    uint64_t size = 0;
  };
  // The local address of the op's remote range, or nullptr.
  uint8_t* Find(const MemoryDescriptor& replica, uint64_t offset, uint64_t length) const;

  const bool stream_reads_;
  mutable SharedMutex mu_;
  std::vector<Attached> segments_ GUARDED_BY(mu_);  // a few at most: a scan
  std::atomic<uint64_t> copies_{0}, bytes_{0};
};

}  // namespace shelfmark
