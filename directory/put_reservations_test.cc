// PutReservations: one client's reservations by id, bounded per client,
// given back at their deadline, with their client, or (their other ranges)
// when a segment they lie in goes.
#include "directory/put_reservations.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

SegmentEntry* const kA = reinterpret_cast<SegmentEntry*>(0x10);
SegmentEntry* const kB = reinterpret_cast<SegmentEntry*>(0x20);

PutReservation Reservation(uint64_t id, const UUID& client, int64_t deadline,
                           std::vector<Placement> placed = {{kA, 0}}) {
  PutReservation r;
  r.id = id;
  r.client = client;
  r.size = 64;
  r.placed = std::move(placed);
  r.deadline_ms = deadline;
  return r;
}

TEST(PutReservationsTest, TakeIsForItsOwnClientOnly) {
  PutReservations table;
  const UUID me = UUID::Generate();
  const UUID other = UUID::Generate();
  ASSERT_EQ(table.Add(Reservation(1, me, 100), 4), ErrorCode::OK);
  EXPECT_FALSE(table.Take(other, 1)) << "another client's id is not theirs to commit";
  EXPECT_FALSE(table.Take(me, 2));
  EXPECT_EQ(table.size(), 1u);
  auto mine = table.Take(me, 1);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->size, 64u);
  EXPECT_FALSE(table.Take(me, 1)) << "taken once";
  EXPECT_EQ(table.held_by(me), 0u);
}

TEST(PutReservationsTest, BoundedPerClient) {
  PutReservations table;
  const UUID me = UUID::Generate();
  ASSERT_EQ(table.Add(Reservation(1, me, 100), 2), ErrorCode::OK);
  ASSERT_EQ(table.Add(Reservation(2, me, 100), 2), ErrorCode::OK);
  EXPECT_EQ(table.Add(Reservation(3, me, 100), 2), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(table.Add(Reservation(4, UUID::Generate(), 100), 2), ErrorCode::OK);
  EXPECT_EQ(table.held_by(me), 2u);
  EXPECT_EQ(table.size(), 3u);
}

TEST(PutReservationsTest, ExpiredAndClientsAreReleased) {
  PutReservations table;
  const UUID me = UUID::Generate();
  const UUID gone = UUID::Generate();
  ASSERT_EQ(table.Add(Reservation(1, me, 100), 4), ErrorCode::OK);
  ASSERT_EQ(table.Add(Reservation(2, me, 200), 4), ErrorCode::OK);
  ASSERT_EQ(table.Add(Reservation(3, gone, 300), 4), ErrorCode::OK);
  std::vector<uint64_t> released;
  auto note = [&](const PutReservation& r) { released.push_back(r.id); };
  table.TakeExpired(100, note);
  EXPECT_EQ(released, std::vector<uint64_t>{1});
  table.TakeClients({gone}, note);
  EXPECT_EQ(released, (std::vector<uint64_t>{1, 3}));
  EXPECT_TRUE(table.Take(me, 2));
  EXPECT_EQ(table.size(), 0u);
}

TEST(PutReservationsTest, DropSegmentsReleasesOnlyTheRangesElsewhere) {
  PutReservations table;
  const UUID me = UUID::Generate();
  ASSERT_EQ(table.Add(Reservation(1, me, 100, {{kA, 0}, {kB, 64}}), 4), ErrorCode::OK);
  ASSERT_EQ(table.Add(Reservation(2, me, 100, {{kB, 128}}), 4), ErrorCode::OK);
  std::vector<Placement> released;
  auto note = [&](const PutReservation& r) {
    released.insert(released.end(), r.placed.begin(), r.placed.end());
  };
  EXPECT_EQ(table.DropSegments({kA}, note), 1u);
  ASSERT_EQ(released.size(), 1u) << "the range in the dropped segment goes with it";
  EXPECT_EQ(released[0].segment, kB);
  EXPECT_EQ(released[0].offset, 64u);
  EXPECT_EQ(table.Export().size(), 1u);
  EXPECT_EQ(table.held_by(me), 1u);
}

}  // namespace
}  // namespace shelfmark
