// Snapshotter: periodic fork + copy-on-write checkpoints of the Directory.
//
// One snapshot: the snapshotting thread runs Directory::RunPaused { fork() }
// (every directory operation holds the snapshot lock shared, so the child
// is a consistent copy and the pause is lock + fork); the child
// (snapshot_child.h) encodes and publishes the snapshot and _exits; the
// parent polls for the child's report and exit status (waitpid WNOHANG and a
// pipe, never blocking a request) and kills it with SIGKILL after
// child_timeout_ms. Only one snapshot runs at a time.
//
// Publish order in the child: metadata, segments, task_manager,
// manifest.txt, descriptor.txt, latest.txt, then retention. A child that
// dies before latest.txt leaves latest naming the previous snapshot.
//
// Thread safety: Start/Stop from one owner thread; TakeSnapshotNow and
// Stats from any thread (snapshots are serialised). The Directory and the
// store must outlive the Snapshotter. The parent should not use the store
// itself: every child starts from the parent's copy of it, and state such as
// an S3 store's pooled connections must not be shared between processes
// (open one store for restore and another for the Snapshotter).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/result.h"
#include "directory/directory.h"
#include "snapshot/object_store.h"

namespace shelfmark {

struct SnapshotResult {
  ErrorCode code = ErrorCode::OK;  // OK, or the first failure
  std::string failed_stage;        // "" on success; "fork", "metadata", ..., "timeout"
  std::string snapshot_id;
  double fork_pause_ms = 0;  // RunPaused (lock wait + fork + unlock)
  double child_ms = 0;       // fork to reap
  uint64_t snapshot_bytes = 0;
  // The child's Private_Dirty just before it exits: pages either process
  // wrote after the fork (the copies copy-on-write made) plus the child's
  // own buffers. 0 when unknown (the child died early).
  uint64_t cow_bytes = 0;
  uint64_t objects = 0;  // objects encoded by the child
  // On a failure the child reported: what the store ran into (its
  // last_error(), e.g. "PUT k: No space left on device"), and whether the
  // unpublished snapshot's objects and directories were deleted again.
  std::string detail;
  bool discarded = false;
};

struct SnapshotterOptions {
  std::string cluster_id = "shelfmark_cluster";
  int64_t interval_ms = 600'000;
  int64_t child_timeout_ms = 300'000;
  size_t retention_count = 2;  // >= 1
  // Called on the snapshotting thread after every snapshot (metrics, logs).
  std::function<void(const SnapshotResult&)> on_result;
  // Asked before each periodic snapshot; false skips that one (an HA
  // standby's directory is not the cluster's: its snapshots would rotate the
  // leader's out). Null: always take.
  std::function<bool()> should_take;
  // Test hook, run in the child before each stage ("metadata", "segments",
  // "task_manager", "manifest", "descriptor", "latest", "retention"). It
  // runs in a single-threaded forked process: see snapshot_child.h.
  std::function<void(std::string_view stage)> child_stage_hook;
};

struct SnapshotterStats {
  uint64_t succeeded = 0;
  uint64_t failed = 0;
  SnapshotResult last;
};

class Snapshotter {
 public:
  Snapshotter(Directory* directory, ObjectStore* store, SnapshotterOptions options);
  ~Snapshotter();  // Stop()
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  // Starts the thread that snapshots every interval_ms (first one after one
  // interval). Idempotent.
  void Start();
  // Stops the thread; a running child is killed (and counted as failed).
  void Stop();

  // Takes one snapshot now and returns when its child has been reaped.
  SnapshotResult TakeSnapshotNow();

  SnapshotterStats Stats() const;

 private:
  SnapshotResult Run();
  // Waits for the child's report and exit; kills it at the deadline or on Stop.
  void Reap(pid_t pid, int report_fd, int64_t start_ns, SnapshotResult* result);
  std::string NextSnapshotId() REQUIRES(run_mu_);
  void Loop();

  Directory* directory_;
  ObjectStore* store_;
  SnapshotterOptions options_;

  Mutex run_mu_;  // one snapshot at a time
  int64_t last_id_ms_ GUARDED_BY(run_mu_) = 0;

  mutable Mutex stats_mu_;
  SnapshotterStats stats_ GUARDED_BY(stats_mu_);

  Mutex loop_mu_;
  std::condition_variable_any loop_cv_;
  bool stopping_ GUARDED_BY(loop_mu_) = false;
  std::atomic<bool> stop_requested_{false};
  std::thread thread_;
};

}  // namespace shelfmark
