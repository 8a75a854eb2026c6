// Directory rules for nodes: segment mounting, unmount invalidation, client
// liveness and expiry, local disks and offload.
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

using NodesTest = DirectoryFixture;

TEST_F(NodesTest, MountRejectsBadSegments) {
  Segment s = MakeSegment("a", 1 << 20);
  Segment zero = s;
  zero.id = UUID::Generate();
  zero.size = 0;
  EXPECT_EQ(dir_->MountSegment(node_, zero), ErrorCode::INVALID_PARAMS);
  Segment nil = s;
  nil.id = UUID{};
  EXPECT_EQ(dir_->MountSegment(node_, nil), ErrorCode::INVALID_PARAMS);
  Segment wrap = MakeSegment("w", 100, ~0ULL - 10);
  EXPECT_EQ(dir_->MountSegment(node_, wrap), ErrorCode::INVALID_PARAMS);
  ASSERT_EQ(dir_->MountSegment(node_, s), ErrorCode::OK);
  EXPECT_EQ(dir_->MountSegment(node_, s), ErrorCode::OK);  // identical re-mount
  Segment overlap = MakeSegment("a", 4096, s.base + 4096);
  EXPECT_EQ(dir_->MountSegment(node_, overlap), ErrorCode::INVALID_PARAMS);
  Segment same_id = MakeSegment("b", 4096, 0x900000000);
  same_id.id = s.id;
  EXPECT_EQ(dir_->MountSegment(node_, same_id), ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_EQ(dir_->MountSegment(UUID::Generate(), s), ErrorCode::SEGMENT_ALREADY_EXISTS);
  EXPECT_EQ(dir_->Stats().segment_count, 1u);
  EXPECT_EQ(dir_->Stats().total_capacity_bytes, 1u << 20);
}

TEST_F(NodesTest, UnmountInvalidatesOnlyThatSegmentsReplicas) {
  Segment a = Mount(node_, "a");
  UUID other = UUID::Generate();
  Mount(other, "b");
  PutConfig two;
  two.replica_num = 2;
  ASSERT_EQ(Put("both", 10, two), ErrorCode::OK);
  PutConfig on_a;
  on_a.preferred_segments = {"a"};
  ASSERT_EQ(Put("only-a", 10, on_a), ErrorCode::OK);

  EXPECT_EQ(dir_->UnmountSegment(other, a.id), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->UnmountSegment(node_, UUID::Generate()), ErrorCode::SEGMENT_NOT_FOUND);
  ASSERT_EQ(dir_->UnmountSegment(node_, a.id), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "only-a").error(), ErrorCode::OBJECT_NOT_FOUND);
  auto both = dir_->GetReplicaList("", "both");
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->replicas.size(), 1u);
  EXPECT_EQ(both->replicas[0].memory.endpoint, "b:1234");
  EXPECT_EQ(dir_->Stats().segment_count, 1u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 64u);
  EXPECT_EQ(dir_->UnmountSegment(node_, a.id), ErrorCode::SEGMENT_NOT_FOUND);
}

// A graceful unmount's grace period: the draining segment takes no new
// replica (even a put that names it), its objects are still read, the
// listing says draining, and the unmount afterwards drops them as usual.
TEST_F(NodesTest, DrainingSegmentIsReadButTakesNoNewReplicas) {
  Segment a = Mount(node_, "a");
  UUID other = UUID::Generate();
  Mount(other, "b");
  PutConfig on_a;
  on_a.preferred_segments = {"a"};
  ASSERT_EQ(Put("old", 10, on_a), ErrorCode::OK);

  EXPECT_EQ(dir_->DrainSegment(other, a.id), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->DrainSegment(node_, UUID::Generate()), ErrorCode::SEGMENT_NOT_FOUND);
  ASSERT_EQ(dir_->DrainSegment(node_, a.id), ErrorCode::OK);
  EXPECT_EQ(dir_->DrainSegment(node_, a.id), ErrorCode::OK);  // already draining
  for (int i = 0; i < 8; ++i) {
    std::string key = "new-" + std::to_string(i);
    ASSERT_EQ(Put(key, 10, on_a), ErrorCode::OK);
    auto got = dir_->GetReplicaList("", key);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->replicas[0].memory.endpoint, "b:1234") << key;
  }
  PutConfig two;
  two.replica_num = 2;  // only one segment takes allocations
  EXPECT_EQ(Put("two", 10, two), ErrorCode::NO_AVAILABLE_HANDLE);
  auto old = dir_->GetReplicaList("", "old");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->replicas[0].memory.endpoint, "a:1234");
  bool listed = false;
  for (const SegmentState& s : dir_->ExportSegmentTable().segments) {
    EXPECT_EQ(s.draining, s.segment.id == a.id) << s.segment.name;
    listed = listed || s.segment.id == a.id;
  }
  EXPECT_TRUE(listed);

  ASSERT_EQ(dir_->UnmountSegment(node_, a.id), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "old").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(dir_->GetReplicaList("", "new-0").ok());
  EXPECT_EQ(dir_->DrainSegment(node_, a.id), ErrorCode::SEGMENT_NOT_FOUND);
}

// Issue 28: a node restarted on its endpoint mounts a new segment under a
// new client id; the old process's segment went only at client_ttl, and its
// descriptors kept being handed out. Now the new mount drops it at once.
TEST_F(NodesTest, ANewIncarnationAtTheSameEndpointDropsTheOldSegment) {
  Mount(node_, "a");
  Mount(UUID::Generate(), "b");
  PutConfig on_a;
  on_a.preferred_segments = {"a"};
  ASSERT_EQ(Put("on-old-a", 10, on_a), ErrorCode::OK);
  const UUID restarted = UUID::Generate();
  Segment again = MakeSegment("a", 1 << 20);  // same endpoint a:1234, new id
  ASSERT_EQ(dir_->MountSegment(restarted, again), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "on-old-a").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->Stats().superseded_segments, 1u);
  EXPECT_EQ(dir_->Stats().segment_count, 2u);
  EXPECT_EQ(dir_->Stats().total_capacity_bytes, 2u << 20);
  ASSERT_EQ(Put("on-new-a", 10, on_a), ErrorCode::OK);
  auto got = dir_->GetReplicaList("", "on-new-a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->replicas[0].memory.segment_id, again.id);
}

// The same restart with an SSD store: the old process's store registration
// went only at client_ttl, so lookups kept naming the dead process's
// LOCAL_DISK replicas beside the new process's re-reported ones. Now the new
// segment's mount drops them at once.
TEST_F(NodesTest, ANewIncarnationAtTheSameEndpointDropsTheOldDiskReplicas) {
  ASSERT_NO_FATAL_FAILURE(MountNodeWithStore(node_));
  ASSERT_EQ(dir_->Stat("", "also-in-b")->replicas.size(), 2u);

  const UUID restarted = UUID::Generate();
  ASSERT_EQ(dir_->MountSegment(restarted, MakeSegment("a", 1 << 20)), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().superseded_disks, 1u);
  ASSERT_NO_FATAL_FAILURE(ExpectOldStoreGone(*dir_, restarted));
  EXPECT_TRUE(dir_->ExportSegmentTable().disks.empty());
  // The dead process's late reports find no store; the new one's re-report
  // lists only it.
  EXPECT_EQ(
      dir_->NotifyOffloadSuccess(node_, {{"", "disk-only", {1, 10, 9, 10, "a:1234"}}}).error(),
      ErrorCode::ILLEGAL_CLIENT);
  ASSERT_EQ(dir_->MountLocalDisk(restarted, false, "a:1234"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().superseded_disks, 1u);  // the old store was already gone
  ASSERT_EQ(
      (*dir_->NotifyOffloadSuccess(restarted, {{"", "disk-only", {1, 10, 9, 10, "a:1234"}}}))[0],
      ErrorCode::OK);
  auto again = dir_->GetReplicaList("", "disk-only");
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->replicas.size(), 1u);
  EXPECT_EQ(again->replicas[0].disk.client_id, restarted);
  const auto disks = dir_->ExportSegmentTable().disks;
  ASSERT_EQ(disks.size(), 1u);
  EXPECT_EQ(disks[0].client, restarted);
}

// A store registered at another client's store endpoint supersedes it even
// without a segment doing so (a store may listen apart from its segment):
// the older store's LOCAL_DISK replicas go at once; stores elsewhere stay.
TEST_F(NodesTest, AStoreAtAnotherClientsStoreEndpointSupersedesIt) {
  const UUID neighbour = UUID::Generate();
  ASSERT_EQ(dir_->MountLocalDisk(node_, false, "node:7000"), ErrorCode::OK);
  ASSERT_EQ(dir_->MountLocalDisk(neighbour, false, "node:7001"), ErrorCode::OK);
  ASSERT_EQ(*dir_->NotifyOffloadSuccess(node_, {{"", "old", {1, 0, 3, 10, "node:7000"}},
                                                {"", "both", {1, 9, 4, 10, "node:7000"}, 7}}),
            (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OK}));
  ASSERT_EQ(
      (*dir_->NotifyOffloadSuccess(neighbour, {{"", "both", {1, 0, 4, 10, "node:7001"}, 7}}))[0],
      ErrorCode::OK);

  const UUID restarted = UUID::Generate();
  ASSERT_EQ(dir_->MountLocalDisk(restarted, false, "node:7000"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().superseded_disks, 1u);
  EXPECT_EQ(dir_->GetReplicaList("", "old").error(), ErrorCode::OBJECT_NOT_FOUND);
  auto both = dir_->GetReplicaList("", "both");
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->replicas.size(), 1u);
  EXPECT_EQ(both->replicas[0].disk.client_id, neighbour);
  EXPECT_EQ(dir_->NotifyOffloadSuccess(node_, {}).error(), ErrorCode::ILLEGAL_CLIENT);
  // Registering its own store again supersedes nothing.
  ASSERT_EQ((*dir_->NotifyOffloadSuccess(restarted, {{"", "old", {1, 0, 3, 10, "node:7000"}}}))[0],
            ErrorCode::OK);
  ASSERT_EQ(dir_->MountLocalDisk(restarted, false, "node:7000"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().superseded_disks, 1u);
  auto old = dir_->GetReplicaList("", "old");
  ASSERT_TRUE(old.ok());
  ASSERT_EQ(old->replicas.size(), 1u);
  EXPECT_EQ(old->replicas[0].disk.client_id, restarted);
  EXPECT_EQ(dir_->ExportSegmentTable().disks.size(), 2u);
}

TEST_F(NodesTest, PingKeepsClientsAliveAndSilentOnesLoseEverything) {
  Mount(node_, "a");
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  EXPECT_EQ(dir_->Ping(node_).status, ClientStatus::OK);
  EXPECT_EQ(dir_->Ping(UUID::Generate()).status, ClientStatus::NEED_REMOUNT);
  for (int i = 0; i < 5; ++i) {
    clock_.AdvanceMs(dir_->options().client_ttl_ms / 2);
    dir_->Ping(node_);
    dir_->RunBackgroundOnce();
  }
  EXPECT_TRUE(dir_->GetReplicaList("", "k").ok());
  clock_.AdvanceMs(dir_->options().client_ttl_ms + 1);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->Stats().segment_count, 0u);
  EXPECT_EQ(dir_->Stats().total_capacity_bytes, 0u);
  EXPECT_EQ(dir_->Ping(node_).status, ClientStatus::NEED_REMOUNT);
  EXPECT_EQ(dir_->Ping(node_).view_version, dir_->Ping(writer_).view_version);
}

// A directory that is not served from (an HA master that does not lead)
// expires nobody, however long its nodes are silent; served again, each
// node has a full TTL from then (issue 29: standbys expired every node
// while no master led, and the next leader served an empty directory).
TEST_F(NodesTest, NoClientExpiresWhileTheDirectoryIsNotServedFrom) {
  Mount(node_, "a");
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  dir_->SetServing(false);
  clock_.AdvanceMs(dir_->options().client_ttl_ms * 10);
  dir_->RunBackgroundOnce();
  EXPECT_TRUE(dir_->GetReplicaList("", "k").ok()) << "expired while not serving";
  dir_->SetServing(true);
  clock_.AdvanceMs(dir_->options().client_ttl_ms - 1);
  dir_->RunBackgroundOnce();
  EXPECT_TRUE(dir_->GetReplicaList("", "k").ok()) << "less than a full TTL since service began";
  clock_.AdvanceMs(2);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND)
      << "a silent node expires a TTL after service began";
}

TEST_F(NodesTest, OffloadAddsDiskReplicaThatSurvivesMemoryLoss) {
  DirectoryOptions opts;
  opts.enable_offload = true;
  opts.clock = &clock_;
  opts.start_background_thread = false;
  dir_ = std::make_unique<Directory>(opts);
  Segment a = Mount(node_, "a");
  ASSERT_EQ(dir_->MountLocalDisk(node_, true, "node:7000"), ErrorCode::OK);
  ASSERT_EQ(Put("k", 4096), ErrorCode::OK);

  auto tasks = dir_->OffloadHeartbeat(node_, 16);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].key, "k");
  EXPECT_EQ((*tasks)[0].tenant, "default");
  EXPECT_EQ((*tasks)[0].size, 4096u);
  {
    // The task names the bytes the master pinned: the object's MEMORY replica.
    auto where = dir_->Stat("", "k");
    ASSERT_TRUE(where.ok());
    EXPECT_EQ((*tasks)[0].buffer_address, where->replicas[0].memory.buffer_address);
    EXPECT_GE((*tasks)[0].buffer_address, a.base);
  }
  EXPECT_EQ(dir_->Remove("", "k", false), ErrorCode::OBJECT_HAS_REFERENCE);

  OffloadedObject done{"", "k", {7, 0, 1, 4096, "node:7000"}};
  auto codes = dir_->NotifyOffloadSuccess(node_, {done});
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ((*codes)[0], ErrorCode::OK);
  ASSERT_EQ(dir_->UnmountSegment(node_, a.id), ErrorCode::OK);
  auto got = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->replicas.size(), 1u);
  EXPECT_EQ(got->replicas[0].type, ReplicaType::LOCAL_DISK);
  EXPECT_EQ(got->replicas[0].disk.client_id, node_);
  EXPECT_EQ(got->replicas[0].disk.endpoint, "node:7000");
  EXPECT_EQ(got->replicas[0].disk.object_size, 4096u);

  EXPECT_EQ(dir_->EvictDiskReplica(UUID::Generate(), "", "k"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->EvictDiskReplica(node_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(NodesTest, NotifyCreatesUnknownObjectsAndChecksItems) {
  EXPECT_EQ(dir_->NotifyOffloadSuccess(node_, {}).error(), ErrorCode::ILLEGAL_CLIENT);
  ASSERT_EQ(dir_->MountLocalDisk(node_, false, "node:7000"), ErrorCode::OK);
  std::vector<OffloadedObject> items = {
      {"t", "relearned", {1, 0, 9, 500, "node:7000"}},
      {"t", "", {1, 0, 0, 500, "node:7000"}},
      {"t", "bad-size", {1, 0, 8, 0, "node:7000"}},
  };
  auto codes = dir_->NotifyOffloadSuccess(node_, items);
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ(*codes, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::INVALID_KEY,
                                            ErrorCode::INVALID_PARAMS}));
  auto got = dir_->GetReplicaList("t", "relearned");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size, 500u);
  EXPECT_EQ(got->replicas[0].type, ReplicaType::LOCAL_DISK);
  // Same object reported again: idempotent; with another size: refused.
  EXPECT_EQ((*dir_->NotifyOffloadSuccess(node_, {items[0]}))[0], ErrorCode::OK);
  EXPECT_EQ(dir_->Stat("t", "relearned")->replicas.size(), 1u);
  items[0].location.data_size = 501;
  EXPECT_EQ((*dir_->NotifyOffloadSuccess(node_, {items[0]}))[0], ErrorCode::INVALID_PARAMS);
}

TEST_F(NodesTest, OffloadHeartbeatIsEmptyWhenDisabled) {
  Mount(node_, "a");
  ASSERT_EQ(dir_->MountLocalDisk(node_, true, "node:7000"), ErrorCode::OK);
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  EXPECT_EQ(dir_->OffloadHeartbeat(UUID::Generate(), 8).error(), ErrorCode::ILLEGAL_CLIENT);
  auto tasks = dir_->OffloadHeartbeat(node_, 8);
  ASSERT_TRUE(tasks.ok());
  EXPECT_TRUE(tasks->empty());
}

TEST_F(NodesTest, RemountingDiskElsewhereDropsOldDiskReplicas) {
  ASSERT_EQ(dir_->MountLocalDisk(node_, false, "node:7000"), ErrorCode::OK);
  ASSERT_EQ((*dir_->NotifyOffloadSuccess(node_, {{"", "k", {1, 0, 1, 10, "node:7000"}}}))[0],
            ErrorCode::OK);
  ASSERT_EQ(dir_->MountLocalDisk(node_, false, "node:7000"), ErrorCode::OK);
  EXPECT_TRUE(dir_->GetReplicaList("", "k").ok());
  ASSERT_EQ(dir_->MountLocalDisk(node_, false, "node:7001"), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->MountLocalDisk(node_, false, ""), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark
