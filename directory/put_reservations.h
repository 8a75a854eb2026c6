// PutReservations: ranges the master reserved for a client's next put
// (Directory::ReservePut .. CommitPut; docs/directory.md, "One-round-trip
// puts"). A reserved range belongs to this table, not to any object, until
// the client commits a key into it or the reservation is given back (its
// deadline passed, its client expired, a segment it lies in went): the
// client may be writing into it at any time before its commit.
//
// Thread safety: all methods are thread-safe (one mutex, a leaf lock:
// `release` callbacks run under it and may only take segment locks).
// Lifetime: entries point at SegmentEntry objects; the directory drops the
// entries of a segment (DropSegments) before it erases the segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/types.h"
#include "common/uuid.h"
#include "directory/segment_table.h"

namespace shelfmark {

struct PutReservation {
  uint64_t id = 0;
  UUID client;
  uint64_t size = 0;
  // Where a renewal places the next one (only PutConfig's placement
  // fields: replica_num, preferred_segments, prefer_host).
  PutConfig placement;
  std::vector<Placement> placed;  // one range of `size` per replica
  // The held range (held_ranges.h: what hot standbys hold) of each range
  // in `placed`, in order.
  std::vector<uint64_t> held_ids;
  int64_t deadline_ms = 0;  // given back once the clock passes this
};

class PutReservations {
 public:
  using Release = std::function<void(const PutReservation&)>;

  // Records a reservation (moved from only when recorded);
  // NO_AVAILABLE_HANDLE, `reservation` untouched, when its client holds
  // `limit` already.
  ErrorCode Add(PutReservation&& reservation, size_t limit);
  // Removes and returns the client's reservation `id`; none when there is
  // no such id or it is another client's (which keeps it).
  std::optional<PutReservation> Take(const UUID& client, uint64_t id);
  // Removes the reservations past their deadline, calling `release` on
  // each under the table's lock (so a concurrent DropSegments waits).
  void TakeExpired(int64_t now_ms, const Release& release);
  // Removes every reservation of `clients` (expired), calling `release` on
  // each under the table's lock.
  void TakeClients(const std::vector<UUID>& clients, const Release& release);
  // Forgets the reservations with a range in one of `segments` (being
  // unmounted: those ranges go with the segment); `release` gives back
  // their ranges elsewhere (called under the lock, with the reservation's
  // placements, and their held ids, outside `segments` only). Returns how
  // many.
  size_t DropSegments(const std::vector<const SegmentEntry*>& segments, const Release& release);
  // Every reservation, for a snapshot (which records their ranges free).
  std::vector<PutReservation> Export() const;
  void Clear();
  size_t size() const;
  size_t held_by(const UUID& client) const;
  // Bytes of the ranges held (size x ranges, summed).
  uint64_t bytes() const;

 private:
  mutable Mutex mu_;
  std::unordered_map<uint64_t, PutReservation> by_id_ GUARDED_BY(mu_);
  std::unordered_map<UUID, size_t, UUIDHash> per_client_ GUARDED_BY(mu_);
  uint64_t bytes_ GUARDED_BY(mu_) = 0;

  static uint64_t BytesOf(const PutReservation& r);
  // Uncounts a reservation being removed.
  void ForgetLocked(const PutReservation& r) REQUIRES(mu_);
  // Removes the entries `pick` selects, each passed to `release` first.
  template <typename Pick>
  size_t EraseIfLocked(Pick&& pick, const Release& release) REQUIRES(mu_);
};

}  // namespace shelfmark
