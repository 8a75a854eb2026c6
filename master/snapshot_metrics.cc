#include "master/snapshot_metrics.h"

#include <chrono>

namespace shelfmark {
namespace {

template <typename T>
void Gauge(MetricsRegistry& r, const char* name, const char* help, const std::atomic<T>* value) {
  r.AddGauge(name, help, [value] { return static_cast<double>(value->load()); });
}

// Bounds in seconds: snapshot children run for 10 ms .. minutes; the pause
// (lock + fork) is 100 us .. a second.
std::vector<double> DurationBounds() { return {0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300}; }
std::vector<double> PauseBounds() {
  return {0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5, 1};
}

double UnixSecondsNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SnapshotMetrics::SnapshotMetrics(MetricsRegistry& r)
    : succeeded_(r.AddCounter("shelfmark_master_snapshots_total",
                              "Snapshots taken, by result.", "result=\"success\"")),
      failed_(r.AddCounter("shelfmark_master_snapshots_total", "Snapshots taken, by result.",
                           "result=\"failure\"")),
      discarded_(r.AddCounter("shelfmark_master_snapshots_discarded_total",
                              "Failed snapshots whose partial objects and directories were "
                              "deleted again.")),
      duration_(r.AddHistogram("shelfmark_master_snapshot_duration_seconds",
                               "Snapshot child run time, fork to reap, in seconds.", "",
                               DurationBounds())),
      fork_pause_(r.AddHistogram("shelfmark_master_snapshot_fork_pause_seconds",
                                 "Requests paused by a snapshot (lock + fork), in seconds.", "",
                                 PauseBounds())) {
  Gauge(r, "shelfmark_master_snapshot_last_duration_seconds",
        "Last successful snapshot's child run time in seconds.", &last_duration_seconds_);
  Gauge(r, "shelfmark_master_snapshot_last_fork_pause_seconds",
        "Last successful snapshot's lock + fork in seconds.", &last_fork_pause_seconds_);
  Gauge(r, "shelfmark_master_snapshot_last_bytes", "Bytes the last successful snapshot wrote.",
        &last_bytes_);
  Gauge(r, "shelfmark_master_snapshot_last_cow_bytes",
        "Private dirty memory of the last successful snapshot child (copy-on-write + its "
        "buffers).",
        &last_cow_bytes_);
  Gauge(r, "shelfmark_master_snapshot_last_objects", "Objects in the last successful snapshot.",
        &last_objects_);
  Gauge(r, "shelfmark_master_snapshot_last_success_timestamp_seconds",
        "Unix time of the last successful snapshot; 0 before the first.",
        &last_success_unix_seconds_);
  Gauge(r, "shelfmark_master_snapshot_interval_seconds",
        "Configured period between snapshots in seconds; 0 while snapshots are off.",
        &interval_seconds_);
  Gauge(r, "shelfmark_master_restore_duration_seconds", "Start-up restore time in seconds.",
        &restore_seconds_);
  Gauge(r, "shelfmark_master_restore_objects", "Objects restored at start-up.",
        &restore_objects_);
  Gauge(r, "shelfmark_master_restore_candidates_tried", "Snapshots tried by the restore.",
        &restore_candidates_);
  Gauge(r, "shelfmark_master_restore_succeeded", "1 when a snapshot was restored at start-up.",
        &restore_succeeded_);
}

void SnapshotMetrics::Observe(const SnapshotResult& result) {
  if (result.fork_pause_ms > 0) fork_pause_->Observe(result.fork_pause_ms / 1000);
  if (result.code != ErrorCode::OK) {
    if (result.discarded) discarded_->Inc();
    failed_->Inc();
    return;
  }
  duration_->Observe(result.child_ms / 1000);
  last_duration_seconds_.store(result.child_ms / 1000);
  last_fork_pause_seconds_.store(result.fork_pause_ms / 1000);
  last_bytes_.store(result.snapshot_bytes);
  last_cow_bytes_.store(result.cow_bytes);
  last_objects_.store(result.objects);
  last_success_unix_seconds_.store(UnixSecondsNow());
  succeeded_->Inc();  // last: a reader that sees the count sees the figures
}

void SnapshotMetrics::SetInterval(double seconds) { interval_seconds_.store(seconds); }

void SnapshotMetrics::SetRestore(const RestoreReport& report) {
  restore_seconds_.store(report.ms / 1000);
  restore_objects_.store(report.objects);
  restore_candidates_.store(static_cast<uint64_t>(report.candidates_tried));
  restore_succeeded_.store(report.restored ? 1 : 0);
}

}  // namespace shelfmark
