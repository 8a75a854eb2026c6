// One-round-trip puts (docs/directory.md): ReservePut reserves ranges that
// no lookup sees and nothing else may take; CommitPut turns them into a
// COMPLETE object at once, or keeps them when the key exists; reservations
// go back at their deadline, with their client, with their segment, never
// into a snapshot, and not at all while hot standbys are fed.
#include "directory/directory_impl.h"
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

constexpr uint64_t kBlock = 4096;
using Keys = std::vector<std::string_view>;

// A directory whose reservations may take its whole (small) capacity.
DirectoryOptions AllReservable() {
  DirectoryOptions o;
  o.put_reservation_share = 1.0;
  return o;
}

class ReservationTest : public DirectoryFixture {
 protected:
  ReservationTest() : DirectoryFixture(AllReservable()) {}
  void SetUp() override { segment_ = Mount(node_, "a", 4 * kBlock); }

  PutReservationGrant Reserve(const UUID& client) {
    auto grant = dir_->ReservePut(client, kBlock, {});
    EXPECT_TRUE(grant.ok()) << static_cast<int>(grant.error());
    return grant.ok() ? *grant : PutReservationGrant{};
  }
  uint64_t Allocated() { return dir_->Stats().allocated_bytes; }
  // Moves the clock with the segment's owner pinging (it stays mounted).
  void Advance(int64_t ms) {
    for (; ms > 0; ms -= 1000) {
      clock_.AdvanceMs(std::min<int64_t>(ms, 1000));
      (void)dir_->Ping(node_);
    }
  }

  Segment segment_;
};

TEST_F(ReservationTest, CommitMakesTheObjectCompleteWhereTheClientWrote) {
  PutReservationGrant grant = Reserve(writer_);
  ASSERT_EQ(grant.replicas.size(), 1u);
  EXPECT_EQ(grant.ttl_ms, DirectoryOptions{}.put_reservation_ttl_ms);
  const uint64_t address = grant.replicas[0].memory.buffer_address;
  EXPECT_GE(address, segment_.base);
  EXPECT_EQ(grant.replicas[0].memory.endpoint, "a:1234");
  EXPECT_EQ(grant.replicas[0].memory.size, kBlock);
  EXPECT_EQ(dir_->CountKeys("", true), 0u) << "a reservation is no object";
  EXPECT_EQ(Allocated(), kBlock);

  PutConfig config;
  config.checksum = 0x5eed;
  config.data_type = DataType::KVCACHE;
  CommitPutResult done = dir_->CommitPut(writer_, "", "k", grant.id, config, true);
  ASSERT_EQ(done.code, ErrorCode::OK);
  auto got = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(got.ok()) << "visible at once, complete";
  ASSERT_EQ(got->replicas.size(), 1u);
  EXPECT_EQ(got->replicas[0].status, ReplicaStatus::COMPLETE);
  EXPECT_EQ(got->replicas[0].memory.buffer_address, address);
  EXPECT_EQ(got->size, kBlock);
  EXPECT_EQ(got->checksum, std::optional<uint64_t>(0x5eed));
  EXPECT_EQ(got->data_type, DataType::KVCACHE);
  ASSERT_TRUE(done.next) << "renewed for the next put";
  EXPECT_NE(done.next->id, grant.id);
  EXPECT_NE(done.next->replicas[0].memory.buffer_address, address);
  EXPECT_EQ(Allocated(), 2 * kBlock);
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k2", grant.id, {}, false).code,
            ErrorCode::LEASE_EXPIRED)
      << "a reservation is committed once";
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.put_reservations_granted, 2u);
  EXPECT_EQ(s.put_reservations_committed, 1u);
  EXPECT_EQ(s.put_reservations_held, 1u);
}

TEST_F(ReservationTest, ReservedRangesAreTakenByNothingElse) {
  std::vector<PutReservationGrant> grants;
  for (int i = 0; i < 4; ++i) grants.push_back(Reserve(writer_));
  EXPECT_EQ(dir_->PutStart(UUID::Generate(), "", "other", kBlock, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE)
      << "the segment is all reserved";
  EXPECT_EQ(dir_->ReservePut(writer_, kBlock, {}).error(), ErrorCode::NO_AVAILABLE_HANDLE);
  dir_->RunBackgroundOnce();  // eviction finds no object to drop
  EXPECT_EQ(dir_->Stats().put_reservations_held, 4u);
}

// By default all reservations together take at most 1% of the capacity.
TEST(ReservationShareTest, ReservationsTakeASmallShareOfTheCapacity) {
  ManualClock clock;
  auto dir = MakeTestDirectory(&clock);
  const UUID node = UUID::Generate();
  ASSERT_EQ(dir->MountSegment(node, MakeTestSegment("a", 0x100000, 400 * kBlock, "a:1")),
            ErrorCode::OK);
  const UUID client = UUID::Generate();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(dir->ReservePut(client, kBlock, {}).ok()) << i;
  EXPECT_EQ(dir->ReservePut(UUID::Generate(), kBlock, {}).error(), ErrorCode::NO_AVAILABLE_HANDLE)
      << "4 of 400 blocks reserved already";
  EXPECT_EQ(dir->BatchReservePut(UUID::Generate(), {kBlock}, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_TRUE(dir->PutStart(client, "", "k", kBlock, {}).ok()) << "puts still place";
}

TEST_F(ReservationTest, AnExistingKeyKeepsTheReservation) {
  ASSERT_EQ(Put("k", kBlock), ErrorCode::OK);
  PutReservationGrant grant = Reserve(writer_);
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k", grant.id, {}, true).code,
            ErrorCode::OBJECT_ALREADY_EXISTS);
  ASSERT_TRUE(dir_->PutStart(writer_, "", "mid-put", kBlock, {}).ok());
  EXPECT_EQ(dir_->CommitPut(writer_, "", "mid-put", grant.id, {}, true).code,
            ErrorCode::OBJECT_ALREADY_EXISTS)
      << "a fresh unfinished put is its writer's";
  EXPECT_EQ(dir_->CommitPut(writer_, "", "", grant.id, {}, true).code, ErrorCode::INVALID_KEY);
  PutConfig upsert;
  upsert.replace = true;
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k", grant.id, upsert, true).code,
            ErrorCode::INVALID_PARAMS);
  CommitPutResult done = dir_->CommitPut(writer_, "", "new", grant.id, {}, false);
  EXPECT_EQ(done.code, ErrorCode::OK) << "kept through every refusal";
  EXPECT_FALSE(done.next) << "not asked to renew";
  EXPECT_EQ(dir_->Stats().put_reservations_held, 0u);
}

TEST_F(ReservationTest, OnlyItsClientCommitsIt) {
  PutReservationGrant grant = Reserve(writer_);
  EXPECT_EQ(dir_->CommitPut(UUID::Generate(), "", "k", grant.id, {}, true).code,
            ErrorCode::LEASE_EXPIRED);
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k", grant.id, {}, false).code, ErrorCode::OK);
}

TEST_F(ReservationTest, GivenBackAtItsDeadline) {
  PutReservationGrant grant = Reserve(writer_);
  Advance(DirectoryOptions{}.put_reservation_ttl_ms - 1);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(Allocated(), kBlock);
  Advance(1);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(Allocated(), 0u);
  EXPECT_EQ(dir_->Stats().put_reservations_released, 1u);
  EXPECT_EQ(dir_->CommitPut(writer_, "", "late", grant.id, {}, true).code,
            ErrorCode::LEASE_EXPIRED);
  EXPECT_EQ(dir_->GetReplicaList("", "late").error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(ReservationTest, GivenBackWithItsClient) {
  const UUID client = UUID::Generate();
  ASSERT_EQ(dir_->MountSegment(client, MakeSegment("own", 4 * kBlock, 0x900000)), ErrorCode::OK);
  PutConfig on_a;
  on_a.preferred_segments = {"a"};
  ASSERT_TRUE(dir_->ReservePut(client, kBlock, on_a).ok());
  const uint64_t before = Allocated();
  clock_.AdvanceMs(DirectoryOptions{}.client_ttl_ms + 1);
  (void)dir_->Ping(node_);  // the segment's owner stays
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().put_reservations_held, 0u);
  EXPECT_EQ(Allocated(), before - kBlock);
}

TEST_F(ReservationTest, AnUnmountTakesItsRangesAndGivesBackTheOthers) {
  const UUID other = UUID::Generate();
  Segment b = MakeSegment("b", 4 * kBlock, 0x900000);
  ASSERT_EQ(dir_->MountSegment(other, b), ErrorCode::OK);
  PutConfig two;
  two.replica_num = 2;
  auto grant = dir_->ReservePut(writer_, kBlock, two);
  ASSERT_TRUE(grant.ok());
  EXPECT_EQ(Allocated(), 2 * kBlock);
  ASSERT_EQ(dir_->UnmountSegment(other, b.id), ErrorCode::OK);
  EXPECT_EQ(Allocated(), 0u) << "the range in the segment left is given back";
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k", grant->id, {}, true).code,
            ErrorCode::LEASE_EXPIRED);
}

TEST_F(ReservationTest, ASegmentDrainingSinceTheGrantTakesNoObject) {
  PutReservationGrant grant = Reserve(writer_);
  ASSERT_EQ(dir_->DrainSegment(node_, segment_.id), ErrorCode::OK);
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k", grant.id, {}, true).code,
            ErrorCode::LEASE_EXPIRED);
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Allocated(), 0u) << "given back";
  EXPECT_EQ(dir_->ReservePut(writer_, kBlock, {}).error(), ErrorCode::NO_AVAILABLE_HANDLE);
}

TEST_F(ReservationTest, ASnapshotRecordsReservedRangesFree) {
  Reserve(writer_);
  SegmentsState exported = dir_->ExportSegments();
  ASSERT_EQ(exported.segments.size(), 1u);
  uint64_t free_bytes = 0;
  for (const auto& [offset, size] : exported.segments[0].free_extents) free_bytes += size;
  EXPECT_EQ(free_bytes, 4 * kBlock);
}

// Hot standbys hold reserved ranges (held ranges, shipped before the grant
// is answered), and see them pass to the object in the commit's changes.
TEST_F(ReservationTest, ReservedRangesShipToStandbysAsHeldRanges) {
  dir_->EnableChangeTracking();
  (void)dir_->TakeChanges();
  const uint64_t seq = dir_->ChangeSeq();
  PutReservationGrant grant = Reserve(writer_);
  EXPECT_GT(dir_->ChangeSeq(), seq) << "the grant waits for its standbys";
  ChangeSet reserved = dir_->TakeChanges();
  ASSERT_EQ(reserved.held.size(), 1u);
  const HeldRangeState held = reserved.held[0];
  EXPECT_EQ(held.segment, segment_.id);
  EXPECT_EQ(segment_.base + held.offset, grant.replicas[0].memory.buffer_address);
  EXPECT_EQ(held.size, kBlock);
  EXPECT_EQ(held.remaining_ms, DirectoryOptions{}.put_reservation_ttl_ms);
  EXPECT_TRUE(reserved.shards.empty()) << "no object yet";

  CommitPutResult done = dir_->CommitPut(writer_, "", "k", grant.id, {}, true);
  ASSERT_EQ(done.code, ErrorCode::OK);
  ASSERT_TRUE(done.next);
  ChangeSet committed = dir_->TakeChanges();
  EXPECT_EQ(committed.released, std::vector<uint64_t>{held.id});
  ASSERT_EQ(committed.shards.size(), 1u);
  ASSERT_EQ(committed.shards[0].objects.size(), 1u);
  EXPECT_EQ(committed.shards[0].objects[0].key, "k");
  EXPECT_EQ(committed.shards[0].objects[0].replicas.at(0).offset, held.offset);
  ASSERT_EQ(committed.held.size(), 1u) << "the renewal";
  EXPECT_NE(committed.held[0].offset, held.offset);

  // Each renewal holds its own ranges only: a commit releases one.
  uint64_t next = done.next->id;
  for (int i = 0; i < 2; ++i) {  // (the segment holds four blocks)
    CommitPutResult again = dir_->CommitPut(writer_, "", "r" + std::to_string(i), next, {}, true);
    ASSERT_EQ(again.code, ErrorCode::OK);
    ChangeSet c = dir_->TakeChanges();
    EXPECT_EQ(c.released.size(), 1u) << i;
    ASSERT_EQ(c.held.size(), 1u) << i;
    next = again.next->id;
    committed.held = c.held;
  }

  clock_.AdvanceMs(1);
  Advance(DirectoryOptions{}.put_reservation_ttl_ms);
  dir_->RunBackgroundOnce();
  ChangeSet expired = dir_->TakeChanges();
  EXPECT_EQ(expired.released, std::vector<uint64_t>{committed.held[0].id})
      << "given back at the deadline, on the standbys too";
}

// A placement preference is honoured at the grant or not reserved at all
// (the client then puts in two steps, placed at the put's time).
TEST_F(ReservationTest, APreferenceIsReservedOnlyWhereItAsks) {
  PutConfig here;
  here.preferred_segments = {"a"};
  auto grant = dir_->ReservePut(writer_, kBlock, here);
  ASSERT_TRUE(grant.ok());
  EXPECT_EQ(grant->replicas.at(0).memory.segment_id, segment_.id);
  here.preferred_segments = {"elsewhere"};
  EXPECT_EQ(dir_->ReservePut(writer_, kBlock, here).error(), ErrorCode::NO_AVAILABLE_HANDLE);
  PutConfig host;
  host.prefer_host = "other-host";
  EXPECT_EQ(dir_->ReservePut(writer_, kBlock, host).error(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(Allocated(), kBlock) << "the refused ones hold nothing";
  host.prefer_host = "a";
  EXPECT_TRUE(dir_->ReservePut(writer_, kBlock, host).ok()) << "its endpoint is a:1234";
}

TEST_F(ReservationTest, BadRequestsAreRefused) {
  EXPECT_EQ(dir_->ReservePut(UUID(), kBlock, {}).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->ReservePut(writer_, 0, {}).error(), ErrorCode::INVALID_PARAMS);
  PutConfig none;
  none.replica_num = 0;
  EXPECT_EQ(dir_->ReservePut(writer_, kBlock, none).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->ReservePut(writer_, 64 * kBlock, {}).error(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(dir_->CommitPut(writer_, "", "k", 12345, {}, true).code, ErrorCode::LEASE_EXPIRED);
}

// A batch's puts in one round trip: every size reserved or none, each key
// committed into its own reservation with its own checksum, renewed.
TEST_F(ReservationTest, ABatchIsReservedWholeAndCommittedKeyByKey) {
  auto grants = dir_->BatchReservePut(writer_, {kBlock, kBlock}, {});
  ASSERT_TRUE(grants.ok()) << static_cast<int>(grants.error());
  ASSERT_EQ(grants->size(), 2u);
  EXPECT_EQ(Allocated(), 2 * kBlock);
  EXPECT_EQ(dir_->CountKeys("", true), 0u) << "reservations are no objects";
  std::vector<std::string_view> keys = {"a", "b"};
  const std::vector<uint64_t> ids = {(*grants)[0].id, (*grants)[1].id};
  std::vector<CommitPutResult> done =
      dir_->BatchCommitPut(writer_, "", keys, ids, {0xa, 0xb}, {}, /*renew=*/true);
  ASSERT_EQ(done.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(done[i].code, ErrorCode::OK) << i;
    EXPECT_TRUE(done[i].next) << "renewed: " << i;
    auto got = dir_->GetReplicaList("", keys[i]);
    ASSERT_TRUE(got.ok()) << i;
    EXPECT_EQ(got->replicas.at(0).status, ReplicaStatus::COMPLETE);
    EXPECT_EQ(got->replicas[0].memory.buffer_address,
              (*grants)[i].replicas.at(0).memory.buffer_address);
    EXPECT_EQ(got->checksum, std::optional<uint64_t>(i == 0 ? 0xa : 0xb)) << "its own";
  }
  EXPECT_EQ(Allocated(), 4 * kBlock) << "two objects, two renewals";

  // The segment is full: a batch of two finds room for none, and keeps none.
  ASSERT_EQ(dir_->Remove("", "a", true), ErrorCode::OK);
  EXPECT_EQ(Allocated(), 3 * kBlock);
  EXPECT_EQ(dir_->BatchReservePut(writer_, {kBlock, kBlock}, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(Allocated(), 3 * kBlock) << "all or none: the first one was given back";

  // Another client's reservation, an existing key, an unknown id: each key
  // answered alone; the existing key's reservation is kept for the next.
  keys = {"c", "b", "d"};
  std::vector<CommitPutResult> mixed = dir_->BatchCommitPut(
      writer_, "", keys, {done[0].next->id, done[1].next->id, 999999}, {}, {}, false);
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(mixed[0].code, ErrorCode::OK);
  EXPECT_FALSE(mixed[0].next) << "not asked to renew";
  EXPECT_EQ(mixed[1].code, ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(mixed[2].code, ErrorCode::LEASE_EXPIRED);
  EXPECT_EQ(dir_->BatchCommitPut(writer_, "", Keys{"e"}, {done[1].next->id}, {}, {}, false)[0].code,
            ErrorCode::OK)
      << "kept for the next key";
  const UUID other = UUID::Generate();
  auto theirs = dir_->BatchReservePut(writer_, {kBlock}, {});
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(dir_->BatchCommitPut(other, "", Keys{"f"}, {(*theirs)[0].id}, {}, {}, false)[0].code,
            ErrorCode::LEASE_EXPIRED)
      << "only its client commits it";
}

TEST_F(ReservationTest, BadBatchesAreRefused) {
  EXPECT_EQ(dir_->BatchReservePut(UUID(), {kBlock}, {}).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->BatchReservePut(writer_, {kBlock, 0}, {}).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Allocated(), 0u);
  const std::vector<uint64_t> too_many(kMaxPutReservations + 1, kBlock);
  EXPECT_EQ(dir_->BatchReservePut(writer_, too_many, {}).error(), ErrorCode::INVALID_PARAMS);
  auto grants = dir_->BatchReservePut(writer_, {kBlock}, {});
  ASSERT_TRUE(grants.ok());
  const std::vector<std::string_view> keys = {"a"};
  for (const std::vector<CommitPutResult>& r :
       {dir_->BatchCommitPut(writer_, "", keys, {}, {}, {}, true),
        dir_->BatchCommitPut(writer_, "", keys, {(*grants)[0].id}, {1, 2}, {}, true)}) {
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].code, ErrorCode::INVALID_PARAMS) << "lengths differ";
  }
  EXPECT_EQ(dir_->CountKeys("", true), 0u);
  EXPECT_EQ(dir_->BatchCommitPut(writer_, "", Keys{""}, {(*grants)[0].id}, {}, {}, true)[0].code,
            ErrorCode::INVALID_KEY);
  EXPECT_EQ(dir_->BatchCommitPut(writer_, "", keys, {(*grants)[0].id}, {}, {}, false)[0].code,
            ErrorCode::OK)
      << "a refused key keeps the reservation";
}

}  // namespace
}  // namespace shelfmark
