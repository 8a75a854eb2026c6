// Prometheus metrics of the master's snapshots and of its start-up restore
// (docs/metrics.md), in seconds and bytes:
//
//   shelfmark_master_snapshots_total{result="success"|"failure"}   counter
//   shelfmark_master_snapshots_discarded_total                     counter (failed, cleaned up)
//   shelfmark_master_snapshot_duration_seconds                     histogram (fork to reap)
//   shelfmark_master_snapshot_fork_pause_seconds                   histogram (lock + fork)
//   shelfmark_master_snapshot_last_{duration_seconds,fork_pause_seconds,bytes,cow_bytes,
//                                   objects,success_timestamp_seconds}       gauges
//   shelfmark_master_snapshot_interval_seconds                     gauge (0: snapshots off)
//   shelfmark_master_restore_{duration_seconds,objects,candidates_tried,succeeded}  gauges
//
// Thread safety: Observe and SetRestore may be called from any thread while
// the registry renders.
#pragma once

#include <atomic>
#include <cstdint>

#include "service/metrics.h"
#include "snapshot/snapshot_restore.h"
#include "snapshot/snapshotter.h"

namespace shelfmark {

class SnapshotMetrics {
 public:
  // Registers every metric in `registry`, which must outlive this object's use.
  explicit SnapshotMetrics(MetricsRegistry& registry);
  SnapshotMetrics(const SnapshotMetrics&) = delete;
  SnapshotMetrics& operator=(const SnapshotMetrics&) = delete;

  void Observe(const SnapshotResult& result);
  // The configured snapshot period, once periodic snapshots run.
  void SetInterval(double seconds);
  void SetRestore(const RestoreReport& report);

 private:
  Counter* succeeded_;
  Counter* failed_;
  Counter* discarded_;
  Histogram* duration_;
  Histogram* fork_pause_;
  std::atomic<double> last_duration_seconds_{0}, last_fork_pause_seconds_{0};
  std::atomic<uint64_t> last_bytes_{0}, last_cow_bytes_{0}, last_objects_{0};
  std::atomic<double> last_success_unix_seconds_{0};
  std::atomic<double> interval_seconds_{0};
  std::atomic<double> restore_seconds_{0};
  std::atomic<uint64_t> restore_objects_{0}, restore_candidates_{0}, restore_succeeded_{0};
};

}  // namespace shelfmark
