// Node against the real master service: mount, unmount on Stop, remount
// after the master restarts (a fresh, empty directory on the same port), and
// the SSD store: a real bucket backend in a temporary directory served over
// real UCX active messages (LOCAL_DISK reads), re-reported to the master on
// start and after a restart, offload from the node's segment (prompt, on the
// offload thread, in byte-sized batches) and evictions, and promotion on
// hit (an object read often from the SSD store copied back into the node's
// segment and attached as a MEMORY replica).
#include "node/node.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <mutex>
#include <thread>

#include "client/local_disk_client.h"
#include "directory/directory.h"
#include "master/rpc_server.h"
#include "ssdstore/storage_backend_factory.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"
#include "transport/loopback_engine.h"
#include "transport/transport_test_util.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

// A master: a Directory served on 127.0.0.1:port (0: any free port).
// `watermark`: the eviction high watermark (nullopt: the default).
struct Master {
  explicit Master(uint16_t port, bool enable_offload = false,
                  std::optional<double> watermark = std::nullopt) {
    DirectoryOptions d;
    d.start_background_thread = false;
    d.enable_offload = enable_offload;
    if (watermark) d.eviction_high_watermark_ratio = *watermark;
    directory = std::make_unique<Directory>(d);
    RpcServerOptions r;
    r.bind_address = "127.0.0.1";
    r.port = port;
    server = std::make_unique<RpcServer>(*directory, nullptr, r);
    auto bound = server->Start();
    EXPECT_TRUE(bound.ok());
    this->port = bound.ok() ? *bound : 0;
  }
  std::unique_ptr<Directory> directory;
  std::unique_ptr<RpcServer> server;
  uint16_t port = 0;
};

// Counts on_mounted calls; waits for a given count.
struct MountWatch {
  std::mutex mu;
  std::condition_variable cv;
  int mounts = 0;
  void Mounted() {
    std::lock_guard<std::mutex> lock(mu);
    ++mounts;
    cv.notify_all();
  }
  void WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return mounts >= n; });
  }
};

NodeOptions Options(uint16_t port, MountWatch* watch) {
  NodeOptions o;
  o.master = "127.0.0.1:" + std::to_string(port);
  o.segment_size = 1 << 20;
  o.segment_name = "node-test";
  o.ping_interval_ms = 20;
  o.retry_interval_ms = 20;
  o.on_mounted = [watch](const Segment&) { watch->Mounted(); };
  return o;
}

TEST(NodeTest, MountsThenUnmountsOnStop) {
  Master master(0);
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  auto node = Node::Create(Options(master.port, &watch), &engine);
  ASSERT_TRUE(node.ok());
  const Segment& s = (*node)->segment();
  EXPECT_EQ(s.size, 1u << 20);
  EXPECT_EQ(s.protocol, "loopback");
  EXPECT_EQ(s.endpoint, engine.endpoint());
  EXPECT_EQ(s.base, reinterpret_cast<uint64_t>((*node)->memory()));
  EXPECT_FALSE(s.rkey.empty());
  ErrorCode unmounted = ErrorCode::INTERNAL_ERROR;
  std::thread loop([&] { unmounted = (*node)->Run(); });
  watch.WaitFor(1);
  EXPECT_TRUE((*node)->mounted());
  EXPECT_EQ(master.directory->Stats().segment_count, 1u);
  (*node)->Stop();
  loop.join();
  EXPECT_EQ(unmounted, ErrorCode::OK);
  EXPECT_FALSE((*node)->mounted());
  EXPECT_EQ(master.directory->Stats().segment_count, 0u);
}

TEST(NodeTest, RemountsAfterTheMasterRestarts) {
  auto master = std::make_unique<Master>(0);
  const uint16_t port = master->port;
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  auto node = Node::Create(Options(port, &watch), &engine);
  ASSERT_TRUE(node.ok());
  std::thread loop([&] { (void)(*node)->Run(); });
  watch.WaitFor(1);
  master.reset();                          // the master goes away...
  master = std::make_unique<Master>(port);  // ...and comes back empty
  ASSERT_EQ(master->port, port);
  watch.WaitFor(2);
  EXPECT_GE((*node)->counters().remounts, 1u);
  EXPECT_EQ(master->directory->Stats().segment_count, 1u);
  (*node)->Stop();
  loop.join();
  EXPECT_EQ(master->directory->Stats().segment_count, 0u);
}

TEST(NodeTest, StopBeforeTheMasterAnswersReturns) {
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  // Port 1 on loopback: nothing listens, mounts fail and are retried.
  auto node = Node::Create(Options(1, &watch), &engine);
  ASSERT_TRUE(node.ok());
  std::thread loop([&] { EXPECT_EQ((*node)->Run(), ErrorCode::OK); });
  (*node)->Stop();
  loop.join();
  EXPECT_EQ((*node)->counters().mounts, 0u);
}

TEST(NodeTest, CreateRejectsBadOptions) {
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  NodeOptions o = Options(1, &watch);
  o.segment_size = 0;
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  o = Options(1, &watch);
  o.master = "nohost";
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Node::Create(Options(1, &watch), nullptr).error(), ErrorCode::INVALID_PARAMS);
}

// ------------------------------------------------------------- SSD store

constexpr int64_t kReadTimeoutMs = 10'000;
constexpr int64_t kOffloadDeadlineMs = 10'000;

// A node with a bucket SSD store in a temp dir, on a real UCX engine (its
// segment and its LOCAL_DISK service), plus a client UCX engine.
struct DiskNode {
  explicit DiskNode(uint64_t total_keys_limit = 0) {
    StorageConfig config;
    config.storage_path = dir.path();
    config.total_keys_limit = total_keys_limit;
    auto opened = OpenStorageBackend(config, nullptr, nullptr);
    EXPECT_TRUE(opened.ok());
    if (opened.ok()) backend = std::move(*opened);
    auto e = UcxEngine::Create(testing::UcxTestOptions(true));
    EXPECT_TRUE(e.ok());
    if (e.ok()) engine = std::move(*e);
    auto c = UcxEngine::Create(testing::UcxTestOptions(false));
    EXPECT_TRUE(c.ok());
    if (c.ok()) client = std::move(*c);
  }
  ~DiskNode() {
    if (loop.joinable()) {
      node->Stop();
      loop.join();
    }
    node.reset();
  }
  bool Start(uint16_t port, const std::function<void(NodeOptions&)>& adjust = nullptr) {
    if (!backend || !engine || !client) return false;
    NodeOptions o = Options(port, &watch);
    o.disk = backend.get();
    o.disk_am = &engine->am();
    o.disk_endpoint = engine->endpoint();
    if (adjust) adjust(o);
    auto created = Node::Create(o, engine.get());
    if (!created.ok()) return false;
    node = std::move(*created);
    client_id = o.client_id;
    loop = std::thread([this] { (void)node->Run(); });
    return true;
  }
  Result<LocalDiskRead> Read(std::string_view key, uint64_t size) {
    return ReadLocalDisk(client->am(), engine->endpoint(), "t", key, size, kReadTimeoutMs);
  }

  testing::TempDir dir;
  std::unique_ptr<StorageBackend> backend;
  std::unique_ptr<StorageBackend> decorator;  // over `backend`, when a test wraps it
  std::unique_ptr<UcxEngine> engine, client;
  MountWatch watch;
  UUID client_id;
  std::unique_ptr<Node> node;
  std::thread loop;
};

// The key's LOCAL_DISK replica at the master (nullopt when it has none).
std::optional<ReplicaDescriptor> DiskReplica(Directory& directory, std::string_view key) {
  auto info = directory.Stat("t", key);
  if (!info.ok()) return std::nullopt;
  for (const ReplicaDescriptor& r : info->replicas) {
    if (r.type == ReplicaType::LOCAL_DISK) return r;
  }
  return std::nullopt;
}

void ExpectDiskReplica(Directory& directory, std::string_view key, const DiskNode& n,
                       uint64_t size) {
  auto r = DiskReplica(directory, key);
  ASSERT_TRUE(r.has_value()) << key;
  EXPECT_EQ(r->status, ReplicaStatus::COMPLETE);
  EXPECT_EQ(r->disk.client_id, n.client_id);
  EXPECT_EQ(r->disk.endpoint, n.engine->endpoint());
  EXPECT_EQ(r->disk.object_size, size);
}

TEST(NodeDiskTest, ReportsStoredObjectsOnStartAndAfterMasterRestart) {
  DiskNode n;
  const std::string a = testing::TestPattern(5000, 'a'), b = testing::TestPattern(70000, 'b');
  ASSERT_TRUE(n.backend->WriteBatch({{"t", "k1", a}, {"t", "k2", b}}).ok());
  auto master = std::make_unique<Master>(0);
  const uint16_t port = master->port;
  ASSERT_TRUE(n.Start(port));
  n.watch.WaitFor(1);
  EXPECT_EQ(n.node->counters().disk_mounts, 1u);
  EXPECT_EQ(n.node->counters().disk_reported, 2u);
  ExpectDiskReplica(*master->directory, "k1", n, a.size());
  ExpectDiskReplica(*master->directory, "k2", n, b.size());
  auto read = n.Read("k2", b.size());
  ASSERT_TRUE(read.ok()) << ErrorCodeName(read.error());
  EXPECT_TRUE(read->data == b);
  EXPECT_EQ(n.Read("absent", 0).error(), ErrorCode::OBJECT_NOT_FOUND);

  master.reset();                           // the master goes away...
  master = std::make_unique<Master>(port);  // ...and comes back empty
  ASSERT_EQ(master->port, port);
  // (Not checked here that it is empty: pinging every 20 ms, the node may
  // already have remounted and re-reported. The second mount and the four
  // reports below say the replicas come from the node's re-report.)
  n.watch.WaitFor(2);
  EXPECT_EQ(n.node->counters().disk_mounts, 2u);
  EXPECT_EQ(n.node->counters().disk_reported, 4u);
  ExpectDiskReplica(*master->directory, "k1", n, a.size());
  ExpectDiskReplica(*master->directory, "k2", n, b.size());
  read = n.Read("k1", a.size());
  ASSERT_TRUE(read.ok()) << ErrorCodeName(read.error());
  EXPECT_TRUE(read->data == a);
}

// Puts `value` into the node's segment as the master directs (PutStart,
// copy into the node's memory, PutEnd), which queues an offload task.
void PutIntoNode(Directory& directory, DiskNode& n, const std::string& key,
                 const std::string& value) {
  auto replicas = directory.PutStart(n.client_id, "t", key, value.size(), PutConfig{});
  ASSERT_TRUE(replicas.ok()) << ErrorCodeName(replicas.error());
  ASSERT_EQ(replicas->size(), 1u);
  const MemoryDescriptor& m = (*replicas)[0].memory;
  ASSERT_EQ(m.segment_id, n.node->segment().id);
  std::memcpy(n.node->memory() + (m.buffer_address - n.node->segment().base), value.data(),
              value.size());
  ASSERT_EQ(directory.PutEnd(n.client_id, "t", key), ErrorCode::OK);
}

// Evictions reach the master at once (the DiskReporter's thread), not at
// the next ping: with a ping period of a minute, none is sent here.
TEST(NodeDiskTest, OffloadsFromItsSegmentAndReportsEvictions) {
  DiskNode n(/*total_keys_limit=*/1);
  Master master(0, /*enable_offload=*/true);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) { o.ping_interval_ms = 60'000; }));
  n.watch.WaitFor(1);
  const std::string a = testing::TestPattern(3000, 'c'), b = testing::TestPattern(9000, 'd');
  PutIntoNode(*master.directory, n, "k1", a);
  ASSERT_TRUE(testing::WaitFor([&] { return n.node->counters().offloaded >= 1; },
                               kOffloadDeadlineMs));
  ExpectDiskReplica(*master.directory, "k1", n, a.size());
  auto read = n.Read("k1", a.size());
  ASSERT_TRUE(read.ok()) << ErrorCodeName(read.error());
  EXPECT_TRUE(read->data == a);

  // A second object exceeds the one-key limit: k1 leaves the SSD store and
  // its LOCAL_DISK replica leaves the master (the MEMORY one stays).
  PutIntoNode(*master.directory, n, "k2", b);
  // The eviction (reporter thread) and k2's report (offload thread) come in
  // either order.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        NodeCounters c = n.node->counters();
        return c.disk_evictions >= 1 && c.offloaded >= 2;
      },
      kOffloadDeadlineMs));
  EXPECT_EQ(n.node->counters().offloaded, 2u);
  EXPECT_EQ(n.node->counters().offload_failures, 0u);
  EXPECT_EQ(n.node->counters().pings, 0u);
  EXPECT_FALSE(DiskReplica(*master.directory, "k1").has_value());
  ASSERT_TRUE(master.directory->Stat("t", "k1").ok());
  ExpectDiskReplica(*master.directory, "k2", n, b.size());
  EXPECT_EQ(n.Read("k1", a.size()).error(), ErrorCode::OBJECT_NOT_FOUND);
  read = n.Read("k2", b.size());
  ASSERT_TRUE(read.ok()) << ErrorCodeName(read.error());
  EXPECT_TRUE(read->data == b);
}

// The master lists a record the store no longer has (here removed behind
// the node's back: a stale entry). A read of it is a miss, and the master
// has dropped the LOCAL_DISK replica before the miss is answered: the key
// is gone there at once and can be put again at once.
TEST(NodeDiskTest, AReadOfARecordTheStoreLostIsAMissTheMasterForgetsFirst) {
  DiskNode n;
  const std::string a = testing::TestPattern(5000, 'a');
  ASSERT_TRUE(n.backend->WriteBatch({{"t", "k1", a}, {"t", "k2", a}}).ok());
  Master master(0, /*enable_offload=*/true);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) { o.ping_interval_ms = 60'000; }));
  n.watch.WaitFor(1);
  ExpectDiskReplica(*master.directory, "k1", n, a.size());  // re-reported: SSD only
  ASSERT_EQ(n.backend->Remove("t", "k1"), ErrorCode::OK);
  EXPECT_EQ(n.Read("k1", a.size()).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(master.directory->Stat("t", "k1").error(), ErrorCode::OBJECT_NOT_FOUND);
  auto again = master.directory->PutStart(n.client_id, "t", "k1", a.size(), PutConfig{});
  EXPECT_TRUE(again.ok()) << ErrorCodeName(again.error());
  EXPECT_EQ(n.node->counters().disk_lost_reported, 1u);
  EXPECT_EQ(n.node->disk_stats().misses, 1u);
  EXPECT_EQ(n.node->disk_stats().corrupt, 0u);
  auto read = n.Read("k2", a.size());  // the other record is untouched
  ASSERT_TRUE(read.ok()) << ErrorCodeName(read.error());
  EXPECT_TRUE(read->data == a);
}

// A record whose bytes changed on disk is never served and never promoted
// (promotion after one hit here: a served read would ask for it): the read
// is a miss, the record leaves the store and the master, counted as corrupt.
TEST(NodeDiskTest, ACorruptRecordIsAMissNeverServedNeverPromoted) {
  DiskNode n;
  const std::string a = testing::TestPattern(5000, 'a');
  auto stored = n.backend->WriteBatch({{"t", "k1", a}});
  ASSERT_TRUE(stored.ok());
  testing::FlipBits(n.dir.Join(std::to_string((*stored)[0].bucket_id) + ".bucket"),
                    (*stored)[0].offset + 1000, 0x40);
  Master master(0, /*enable_offload=*/true);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) {
    o.ping_interval_ms = 60'000;
    o.promote_after_hits = 1;
  }));
  n.watch.WaitFor(1);
  ExpectDiskReplica(*master.directory, "k1", n, a.size());
  EXPECT_EQ(n.Read("k1", a.size()).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(master.directory->Stat("t", "k1").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(n.backend->corrupt_records(), 1u);
  EXPECT_EQ(n.backend->object_count(), 0u);
  EXPECT_EQ(n.node->disk_stats().corrupt, 1u);
  EXPECT_EQ(n.node->disk_stats().bytes_served, 0u);
  EXPECT_EQ(n.node->counters().promotions_requested, 0u);
  EXPECT_EQ(n.Read("k1", a.size()).error(), ErrorCode::OBJECT_NOT_FOUND);
}

// WriteBatch waits at a gate the test opens: the window between the master
// handing a task out and the node reporting it, held open.
class GatedBackend : public ForwardingBackend {
 public:
  explicit GatedBackend(StorageBackend* inner) : ForwardingBackend(inner) {}
  Result<std::vector<StoredLocation>> WriteBatch(const std::vector<StoredObject>& batch) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    lock.unlock();
    return ForwardingBackend::WriteBatch(batch);
  }
  bool WaitForWriter(int64_t deadline_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(deadline_ms), [&] { return waiting_ > 0; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

// An object removed while the node copies it: the master refuses the report
// (the copy must not bring it back), and the node drops the copy from its
// store so no later re-report does either.
TEST(NodeDiskTest, ACopyOfAnObjectRemovedMeanwhileIsDropped) {
  DiskNode n;
  n.decorator = std::make_unique<GatedBackend>(n.backend.get());
  GatedBackend& gate = static_cast<GatedBackend&>(*n.decorator);
  struct OpenAtExit {  // a failed assertion must not leave the node's writer stuck
    GatedBackend& gate;
    ~OpenAtExit() { gate.Open(); }
  } open_at_exit{gate};
  Master master(0, /*enable_offload=*/true);
  ASSERT_TRUE(n.Start(master.port, [&](NodeOptions& o) { o.disk = &gate; }));
  n.watch.WaitFor(1);
  const std::string value = testing::TestPattern(4000, 'r');
  PutIntoNode(*master.directory, n, "k1", value);
  ASSERT_TRUE(gate.WaitForWriter(kOffloadDeadlineMs)) << "the node never wrote the copy";
  ASSERT_EQ(master.directory->Remove("t", "k1", /*force=*/true), ErrorCode::OK);
  gate.Open();
  ASSERT_TRUE(testing::WaitFor([&] { return n.node->counters().offload_stale >= 1; },
                               kOffloadDeadlineMs));
  EXPECT_EQ(n.node->counters().offloaded, 0u);
  EXPECT_EQ(master.directory->Stat("t", "k1").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(n.Read("k1", value.size()).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(n.backend->object_count(), 0u);
}

// Puts `count` objects of `size` bytes (k0, k1, ...), each a different
// pattern; returns their values.
std::vector<std::string> PutMany(Directory& directory, DiskNode& n, int count, size_t size) {
  std::vector<std::string> values;
  for (int i = 0; i < count; ++i) {
    values.push_back(testing::TestPattern(size, static_cast<char>('a' + i % 26)));
    PutIntoNode(directory, n, "k" + std::to_string(i), values.back());
  }
  return values;
}

// The objects reached the SSD store intact: read back over LOCAL_DISK.
void ExpectStored(DiskNode& n, const std::vector<std::string>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string key = "k" + std::to_string(i);
    auto read = n.Read(key, values[i].size());
    ASSERT_TRUE(read.ok()) << key << ": " << ErrorCodeName(read.error());
    EXPECT_TRUE(read->data == values[i]) << key;
  }
}

// A burst is offloaded promptly on the offload thread: with a ping period of
// a minute, the ping rhythm cannot be what offloads it.
TEST(NodeDiskTest, OffloadsABurstWithoutWaitingForPings) {
  DiskNode n;
  Master master(0, /*enable_offload=*/true);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) {
    o.segment_size = 8 << 20;
    o.ping_interval_ms = 60'000;
  }));
  n.watch.WaitFor(1);
  constexpr int kObjects = 100;  // more than one OffloadHeartbeat's worth
  constexpr size_t kSize = 20'000;
  const std::vector<std::string> values = PutMany(*master.directory, n, kObjects, kSize);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (int i = 0; i < kObjects; ++i) {
          if (!DiskReplica(*master.directory, "k" + std::to_string(i))) return false;
        }
        return true;
      },
      kOffloadDeadlineMs));
  for (int i = 0; i < kObjects; ++i) {
    ExpectDiskReplica(*master.directory, "k" + std::to_string(i), n, kSize);
  }
  ASSERT_TRUE(testing::WaitFor([&] { return n.node->counters().offload_inflight == 0; },
                               kOffloadDeadlineMs));
  const NodeCounters c = n.node->counters();
  EXPECT_EQ(c.pings, 0u);
  EXPECT_EQ(c.offloaded, static_cast<uint64_t>(kObjects));
  EXPECT_EQ(c.offloaded_bytes, kObjects * kSize);
  EXPECT_EQ(c.offload_failures, 0u);
  EXPECT_GE(c.offload_batches, 2u);  // at least two heartbeats' worth
  EXPECT_EQ(n.backend->object_count(), static_cast<uint64_t>(kObjects));
  ExpectStored(n, values);
}

// offload_batch_bytes bounds a write batch: 64 KiB with 1 MiB objects makes
// each object a batch of its own (written while the next one is copied).
TEST(NodeDiskTest, SplitsTasksIntoBatchesByBytes) {
  DiskNode n;
  Master master(0, /*enable_offload=*/true);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) {
    o.segment_size = 16 << 20;
    o.offload_batch_bytes = 64 << 10;
  }));
  n.watch.WaitFor(1);
  constexpr int kObjects = 8;
  constexpr size_t kSize = 1 << 20;
  const std::vector<std::string> values = PutMany(*master.directory, n, kObjects, kSize);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        NodeCounters c = n.node->counters();
        return c.offloaded == kObjects && c.offload_inflight == 0;
      },
      kOffloadDeadlineMs))
      << n.node->counters().offloaded;
  const NodeCounters c = n.node->counters();
  EXPECT_EQ(c.offload_batches, static_cast<uint64_t>(kObjects));
  EXPECT_EQ(c.offloaded_bytes, kObjects * kSize);
  EXPECT_EQ(c.offload_failures, 0u);
  ExpectStored(n, values);
}

// An offload task's source and a promotion's destination: a range of the
// segment, never past it.
TEST(NodeDiskTest, SegmentOffsetMustLieInTheSegment) {
  Segment s;
  s.base = 1 << 20;
  s.size = 1 << 16;
  EXPECT_EQ(SegmentOffset(s, s.base, 100), 0u);
  EXPECT_EQ(SegmentOffset(s, s.base + 4096, 100), 4096u);
  EXPECT_EQ(SegmentOffset(s, s.base, s.size), 0u);
  EXPECT_EQ(SegmentOffset(s, s.base + s.size - 100, 100), s.size - 100);
  EXPECT_FALSE(SegmentOffset(s, 0, 100));  // no address (an older master's task)
  EXPECT_FALSE(SegmentOffset(s, s.base - 1, 100));
  EXPECT_FALSE(SegmentOffset(s, s.base + s.size - 99, 100));
  EXPECT_FALSE(SegmentOffset(s, s.base + s.size, 1));
  EXPECT_FALSE(SegmentOffset(s, s.base, s.size + 1));
  EXPECT_FALSE(SegmentOffset(s, UINT64_MAX - 10, 100));
  EXPECT_FALSE(SegmentOffset(s, s.base + 10, UINT64_MAX));
}

TEST(NodeDiskTest, CreateRejectsAPartialDisk) {
  testing::TempDir dir;
  StorageConfig config;
  config.storage_path = dir.path();
  auto backend = OpenStorageBackend(config, nullptr, nullptr);
  ASSERT_TRUE(backend.ok());
  LoopbackEngine engine(TransportOptions{});
  MountWatch watch;
  NodeOptions o = Options(1, &watch);
  o.disk = backend->get();
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  o = Options(1, &watch);
  o.offload_poll_interval_ms = 0;
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  o = Options(1, &watch);
  o.offload_batch_bytes = 0;
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
  o = Options(1, &watch);
  o.promote_window_ms = 0;
  EXPECT_EQ(Node::Create(o, &engine).error(), ErrorCode::INVALID_PARAMS);
}

// ------------------------------------------------------- promotion on hit

// The key's MEMORY replica at the master (nullopt when it has none).
std::optional<ReplicaDescriptor> MemoryReplica(Directory& directory, std::string_view key) {
  auto info = directory.Stat("t", key);
  if (!info.ok()) return std::nullopt;
  for (const ReplicaDescriptor& r : info->replicas) {
    if (r.type == ReplicaType::MEMORY) return r;
  }
  return std::nullopt;
}

// Reads `key` from the node's SSD store `times` times over LOCAL_DISK and
// checks the bytes.
void ReadFromDisk(DiskNode& n, std::string_view key, const std::string& value, int times) {
  for (int i = 0; i < times; ++i) {
    auto read = n.Read(key, value.size());
    ASSERT_TRUE(read.ok()) << key << ": " << ErrorCodeName(read.error());
    ASSERT_TRUE(read->data == value) << key;
  }
}

// Objects stored before the node starts are LOCAL_DISK-only at the master;
// one read promote_after_hits times comes back into the node's segment as a
// COMPLETE MEMORY replica holding the same bytes.
TEST(NodePromotionTest, PromotesAnObjectReadOftenFromDisk) {
  DiskNode n;
  const std::string hot = testing::TestPattern(70000, 'h'), cold = testing::TestPattern(5000, 'c');
  ASSERT_TRUE(n.backend->WriteBatch({{"t", "hot", hot}, {"t", "cold", cold}}).ok());
  Master master(0);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) { o.promote_after_hits = 3; }));
  n.watch.WaitFor(1);
  ExpectDiskReplica(*master.directory, "hot", n, hot.size());
  ASSERT_FALSE(MemoryReplica(*master.directory, "hot").has_value());
  ReadFromDisk(n, "cold", cold, 2);  // under the threshold
  ReadFromDisk(n, "hot", hot, 3);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto m = MemoryReplica(*master.directory, "hot");
        return m && m->status == ReplicaStatus::COMPLETE && n.node->counters().promoted == 1;
      },
      kOffloadDeadlineMs))
      << n.node->counters().promotions_requested;
  auto m = MemoryReplica(*master.directory, "hot");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->memory.segment_id, n.node->segment().id);
  auto offset = SegmentOffset(n.node->segment(), m->memory.buffer_address, hot.size());
  ASSERT_TRUE(offset.has_value());
  const std::string copy(reinterpret_cast<const char*>(n.node->memory() + *offset), hot.size());
  EXPECT_TRUE(copy == hot);
  ExpectDiskReplica(*master.directory, "hot", n, hot.size());  // the disk copy stays
  EXPECT_FALSE(MemoryReplica(*master.directory, "cold").has_value());
  const NodeCounters c = n.node->counters();
  EXPECT_EQ(c.promotions_requested, 1u);
  EXPECT_EQ(c.promoted, 1u);
  EXPECT_EQ(c.promotions_refused, 0u);
  EXPECT_EQ(c.promotion_failures, 0u);
}

// promote_after_hits = 0: no tracker, nothing is ever requested.
TEST(NodePromotionTest, ZeroHitsNeverPromotes) {
  DiskNode n;
  const std::string v = testing::TestPattern(9000, 'z');
  ASSERT_TRUE(n.backend->WriteBatch({{"t", "k", v}}).ok());
  Master master(0);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) { o.promote_after_hits = 0; }));
  n.watch.WaitFor(1);
  ReadFromDisk(n, "k", v, 20);
  EXPECT_EQ(n.node->disk_stats().requests, 20u);
  const NodeCounters c = n.node->counters();
  EXPECT_EQ(c.promotions_requested, 0u);
  EXPECT_EQ(c.promoted, 0u);
  EXPECT_FALSE(MemoryReplica(*master.directory, "k").has_value());
  EXPECT_EQ(master.directory->Stats().promotions_granted, 0u);
}

// A master with no DRAM room under its eviction watermark (1% of a 1 MiB
// segment, less than the object) refuses the promotion: counted, and the
// object stays LOCAL_DISK-only and readable from disk.
TEST(NodePromotionTest, ARefusedPromotionIsCountedAndTheObjectStaysOnDisk) {
  DiskNode n;
  const std::string v = testing::TestPattern(70000, 'r');
  ASSERT_TRUE(n.backend->WriteBatch({{"t", "k", v}}).ok());
  Master master(0, /*enable_offload=*/false, /*watermark=*/0.01);
  ASSERT_TRUE(n.Start(master.port, [](NodeOptions& o) { o.promote_after_hits = 3; }));
  n.watch.WaitFor(1);
  ReadFromDisk(n, "k", v, 3);
  ASSERT_TRUE(testing::WaitFor([&] { return n.node->counters().promotions_refused == 1; },
                               kOffloadDeadlineMs));
  const NodeCounters c = n.node->counters();
  EXPECT_EQ(c.promotions_requested, 1u);
  EXPECT_EQ(c.promoted, 0u);
  EXPECT_EQ(c.promotion_failures, 0u);
  EXPECT_EQ(master.directory->Stats().promotions_refused, 1u);
  EXPECT_FALSE(MemoryReplica(*master.directory, "k").has_value());
  ExpectDiskReplica(*master.directory, "k", n, v.size());
  ReadFromDisk(n, "k", v, 1);
}

}  // namespace
}  // namespace shelfmark
