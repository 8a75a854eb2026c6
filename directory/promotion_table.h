// PromotionTable: promotions on hit granted to nodes and not yet reported
// (Directory::PromoteStart .. PromoteEnd), each with the segment range the
// master reserved for the node's copy.
//
// A reserved range belongs to this table, not to the object, until
// PromoteEnd attaches it as a MEMORY replica or gives it back: removing or
// evicting the object meanwhile never frees memory the node may be writing.
//
// Thread safety: all methods are thread-safe (one mutex, a leaf lock:
// `release` callbacks run under it and may only take segment locks).
// Lifetime: entries point at SegmentEntry objects; the directory drops the
// entries of a segment (DropSegments) before it erases the segment.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/types.h"
#include "common/uuid.h"

namespace shelfmark {

struct SegmentEntry;

struct InflightPromotion {
  std::string tenant;
  std::string key;
  uint64_t disk_replica_id = 0;  // the LOCAL_DISK replica the node copies from
  SegmentEntry* segment = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  int64_t deadline_ms = 0;
  uint64_t held_id = 0;  // its id in the directory's HeldRanges
};

class PromotionTable {
 public:
  // Records a granted promotion of `client`. OBJECT_ALREADY_EXISTS when the
  // key is in flight for it already; NO_AVAILABLE_HANDLE when it has `limit`
  // in flight.
  ErrorCode Add(const UUID& client, InflightPromotion promotion, size_t limit);
  // Removes and returns the client's promotion of the key, if any.
  std::optional<InflightPromotion> Take(const UUID& client, std::string_view tenant,
                                        std::string_view key);
  // Removes the promotions past their deadline, calling `release` on each
  // under the table's lock (so a concurrent DropSegments waits for it).
  void TakeExpired(int64_t now_ms, const std::function<void(const InflightPromotion&)>& release);
  // Forgets the promotions whose range lies in one of `segments` (being
  // unmounted: the range goes with the segment). Returns how many.
  size_t DropSegments(const std::vector<const SegmentEntry*>& segments);
  // Every reserved range, for a snapshot (whose restore holds no promotion).
  std::vector<InflightPromotion> Export() const;
  void Clear();
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::unordered_map<UUID, std::vector<InflightPromotion>, UUIDHash> by_client_ GUARDED_BY(mu_);
  size_t size_ GUARDED_BY(mu_) = 0;
};

}  // namespace shelfmark
