// EmptyStartGuard: a master that starts serving with an empty directory
// while the snapshot store holds a snapshot it did not restore keeps that
// snapshot from retention (docs/snapshot.md, "A master that starts empty").
//
// Why: such a master (restore off, every candidate refused, or an HA master
// that took over with --ha_unsynced_takeover_s and neither a copy nor a
// restore) takes snapshots of its empty directory, and `retention_count` of
// them would delete the last snapshot that held the cluster's objects.
//
// The decision, each time this master starts serving (at start-up without
// HA, at each term won with HA):
//   - trusted, nothing done: its directory holds objects, or the term
//     loaded a standby copy, or the store has no snapshot, or the store's
//     latest is the one this master restored at start-up;
//   - otherwise, with --snapshot_allow_empty_start: any protection is
//     released (the operator means to start over), logged;
//   - otherwise: the store's latest snapshot becomes the protected one
//     (SnapshotCatalog::SetProtected), unless one is protected already (an
//     earlier empty start kept the older, real one: it stays). Logged with
//     the way back (--enable_snapshot_restore --snapshot_restore_id=<id>)
//     and the override, and counted.
//
// Retention (every master's snapshot child) never deletes the protected
// snapshot; the store's protected.txt names it until an operator starts a
// master with --snapshot_allow_empty_start (or removes the file).
//
// Thread safety: OnServing and SetRestored from any thread; the metrics
// read atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "snapshot/object_store.h"

namespace shelfmark {

class MetricsRegistry;

struct EmptyStartGuardOptions {
  std::string cluster_id;
  bool allow_empty_start = false;  // --snapshot_allow_empty_start
  // Opens the snapshot store (one per check: the Snapshotter's store is its
  // children's, snapshotter.h); null with *error set when it cannot.
  std::function<std::unique_ptr<ObjectStore>(std::string* error)> open_store;
};

// What one OnServing did.
struct EmptyStartOutcome {
  bool trusted = true;          // nothing to protect (see above)
  std::string protected_id;     // the snapshot now kept ("" when none)
  bool newly_protected = false;  // this call wrote protected.txt
  std::string released_id;      // released by allow_empty_start
  std::string log;              // the line to log; "" when trusted and nothing released
};

class EmptyStartGuard {
 public:
  explicit EmptyStartGuard(EmptyStartGuardOptions options);

  // The snapshot the start-up restore used ("" when none).
  void SetRestored(std::string snapshot_id);

  // This master starts serving a directory of `objects` objects;
  // `loaded_copy`: the term loaded a standby copy.
  EmptyStartOutcome OnServing(uint64_t objects, bool loaded_copy);

  uint64_t empty_starts() const { return empty_starts_.load(); }
  bool protecting() const { return protecting_.load(); }

 private:
  EmptyStartOutcome CheckStore(ObjectStore& store);

  const EmptyStartGuardOptions options_;
  Mutex mu_;
  std::string restored_id_ GUARDED_BY(mu_);
  std::atomic<uint64_t> empty_starts_{0};
  std::atomic<bool> protecting_{false};
};

// shelfmark_master_snapshot_empty_starts_total (counter) and
// shelfmark_master_snapshot_protected (gauge, 0 or 1). `guard` must outlive
// the registry's use.
void AddEmptyStartMetrics(MetricsRegistry& registry, const EmptyStartGuard& guard);

}  // namespace shelfmark
