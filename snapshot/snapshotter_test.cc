#include "snapshot/snapshotter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "snapshot/codec.h"
#include "snapshot/s3_store.h"
#include "snapshot/snapshot_catalog.h"
#include "snapshot/snapshot_restore.h"
#include "snapshot/snapshot_test_util.h"
#include "testing/process_util.h"

namespace shelfmark {
namespace {

class SnapshotterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(dir_->MountSegment(node_, testing::TestSegment("s", 0x100000, 64 << 20)),
              ErrorCode::OK);
  }
  std::unique_ptr<Snapshotter> Make(ObjectStore* store, SnapshotterOptions o = {}) {
    o.cluster_id = "c1";
    return std::make_unique<Snapshotter>(dir_.get(), store, std::move(o));
  }
  void PutKeys(int from, int to) {
    for (int i = from; i < to; ++i) {
      std::string key = "key-" + std::to_string(i);
      ASSERT_TRUE(dir_->PutStart(writer_, "", key, 100, {}).ok()) << key;
      ASSERT_EQ(dir_->PutEnd(writer_, "", key), ErrorCode::OK) << key;
    }
  }
  // The directory still serves reads and writes.
  void ExpectServing(const std::string& key) {
    ASSERT_TRUE(dir_->PutStart(writer_, "", key, 100, {}).ok());
    EXPECT_EQ(dir_->PutEnd(writer_, "", key), ErrorCode::OK);
    EXPECT_TRUE(dir_->GetReplicaList("", key).ok());
  }
  RestoreReport RestoreInto(Directory* d, ObjectStore* store) {
    RestoreOptions o;
    o.cluster_id = "c1";
    return RestoreFromSnapshots(d, store, o);
  }

  ManualClock clock_;
  testing::TempDir tmp_;
  std::unique_ptr<LocalStore> store_ = testing::OpenLocalStore(tmp_.path());
  SnapshotCatalog catalog_{store_.get(), "c1"};
  std::unique_ptr<Directory> dir_ = testing::MakeDirectory(&clock_);
  UUID node_ = UUID::Generate();
  UUID writer_ = UUID::Generate();
};

TEST_F(SnapshotterTest, PublishesEveryObjectThenLatest) {
  PutKeys(0, 100);
  std::vector<SnapshotResult> seen;
  SnapshotterOptions o;
  o.on_result = [&](const SnapshotResult& r) { seen.push_back(r); };
  auto s = Make(store_.get(), o);
  SnapshotResult r = s->TakeSnapshotNow();
  ASSERT_EQ(r.code, ErrorCode::OK) << r.failed_stage;
  EXPECT_TRUE(ValidSnapshotId(r.snapshot_id));
  EXPECT_EQ(r.objects, 100u);
  EXPECT_GT(r.fork_pause_ms, 0);
  EXPECT_GT(r.child_ms, 0);
  EXPECT_GT(r.cow_bytes, 0u);
  EXPECT_EQ(*catalog_.Latest(), r.snapshot_id);
  uint64_t stored = 0;
  for (std::string_view name : kSnapshotObjects) {
    auto bytes = store_->Get(catalog_.ObjectKey(r.snapshot_id, name));
    ASSERT_TRUE(bytes.ok()) << name;
    stored += bytes->size();
  }
  EXPECT_EQ(r.snapshot_bytes, stored);
  auto manifest = DecodeManifest(*store_->Get(catalog_.ObjectKey(r.snapshot_id, "manifest.txt")));
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(manifest->snapshot_id, r.snapshot_id);
  SnapshotterStats st = s->Stats();
  EXPECT_EQ(st.succeeded, 1u);
  EXPECT_EQ(st.failed, 0u);
  EXPECT_EQ(st.last.snapshot_id, r.snapshot_id);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].snapshot_id, r.snapshot_id);
}

TEST_F(SnapshotterTest, RetentionKeepsTheNewest) {
  SnapshotterOptions o;
  o.retention_count = 2;
  auto s = Make(store_.get(), o);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    PutKeys(i * 10, i * 10 + 10);
    SnapshotResult r = s->TakeSnapshotNow();
    ASSERT_EQ(r.code, ErrorCode::OK) << r.failed_stage;
    ids.push_back(r.snapshot_id);
  }
  EXPECT_EQ(*catalog_.Candidates(), (std::vector<std::string>{ids[3], ids[2]}));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
}

TEST_F(SnapshotterTest, PeriodicThreadSnapshotsUntilStopped) {
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::string last_ok;
  SnapshotterOptions o;
  o.interval_ms = 1;
  o.on_result = [&](const SnapshotResult& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r.code == ErrorCode::OK) last_ok = r.snapshot_id;
    ++done;
    cv.notify_all();
  };
  auto s = Make(store_.get(), o);
  s->Start();
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done >= 3; });
  }
  s->Stop();
  EXPECT_GE(s->Stats().succeeded, 3u);
  // With a 1 ms interval the next snapshot may be running when Stop() comes:
  // that one is killed and counted as failed (as documented), none other.
  EXPECT_LE(s->Stats().failed, 1u);
  // Latest names the last snapshot that succeeded, or the one Stop() killed
  // if the kill came after it was published.
  const std::string latest = *catalog_.Latest();
  EXPECT_TRUE(latest == last_ok || latest == s->Stats().last.snapshot_id) << latest;
}

// A pipe a child hook writes one byte into before it stops itself.
struct Signal {
  Signal() { EXPECT_EQ(pipe(fds), 0); }
  ~Signal() {
    close(fds[0]);
    close(fds[1]);
  }
  void Notify() const {
    char c = 1;
    ssize_t n = write(fds[1], &c, 1);
    (void)n;
  }
  void Await() const {
    char c;
    ASSERT_EQ(read(fds[0], &c, 1), 1);
  }
  int fds[2];
};

TEST_F(SnapshotterTest, ChildStuckBeforeLatestIsKilledAndLatestKeepsThePrevious) {
  PutKeys(0, 10);
  auto good = Make(store_.get())->TakeSnapshotNow();
  ASSERT_EQ(good.code, ErrorCode::OK);
  PutKeys(10, 30);

  Signal stuck;
  SnapshotterOptions o;
  o.child_timeout_ms = 1000;
  o.child_stage_hook = [&](std::string_view stage) {
    if (stage != "latest") return;
    stuck.Notify();
    raise(SIGSTOP);  // hangs until the parent's timeout kills it
  };
  auto s = Make(store_.get(), o);
  SnapshotResult r;
  std::thread snap([&] { r = s->TakeSnapshotNow(); });
  stuck.Await();
  // The child is stopped mid-publish: the directory serves meanwhile.
  ExpectServing("during-stuck-child");
  snap.join();
  EXPECT_NE(r.code, ErrorCode::OK);
  EXPECT_EQ(r.failed_stage, "timeout");
  EXPECT_EQ(s->Stats().failed, 1u);
  EXPECT_EQ(*catalog_.Latest(), good.snapshot_id);

  auto fresh = testing::MakeDirectory(&clock_);
  RestoreReport rr = RestoreInto(fresh.get(), store_.get());
  EXPECT_EQ(rr.snapshot_id, good.snapshot_id);
  EXPECT_EQ(rr.objects, 10u);
}

TEST_F(SnapshotterTest, ChildKilledMidWriteLeavesTheLastCompleteSnapshot) {
  PutKeys(0, 10);
  auto good = Make(store_.get())->TakeSnapshotNow();
  ASSERT_EQ(good.code, ErrorCode::OK);
  PutKeys(10, 30);
  SnapshotterOptions o;
  o.child_stage_hook = [](std::string_view stage) {
    if (stage == "task_manager") raise(SIGKILL);  // metadata and segments written
  };
  auto s = Make(store_.get(), o);
  SnapshotResult r = s->TakeSnapshotNow();
  EXPECT_EQ(r.failed_stage, "killed");
  EXPECT_EQ(s->Stats().failed, 1u);
  EXPECT_EQ(*catalog_.Latest(), good.snapshot_id);
  auto listed = catalog_.List();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_FALSE((*listed)[0].complete);

  auto fresh = testing::MakeDirectory(&clock_);
  RestoreReport rr = RestoreInto(fresh.get(), store_.get());
  EXPECT_EQ(rr.snapshot_id, good.snapshot_id);
  EXPECT_EQ(rr.objects, 10u);
  // The next good snapshot's retention removes the torn one.
  auto next = Make(store_.get())->TakeSnapshotNow();
  ASSERT_EQ(next.code, ErrorCode::OK);
  EXPECT_EQ(*catalog_.Candidates(), (std::vector<std::string>{next.snapshot_id, good.snapshot_id}));
}

TEST_F(SnapshotterTest, StopKillsARunningChild) {
  Signal stuck;
  SnapshotterOptions o;
  o.child_stage_hook = [&](std::string_view stage) {
    if (stage != "metadata") return;
    stuck.Notify();
    raise(SIGSTOP);
  };
  auto s = Make(store_.get(), o);
  SnapshotResult r;
  std::thread snap([&] { r = s->TakeSnapshotNow(); });
  stuck.Await();
  s->Stop();
  snap.join();
  EXPECT_EQ(r.failed_stage, "stopped");
  EXPECT_EQ(*catalog_.Latest(), "");
}

// A tmpfs of 256 KiB at a fresh directory, or a skip when mounting is not
// allowed here (not root, no CAP_SYS_ADMIN).
class FullDiskTest : public SnapshotterTest {
 protected:
  void SetUp() override {
    SnapshotterTest::SetUp();
    if (mount("tmpfs", disk_.path().c_str(), "tmpfs", 0, "size=256k") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (" << strerror(errno)
                   << "): the full-disk case needs root";
    }
    mounted_ = true;
    small_ = testing::OpenLocalStore(disk_.path());
  }
  void TearDown() override {
    small_.reset();
    if (mounted_) umount2(disk_.path().c_str(), MNT_DETACH);
  }
  // Fills the tmpfs until a write fails.
  void Fill() {
    std::ofstream filler(disk_.path() + "/filler", std::ios::binary);
    std::string block(4096, 'x');
    while (filler.write(block.data(), block.size()) && filler.flush()) {
    }
  }

  testing::TempDir disk_;
  bool mounted_ = false;
  std::unique_ptr<LocalStore> small_;
};

TEST_F(FullDiskTest, SnapshotFailsIsCountedAndTheMasterKeepsServing) {
  PutKeys(0, 50);
  auto s = Make(small_.get());
  SnapshotResult good = s->TakeSnapshotNow();
  ASSERT_EQ(good.code, ErrorCode::OK) << good.failed_stage;
  PutKeys(50, 100);
  Fill();
  for (int i = 0; i < 3; ++i) {
    SnapshotResult r = s->TakeSnapshotNow();
    EXPECT_EQ(r.code, ErrorCode::FILE_WRITE_FAIL);
    // The cause and the key are reported; the unpublished snapshot's
    // directory is gone again (it used to stay behind, empty, each time).
    EXPECT_NE(r.detail.find("No space left on device"), std::string::npos) << r.detail;
    EXPECT_NE(r.detail.find(r.snapshot_id), std::string::npos) << r.detail;
    EXPECT_TRUE(r.discarded);
  }
  EXPECT_EQ(s->Stats().failed, 3u);
  ExpectServing("after-full-disk");
  SnapshotCatalog catalog(small_.get(), "c1");
  EXPECT_EQ(*catalog.Latest(), good.snapshot_id);
  std::vector<std::string> left;
  for (const auto& entry :
       std::filesystem::directory_iterator(disk_.path() + "/mooncake_master_snapshot/c1")) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{good.snapshot_id, "latest.txt"}));
  // Space back: the next snapshot succeeds.
  ASSERT_EQ(unlink((disk_.path() + "/filler").c_str()), 0);
  SnapshotResult again = s->TakeSnapshotNow();
  EXPECT_EQ(again.code, ErrorCode::OK) << again.failed_stage;
  EXPECT_EQ(s->Stats().succeeded, 2u);
}

std::unique_ptr<S3Store> S3At(uint16_t port) {
  S3Config c;
  c.endpoint = "http://127.0.0.1:" + std::to_string(port);
  c.bucket = "snapshots";
  c.access_key = "S3RVER";
  c.secret_key = "S3RVER";
  c.timeout_ms = 500;
  auto store = S3Store::Open(c);
  EXPECT_TRUE(store.ok());
  return store.ok() ? std::move(*store) : nullptr;
}

// A listening socket that never accepts: connections complete in the
// kernel's backlog and requests are never answered.
class SilentServer {
 public:
  SilentServer() {
    fd_ = testing::ListenLoopback(16, &port_);
    EXPECT_GE(fd_, 0);
  }
  ~SilentServer() { close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// A port nobody listens on: bound and closed again.
uint16_t DeadPort() {
  SilentServer s;
  return s.port();
}

TEST_F(SnapshotterTest, S3RefusingConnectionsFailsTheSnapshotAndServingGoesOn) {
  PutKeys(0, 10);
  auto s3 = S3At(DeadPort());
  ASSERT_NE(s3, nullptr);
  auto s = Make(s3.get());
  SnapshotResult r = s->TakeSnapshotNow();
  EXPECT_EQ(r.code, ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(r.failed_stage, "metadata");
  EXPECT_EQ(s->Stats().failed, 1u);
  ExpectServing("after-s3-refused");
}

TEST_F(SnapshotterTest, S3NeverAnsweringTimesOutAndServingGoesOn) {
  PutKeys(0, 10);
  SilentServer silent;
  auto s3 = S3At(silent.port());
  ASSERT_NE(s3, nullptr);
  auto s = Make(s3.get());
  SnapshotResult r = s->TakeSnapshotNow();
  EXPECT_EQ(r.code, ErrorCode::STORE_UNAVAILABLE);
  EXPECT_EQ(s->Stats().failed, 1u);
  ExpectServing("after-s3-silent");
  // Restore from the silent store gives up and starts empty.
  auto fresh = testing::MakeDirectory(&clock_);
  RestoreReport rr = RestoreInto(fresh.get(), s3.get());
  EXPECT_FALSE(rr.restored);
  ASSERT_EQ(rr.rejected.size(), 1u);
  EXPECT_NE(rr.rejected[0].find("STORE_UNAVAILABLE"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
