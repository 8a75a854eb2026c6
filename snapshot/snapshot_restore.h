// Restore of the directory from the newest good snapshot, at start-up,
// before the RPC port opens.
//
// For each candidate (SnapshotCatalog::Candidates: latest first, then the
// others newest first): read and check manifest.txt and descriptor.txt,
// read the three payloads and check their sizes against the manifest,
// decode segments -> Directory::RestoreSegments, split metadata and decode +
// RestoreShard the shards in parallel (a thread per core), then tasks ->
// RestoreTasks. Any failure (missing object, VERSION_MISMATCH,
// DATA_CORRUPTED, a refused restore) clears the directory and moves on to
// the next candidate; when none is good the directory starts empty.
//
// What the directory keeps of a snapshot is its own rule (directory/):
// objects with only COMPLETE replicas, expired leases reset, unfinished
// puts dropped, soft pins kept, nodes given one client TTL to ping.
//
// Thread safety: run it on a Directory that serves nobody yet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "directory/directory.h"
#include "snapshot/object_store.h"

namespace shelfmark {

struct RestoreReport {
  bool restored = false;
  std::string snapshot_id;   // the snapshot used; "" when none
  uint64_t objects = 0;      // objects in the directory after restore
  double ms = 0;             // wall time of the whole restore
  int candidates_tried = 0;  // including the one used
  // The store could not be listed or answered STORE_UNAVAILABLE for a
  // candidate: "starting empty" may then be wrong (the master refuses to
  // start rather than let its empty snapshots rotate good ones out).
  bool store_unavailable = false;
  // Why candidates (or the listing) were rejected: "<id>: <stage>: <CODE>".
  std::vector<std::string> rejected;
  // What was wrong with latest.txt, when something was ("" otherwise): it
  // held no valid id, or named a snapshot the store does not have.
  std::string latest_problem;
  // Candidates rejected before the one used (or all, when none was).
  int fallbacks() const { return candidates_tried - (restored ? 1 : 0); }
};

struct RestoreOptions {
  std::string cluster_id = "shelfmark_cluster";
  unsigned threads = 0;  // decode threads; 0: std::thread::hardware_concurrency()
  // Tried before every other candidate when the store has it (an operator's
  // choice, --snapshot_restore_id: e.g. the snapshot a master that started
  // empty protected); "" or a missing id changes nothing.
  std::string first_id;
};

RestoreReport RestoreFromSnapshots(Directory* directory, ObjectStore* store,
                                   const RestoreOptions& options);

// One line for the log: "restored snapshot X: N objects in T ms (K candidates
// tried)" or "no usable snapshot ...; starting empty".
std::string DescribeRestore(const RestoreReport& report);

}  // namespace shelfmark
