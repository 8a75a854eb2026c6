// One-round-trip puts from the client library (ClientOptions::reserve_puts;
// docs/client.md) against the real master service: single puts write into
// ranges reserved ahead and commit in one call, read back byte for byte;
// a refused commit keeps the reservation and leaves the stored object
// untouched; a reservation the master gave back, or a put naming its
// placement, goes in two steps; a leader feeding standbys reserves too
// (held ranges). Batch puts reserve and commit a whole batch at a time.
#include "client/client_test_util.h"

namespace shelfmark {
namespace {

constexpr size_t kBlock = 64 << 10;

TEST_F(ClientTest, SinglePutsCommitInOneRoundTripAndReadBackExact) {
  StartNode("seg-a");
  Client& client = MakeClient();
  constexpr int kPuts = 20;
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_EQ(client.Put("", "k" + std::to_string(i), Pattern(kBlock, i)), ErrorCode::OK) << i;
  }
  for (int i = 0; i < kPuts; ++i) {
    auto got = client.Get("", "k" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << i;
    EXPECT_EQ(*got, Pattern(kBlock, i)) << i;
  }
  EXPECT_EQ(client.reserved_puts(), static_cast<uint64_t>(kPuts));
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.put_reservations_committed, static_cast<uint64_t>(kPuts));
  EXPECT_EQ(s.put_reservations_granted, kPuts + 1u) << "one asked for, then one renewal per put";
  EXPECT_EQ(s.put_reservations_held, 1u);
  EXPECT_EQ(s.allocated_bytes, (kPuts + 1) * kBlock);
}

TEST_F(ClientTest, ARefusedCommitKeepsTheReservationAndTheStoredObject) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("", "k", Pattern(kBlock, 1)), ErrorCode::OK);
  EXPECT_EQ(client.Put("", "k", Pattern(kBlock, 2)), ErrorCode::OBJECT_ALREADY_EXISTS);
  auto got = client.Get("", "k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Pattern(kBlock, 1)) << "the refused put's bytes went to its reservation only";
  ASSERT_EQ(client.Put("", "k2", Pattern(kBlock, 3)), ErrorCode::OK);
  got = client.Get("", "k2");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Pattern(kBlock, 3));
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.put_reservations_granted, 3u) << "the kept reservation served k2";
  EXPECT_EQ(s.put_reservations_committed, 2u);
  EXPECT_EQ(client.reserved_puts(), 2u);
}

TEST_F(ClientTest, AReservationGivenBackMakesThePutGoInTwoSteps) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("", "a", Pattern(kBlock, 1)), ErrorCode::OK);
  ASSERT_EQ(dir_->Stats().put_reservations_held, 1u);
  // The master's deadline passes (the node keeps pinging: it stays).
  const UUID node = dir_->ExportSegmentTable().segments.at(0).owner;
  master_clock_.AdvanceMs(DirectoryOptions{}.put_reservation_ttl_ms);
  (void)dir_->Ping(node);
  dir_->RunBackgroundOnce();
  ASSERT_EQ(dir_->Stats().put_reservations_held, 0u);
  ASSERT_EQ(dir_->Stats().put_reservations_released, 1u);

  ASSERT_EQ(client.Put("", "b", Pattern(kBlock, 2)), ErrorCode::OK);
  EXPECT_EQ(client.reserved_puts(), 1u) << "b went in two steps";
  ASSERT_EQ(client.Put("", "c", Pattern(kBlock, 3)), ErrorCode::OK);
  EXPECT_EQ(client.reserved_puts(), 2u) << "then a new reservation";
  for (auto [key, seed] : {std::pair{"a", 1}, {"b", 2}, {"c", 3}}) {
    auto got = client.Get("", key);
    ASSERT_TRUE(got.ok()) << key;
    EXPECT_EQ(*got, Pattern(kBlock, seed)) << key;
  }
}

TEST_F(ClientTest, APutNamingItsPlacementIsReservedWhereItAsks) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient();
  PutOptions on_b;
  on_b.config.preferred_segments = {"seg-b"};
  std::vector<std::string> keys, values;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client.Put("", "b" + std::to_string(i), Pattern(kBlock, i), on_b), ErrorCode::OK);
    keys.push_back("c" + std::to_string(i));
    values.push_back(Pattern(kBlock, 10 + i));
  }
  const std::vector<std::string_view> views(values.begin(), values.end());
  for (ErrorCode rc : client.BatchPut("", keys, views, on_b)) ASSERT_EQ(rc, ErrorCode::OK);
  for (const char* key : {"b0", "b1", "b2", "c0", "c1", "c2"}) {
    auto where = dir_->GetReplicaList("", key);
    ASSERT_TRUE(where.ok()) << key;
    EXPECT_EQ(where->replicas.at(0).memory.segment_id, nodes_[1]->node->segment().id) << key;
  }
  EXPECT_EQ(client.reserved_puts(), 6u);
  // A preference the master cannot honour now is not reserved: two steps.
  PutOptions nowhere;
  nowhere.config.preferred_segments = {"seg-gone"};
  ASSERT_EQ(client.Put("", "d", Pattern(kBlock, 3), nowhere), ErrorCode::OK);
  EXPECT_EQ(client.reserved_puts(), 6u);
}

TEST_F(ClientTest, ReservedPutsWorkWhileStandbysAreFed) {
  dir_->EnableChangeTracking();  // as a leader with hot standbys
  StartNode("seg-a");
  Client& client = MakeClient();
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(client.Put("", "k" + std::to_string(i), Pattern(kBlock, i)), ErrorCode::OK);
  }
  EXPECT_EQ(client.reserved_puts(), 5u);
  ChangeSet changes = dir_->TakeChanges();
  EXPECT_EQ(changes.held.size(), 1u) << "the reservation held now, for the standbys";
  auto got = client.Get("", "k4");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Pattern(kBlock, 4));
}

// Batches go the same way: one BatchReservePut for a thread's first batch
// of a shape, then one BatchCommitPut per batch, which renews each key's.
TEST_F(ClientTest, BatchPutsCommitInOneRoundTripAndReadBackExact) {
  StartNode("seg-a");
  Client& client = MakeClient();
  constexpr size_t kKeys = 8;
  std::vector<std::string> keys, values, more;
  for (size_t i = 0; i < kKeys; ++i) {
    keys.push_back("b" + std::to_string(i));
    values.push_back(Pattern(kBlock, static_cast<int>(i)));
    more.push_back("c" + std::to_string(i));
  }
  std::vector<std::string_view> views(values.begin(), values.end());
  for (ErrorCode rc : client.BatchPut("", keys, views)) ASSERT_EQ(rc, ErrorCode::OK);
  EXPECT_EQ(client.reserved_puts(), kKeys);
  // The second batch from the caller's registered memory.
  std::string block;
  for (size_t i = 0; i < kKeys; ++i) block += Pattern(kBlock, static_cast<int>(100 + i));
  ASSERT_EQ(client.RegisterBuffer(block.data(), block.size()), ErrorCode::OK);
  std::vector<ConstBuffer> buffers;
  for (size_t i = 0; i < kKeys; ++i) buffers.push_back({block.data() + i * kBlock, kBlock});
  for (ErrorCode rc : client.BatchPutFrom("", more, buffers)) ASSERT_EQ(rc, ErrorCode::OK);
  EXPECT_EQ(client.reserved_puts(), 2 * kKeys);
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.put_reservations_granted, 3 * kKeys) << "one batch asked for, then renewals";
  EXPECT_EQ(s.put_reservations_committed, 2 * kKeys);
  EXPECT_EQ(s.put_reservations_held, kKeys);
  for (size_t i = 0; i < kKeys; ++i) {
    for (const auto& [key, value] :
         {std::pair{keys[i], values[i]}, {more[i], block.substr(i * kBlock, kBlock)}}) {
      auto got = client.Get("", key);
      ASSERT_TRUE(got.ok()) << key;
      EXPECT_EQ(*got, value) << key;
      auto loc = client.Locate("", key);
      ASSERT_TRUE(loc.ok()) << key;
      EXPECT_EQ(loc->info.checksum, std::optional<uint64_t>(ObjectChecksum(value)))
          << key << ": each key carries its own checksum";
    }
  }
  client.UnregisterBuffer(block.data());
}

TEST_F(ClientTest, ABatchCommitRefusingAKeyKeepsItsReservationAndTheStoredObject) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("", "b1", Pattern(kBlock, 50)), ErrorCode::OK);
  const std::vector<std::string> values = {Pattern(kBlock, 0), Pattern(kBlock, 1),
                                           Pattern(kBlock, 2)};
  const std::vector<std::string_view> views(values.begin(), values.end());
  auto put = client.BatchPut("", {"b0", "b1", "b2"}, views);
  ASSERT_EQ(put.size(), 3u);
  EXPECT_EQ(put[0], ErrorCode::OK);
  EXPECT_EQ(put[1], ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(put[2], ErrorCode::OK);
  auto got = client.Get("", "b1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Pattern(kBlock, 50)) << "the refused key's bytes went to its reservation only";
  EXPECT_EQ(client.reserved_puts(), 3u);
  const uint64_t granted = dir_->Stats().put_reservations_granted;
  for (ErrorCode rc : client.BatchPut("", {"b3", "b4", "b5"}, views)) EXPECT_EQ(rc, ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().put_reservations_granted, granted + 3)
      << "the kept reservation served the next batch: renewals only";
  EXPECT_EQ(client.reserved_puts(), 6u);
  for (int i = 3; i < 6; ++i) {
    got = client.Get("", "b" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << i;
    EXPECT_EQ(*got, values[i - 3]) << i;
  }
}

// All reservations together hold a bounded share of the capacity
// (put_reservation_share): a batch larger than that goes in two steps.
TEST_F(ClientTest, ABatchNoReservationsCanHoldGoesInTwoSteps) {
  StartNode("seg-a");
  Client& client = MakeClient();
  const size_t keys = 2 * (static_cast<size_t>(kReservationShare * (32 << 20)) / kBlock);
  std::vector<std::string> names, values;
  for (size_t i = 0; i < keys; ++i) {
    names.push_back("big" + std::to_string(i));
    values.push_back(Pattern(kBlock, static_cast<int>(i)));
  }
  const std::vector<std::string_view> views(values.begin(), values.end());
  for (ErrorCode rc : client.BatchPut("", names, views)) ASSERT_EQ(rc, ErrorCode::OK);
  EXPECT_EQ(client.reserved_puts(), 0u);
  DirectoryStats s = dir_->Stats();
  EXPECT_EQ(s.put_reservations_held, 0u) << "all or none";
  EXPECT_EQ(s.allocated_bytes, keys * kBlock);
  auto got = client.Get("", names.back());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, values.back());
}

}  // namespace
}  // namespace shelfmark
