#include "master/snapshot_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "testing/process_util.h"

namespace shelfmark {
namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SnapshotMetricsTest : public ::testing::Test {
 protected:
  double Value(const std::string& series) const {
    return testing::MetricValue(registry_.RenderPrometheus(), series);
  }

  MetricsRegistry registry_;
  SnapshotMetrics metrics_{registry_};
};

TEST_F(SnapshotMetricsTest, FailureCountsWithoutTouchingTheLastSuccess) {
  EXPECT_EQ(Value("shelfmark_master_snapshot_last_success_timestamp_seconds"), 0);
  SnapshotResult failed;
  failed.code = ErrorCode::INTERNAL_ERROR;
  failed.fork_pause_ms = 3;
  failed.child_ms = 40;
  metrics_.Observe(failed);
  EXPECT_EQ(Value("shelfmark_master_snapshots_total{result=\"failure\"}"), 1);
  EXPECT_EQ(Value("shelfmark_master_snapshots_total{result=\"success\"}"), 0);
  EXPECT_EQ(Value("shelfmark_master_snapshot_fork_pause_seconds_count"), 1);
  EXPECT_DOUBLE_EQ(Value("shelfmark_master_snapshot_fork_pause_seconds_sum"), 0.003);
  EXPECT_EQ(Value("shelfmark_master_snapshot_duration_seconds_count"), 0);
  EXPECT_EQ(Value("shelfmark_master_snapshot_last_success_timestamp_seconds"), 0);
}

TEST_F(SnapshotMetricsTest, SuccessIsInSecondsAndStampsTheTime) {
  SnapshotResult ok;
  ok.fork_pause_ms = 2;
  ok.child_ms = 1500;
  ok.snapshot_bytes = 4096;
  ok.objects = 7;
  const double before = UnixNow();
  metrics_.Observe(ok);
  const double after = UnixNow();
  EXPECT_EQ(Value("shelfmark_master_snapshots_total{result=\"success\"}"), 1);
  EXPECT_DOUBLE_EQ(Value("shelfmark_master_snapshot_duration_seconds_sum"), 1.5);
  EXPECT_EQ(Value("shelfmark_master_snapshot_duration_seconds_bucket{le=\"5\"}"), 1);
  EXPECT_EQ(Value("shelfmark_master_snapshot_duration_seconds_bucket{le=\"1\"}"), 0);
  EXPECT_DOUBLE_EQ(Value("shelfmark_master_snapshot_last_duration_seconds"), 1.5);
  EXPECT_DOUBLE_EQ(Value("shelfmark_master_snapshot_last_fork_pause_seconds"), 0.002);
  EXPECT_EQ(Value("shelfmark_master_snapshot_last_bytes"), 4096);
  EXPECT_EQ(Value("shelfmark_master_snapshot_last_objects"), 7);
  const double stamp = Value("shelfmark_master_snapshot_last_success_timestamp_seconds");
  EXPECT_GE(stamp, before - 1e-3);  // rendering rounds to the shortest decimal
  EXPECT_LE(stamp, after + 1e-3);
}

TEST_F(SnapshotMetricsTest, IntervalAndRestoreInSeconds) {
  EXPECT_EQ(Value("shelfmark_master_snapshot_interval_seconds"), 0);
  metrics_.SetInterval(600);
  EXPECT_EQ(Value("shelfmark_master_snapshot_interval_seconds"), 600);
  RestoreReport report;
  report.restored = true;
  report.ms = 250;
  report.objects = 9;
  report.candidates_tried = 2;
  metrics_.SetRestore(report);
  EXPECT_DOUBLE_EQ(Value("shelfmark_master_restore_duration_seconds"), 0.25);
  EXPECT_EQ(Value("shelfmark_master_restore_objects"), 9);
  EXPECT_EQ(Value("shelfmark_master_restore_candidates_tried"), 2);
  EXPECT_EQ(Value("shelfmark_master_restore_succeeded"), 1);
}

}  // namespace
}  // namespace shelfmark
