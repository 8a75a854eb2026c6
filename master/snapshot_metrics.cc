#include "master/snapshot_metrics.h"

namespace shelfmark {
namespace {

template <typename T>
void Gauge(MetricsRegistry& r, const char* name, const char* help, const std::atomic<T>* value) {
  r.AddGauge(name, help, [value] { return static_cast<double>(value->load()); });
}

}  // namespace

SnapshotMetrics::SnapshotMetrics(MetricsRegistry& r)
    : succeeded_(r.AddCounter("shelfmark_master_snapshots_total", "snapshots taken, by result",
                              "result=\"success\"")),
      failed_(r.AddCounter("shelfmark_master_snapshots_total", "snapshots taken, by result",
                           "result=\"failure\"")),
      duration_ms_(r.AddHistogram("shelfmark_master_snapshot_duration_ms",
                                  "snapshot child run time, fork to reap (ms)", "",
                                  {10, 50, 100, 500, 1000, 5000, 10000, 30000, 60000, 300000})),
      fork_pause_ms_(r.AddHistogram("shelfmark_master_snapshot_fork_pause_ms",
                                    "requests paused by a snapshot: lock + fork (ms)", "",
                                    {0.1, 0.5, 1, 2, 5, 10, 50, 100, 500, 1000})) {
  Gauge(r, "shelfmark_master_snapshot_last_duration_ms", "last snapshot's child run time (ms)",
        &last_duration_ms_);
  Gauge(r, "shelfmark_master_snapshot_last_fork_pause_ms", "last snapshot's lock + fork (ms)",
        &last_fork_pause_ms_);
  Gauge(r, "shelfmark_master_snapshot_last_bytes", "bytes the last snapshot wrote",
        &last_bytes_);
  Gauge(r, "shelfmark_master_snapshot_last_cow_bytes",
        "private dirty memory of the last snapshot child (copy-on-write + its buffers)",
        &last_cow_bytes_);
  Gauge(r, "shelfmark_master_snapshot_last_objects", "objects in the last snapshot",
        &last_objects_);
  Gauge(r, "shelfmark_master_restore_ms", "start-up restore time (ms)", &restore_ms_);
  Gauge(r, "shelfmark_master_restore_objects", "objects restored at start-up", &restore_objects_);
  Gauge(r, "shelfmark_master_restore_candidates_tried", "snapshots tried by the restore",
        &restore_candidates_);
  Gauge(r, "shelfmark_master_restore_succeeded", "1 when a snapshot was restored at start-up",
        &restore_succeeded_);
}

void SnapshotMetrics::Observe(const SnapshotResult& result) {
  if (result.fork_pause_ms > 0) fork_pause_ms_->Observe(result.fork_pause_ms);
  if (result.code != ErrorCode::OK) {
    failed_->Inc();
    return;
  }
  duration_ms_->Observe(result.child_ms);
  last_duration_ms_.store(result.child_ms);
  last_fork_pause_ms_.store(result.fork_pause_ms);
  last_bytes_.store(result.snapshot_bytes);
  last_cow_bytes_.store(result.cow_bytes);
  last_objects_.store(result.objects);
  succeeded_->Inc();  // last: a reader that sees the count sees the figures
}

void SnapshotMetrics::SetRestore(const RestoreReport& report) {
  restore_ms_.store(report.ms);
  restore_objects_.store(report.objects);
  restore_candidates_.store(static_cast<uint64_t>(report.candidates_tried));
  restore_succeeded_.store(report.restored ? 1 : 0);
}

}  // namespace shelfmark
