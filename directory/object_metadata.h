// ObjectMetadata and Replica: the compact per-object control state the
// directory keeps for every key (never payload). Memory per object matters
// (10 M objects per master), so replicas are 24 bytes, the first one is
// stored inline, and a MEMORY replica's descriptor is derived from its
// segment on demand instead of being copied into every object.
//
// Thread safety: none of its own; guarded by the owning shard's lock, except
// `lease_deadline_ms` and `use_stamp`, which readers under a shared lock may
// raise.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/uuid.h"
#include "common/types.h"

namespace shelfmark {

struct SegmentEntry;
struct DiskNode;

// One replica. `owner` is the SegmentEntry (MEMORY) or DiskNode (LOCAL_DISK)
// holding it; owners outlive every replica that points at them.
struct Replica {
  uint64_t id : 48;
  uint64_t status : 4;   // ReplicaStatus
  uint64_t type : 2;     // ReplicaType
  uint64_t refcnt : 10;  // copies in flight (offload)
  const void* owner;
  uint64_t offset;  // MEMORY: offset of the bytes inside the segment

  ReplicaStatus status_enum() const { return static_cast<ReplicaStatus>(status); }
  ReplicaType type_enum() const { return static_cast<ReplicaType>(type); }
  bool is_memory() const { return type_enum() == ReplicaType::MEMORY; }
  bool is_complete() const { return status_enum() == ReplicaStatus::COMPLETE; }
  const SegmentEntry* segment() const { return static_cast<const SegmentEntry*>(owner); }
  const DiskNode* disk() const { return static_cast<const DiskNode*>(owner); }
};
static_assert(sizeof(Replica) == 24, "Replica must stay compact");

Replica MakeReplica(uint64_t id, ReplicaStatus status, ReplicaType type, const void* owner,
                    uint64_t offset);

// A vector of replicas with room for one inline (the common case).
class ReplicaList {
 public:
  ReplicaList() = default;
  ~ReplicaList();
  ReplicaList(const ReplicaList&) = delete;
  ReplicaList& operator=(const ReplicaList&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Replica* begin() { return data(); }
  Replica* end() { return data() + size_; }
  const Replica* begin() const { return data(); }
  const Replica* end() const { return data() + size_; }
  Replica& operator[](size_t i) { return data()[i]; }
  void push_back(const Replica& r);
  // Exchanges the contents of two lists (no allocation).
  void swap(ReplicaList& other) noexcept;
  // Removes every replica for which pred(r) is true; returns how many.
  template <typename Pred>
  size_t erase_if(Pred pred) {
    size_t kept = 0;
    Replica* d = data();
    for (size_t i = 0; i < size_; ++i) {
      if (!pred(d[i])) d[kept++] = d[i];
    }
    size_t removed = size_ - kept;
    size_ = static_cast<uint8_t>(kept);
    return removed;
  }

 private:
  Replica* data() { return cap_ <= 1 ? &inline_ : heap_; }
  const Replica* data() const { return cap_ <= 1 ? &inline_ : heap_; }
  union {
    Replica inline_;
    Replica* heap_;
  };
  uint8_t size_ = 0;
  uint8_t cap_ = 1;
};

inline constexpr uint32_t kMaxReplicas = 32;

// Times the object keeps at second granularity are rounded up, so timeouts
// measured from them never fire early.
int32_t CeilSeconds(int64_t ms);

struct ObjectMetadata {
  UUID writer;
  uint64_t size = 0;
  uint64_t checksum = 0;
  std::atomic<int64_t> lease_deadline_ms{0};
  // Recency and reuse, for eviction (directory/eviction_policy.h): the
  // directory's use clock at the object's last put or read (high 62 bits)
  // and its uses since the put, saturating at kMaxUses (low 2 bits).
  std::atomic<uint64_t> use_stamp{0};
  std::unique_ptr<const std::string> group;  // null: no group
  int32_t put_start_s = 0;
  int32_t soft_pin_deadline_s = 0;  // 0: not soft-pinned
  // The flags below live in the replica list's tail padding.
  [[no_unique_address]] ReplicaList replicas;
  DataType data_type = DataType::UNKNOWN;
  bool has_checksum = false;
  bool hard_pin = false;
  // A pending version of this key waits in its tenant's `replacing` map (an
  // upsert between PutStart and PutEnd; directory_upsert.cc).
  bool has_pending = false;
  // When an offload of this object was last queued, as OffloadStamp()
  // (0: never). Written under the shard's writer lock (eviction's sweep
  // sees the object const, hence mutable); in the tail padding.
  mutable uint16_t offload_queued_stamp = 0;

  bool HasComplete() const;
  bool HasProcessing() const;
  bool HasCompleteMemory() const;
  bool HasCompleteDisk() const;
  size_t ReferenceCount() const;
  int64_t put_start_ms() const { return int64_t{put_start_s} * 1000; }
  int64_t soft_pin_deadline_ms() const { return int64_t{soft_pin_deadline_s} * 1000; }
  bool LeaseLive(int64_t now_ms) const { return lease_deadline_ms.load(std::memory_order_relaxed) > now_ms; }
  bool SoftPinned(int64_t now_ms) const { return soft_pin_deadline_ms() > now_ms; }
  // lease = max(lease, deadline). Safe under a shared shard lock.
  void ExtendLease(int64_t deadline_ms);

  static constexpr uint32_t kMaxUses = 3;
  // The object's first use (its put) at `tick`, counted as `uses` uses.
  void StartUses(uint64_t tick, uint32_t uses);
  // One more use at `tick` (a read, or a put of the key it already holds).
  // Safe under a shared shard lock: racing uses may count once, and the
  // last use wins, which is the recency either of them stands for.
  void NoteUse(uint64_t tick);
  uint64_t last_use() const { return use_stamp.load(std::memory_order_relaxed) >> 2; }
  uint32_t uses() const { return static_cast<uint32_t>(use_stamp.load(std::memory_order_relaxed) & 3); }
};

// Exchanges everything two versions of one key hold: writer, size, checksum,
// lease, group, times, replicas, flags. Caller holds the shard exclusively.
void SwapVersions(ObjectMetadata& a, ObjectMetadata& b);

}  // namespace shelfmark
