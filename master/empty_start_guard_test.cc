#include "master/empty_start_guard.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "service/metrics.h"
#include "snapshot/codec.h"
#include "snapshot/snapshot_catalog.h"
#include "snapshot/snapshot_test_util.h"
#include "snapshot/snapshotter.h"
#include "testing/process_util.h"

namespace shelfmark {
namespace {

class EmptyStartGuardTest : public ::testing::Test {
 protected:
  EmptyStartGuardOptions Options(bool allow_empty_start = false) {
    EmptyStartGuardOptions o;
    o.cluster_id = "c1";
    o.allow_empty_start = allow_empty_start;
    o.open_store = [this](std::string* error) -> std::unique_ptr<ObjectStore> {
      if (store_broken_) {
        *error = "cannot open " + dir_.path();
        return nullptr;
      }
      return testing::OpenLocalStore(dir_.path());
    };
    return o;
  }
  // A complete snapshot's objects (the guard reads only latest.txt and
  // protected.txt), made latest.
  void Publish(const std::string& id) {
    for (std::string_view name : kSnapshotObjects) {
      ASSERT_EQ(store_->Put(catalog_.ObjectKey(id, name), "x"), ErrorCode::OK);
    }
    ASSERT_EQ(catalog_.SetLatest(id), ErrorCode::OK);
  }
  std::string Protected() { return *catalog_.Protected(); }

  testing::TempDir dir_;
  std::unique_ptr<LocalStore> store_ = testing::OpenLocalStore(dir_.path());
  SnapshotCatalog catalog_{store_.get(), "c1"};
  bool store_broken_ = false;
};

const std::string kFull = SnapshotIdAt(1'700'000'000'000);
const std::string kEmpty1 = SnapshotIdAt(1'700'000'100'000);

TEST_F(EmptyStartGuardTest, AStoreWithoutSnapshotsNeedsNothing) {
  EmptyStartGuard guard(Options());
  EmptyStartOutcome out = guard.OnServing(0, false);
  EXPECT_TRUE(out.trusted);
  EXPECT_EQ(out.log, "");
  EXPECT_EQ(guard.empty_starts(), 0u);
  EXPECT_EQ(Protected(), "");
}

TEST_F(EmptyStartGuardTest, AnEmptyStartOverAnUnrestoredSnapshotProtectsIt) {
  Publish(kFull);
  EmptyStartGuard guard(Options());
  EmptyStartOutcome out = guard.OnServing(0, false);
  EXPECT_FALSE(out.trusted);
  EXPECT_TRUE(out.newly_protected);
  EXPECT_EQ(out.protected_id, kFull);
  EXPECT_EQ(Protected(), kFull);
  EXPECT_NE(out.log.find("--snapshot_restore_id=" + kFull), std::string::npos) << out.log;
  EXPECT_EQ(guard.empty_starts(), 1u);
  EXPECT_TRUE(guard.protecting());
}

TEST_F(EmptyStartGuardTest, ALaterEmptyStartKeepsTheEarlierProtection) {
  Publish(kFull);
  EmptyStartGuard first(Options());
  ASSERT_EQ(first.OnServing(0, false).protected_id, kFull);
  Publish(kEmpty1);  // the empty master's own snapshot became latest
  EmptyStartGuard second(Options());
  EmptyStartOutcome out = second.OnServing(0, false);
  EXPECT_FALSE(out.trusted);
  EXPECT_FALSE(out.newly_protected);
  EXPECT_EQ(out.protected_id, kFull);
  EXPECT_EQ(Protected(), kFull);
}

TEST_F(EmptyStartGuardTest, RestoringTheLatestOrHoldingObjectsOrACopyIsTrusted) {
  Publish(kFull);
  EmptyStartGuard guard(Options());
  guard.SetRestored(kFull);  // it restored the latest (which may be empty)
  EXPECT_TRUE(guard.OnServing(0, false).trusted);
  Publish(kEmpty1);
  EXPECT_TRUE(guard.OnServing(7, false).trusted);
  EXPECT_TRUE(guard.OnServing(0, true).trusted);
  EXPECT_EQ(Protected(), "");
  EXPECT_EQ(guard.empty_starts(), 0u);
  EXPECT_FALSE(guard.protecting());
  // Restored, but not the latest: an empty term over a newer snapshot.
  EXPECT_FALSE(guard.OnServing(0, false).trusted);
  EXPECT_EQ(Protected(), kEmpty1);
}

TEST_F(EmptyStartGuardTest, TheOperatorsOverrideReleasesTheProtection) {
  Publish(kFull);
  EmptyStartGuard careful(Options());
  ASSERT_EQ(careful.OnServing(0, false).protected_id, kFull);
  EmptyStartGuard meant(Options(/*allow_empty_start=*/true));
  EmptyStartOutcome out = meant.OnServing(0, false);
  EXPECT_FALSE(out.trusted);
  EXPECT_EQ(out.released_id, kFull);
  EXPECT_EQ(out.protected_id, "");
  EXPECT_EQ(Protected(), "");
  EXPECT_FALSE(meant.protecting());
  EXPECT_NE(out.log.find("--snapshot_allow_empty_start"), std::string::npos) << out.log;
}

TEST_F(EmptyStartGuardTest, AStoreThatCannotBeOpenedIsSaidInTheLog) {
  store_broken_ = true;
  EmptyStartGuard guard(Options());
  EmptyStartOutcome out = guard.OnServing(0, false);
  EXPECT_TRUE(out.trusted);
  EXPECT_NE(out.log.find("cannot open"), std::string::npos) << out.log;
}

// The whole path: an empty directory's snapshots with retention 1 never
// delete the protected one.
TEST_F(EmptyStartGuardTest, RetentionOfAnEmptyMastersSnapshotsKeepsTheProtectedOne) {
  Publish(kFull);
  EmptyStartGuard guard(Options());
  ASSERT_EQ(guard.OnServing(0, false).protected_id, kFull);
  ManualClock clock;
  std::unique_ptr<Directory> empty = testing::MakeDirectory(&clock);
  SnapshotterOptions o;
  o.cluster_id = "c1";
  o.retention_count = 1;
  Snapshotter snapshotter(empty.get(), store_.get(), o);
  std::vector<std::string> taken;
  for (int i = 0; i < 3; ++i) {
    SnapshotResult r = snapshotter.TakeSnapshotNow();
    ASSERT_EQ(r.code, ErrorCode::OK) << r.failed_stage << " " << r.detail;
    taken.push_back(r.snapshot_id);
  }
  auto listed = catalog_.List();
  ASSERT_TRUE(listed.ok());
  std::vector<std::string> ids;
  for (const auto& l : *listed) ids.push_back(l.id);
  EXPECT_EQ(ids, (std::vector<std::string>{taken.back(), kFull}));
}

TEST_F(EmptyStartGuardTest, MetricsShowTheCountAndTheProtection) {
  Publish(kFull);
  MetricsRegistry registry;
  EmptyStartGuard guard(Options());
  AddEmptyStartMetrics(registry, guard);
  ASSERT_FALSE(guard.OnServing(0, false).trusted);
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(testing::MetricValue(text, "shelfmark_master_snapshot_empty_starts_total"), 1);
  EXPECT_EQ(testing::MetricValue(text, "shelfmark_master_snapshot_protected"), 1);
}

}  // namespace
}  // namespace shelfmark
