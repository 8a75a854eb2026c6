// PutReservationPool: a reservation is handed out only for its own shape,
// within its use-by time and on the connection it was granted on; anything
// else is dropped, never handed out.
#include "client/put_reservation_pool.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

PutReservationGrant Grant(uint64_t id, int64_t ttl_ms = 20'000) {
  PutReservationGrant g;
  g.id = id;
  g.ttl_ms = ttl_ms;
  return g;
}

TEST(PutReservationPoolTest, OnlyItsShape) {
  PutReservationPool pool;
  PutConfig two;
  two.replica_num = 2;
  PutConfig here;
  here.prefer_host = "10.0.0.2";
  pool.Keep(4096, {}, Grant(1), 7, 0);
  EXPECT_FALSE(pool.Take(8192, {}, 7, 0)) << "another size";
  EXPECT_FALSE(pool.Take(4096, two, 7, 0)) << "another replica count";
  EXPECT_FALSE(pool.Take(4096, here, 7, 0)) << "another host";
  auto held = pool.Take(4096, {}, 7, 0);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->grant.id, 1u);
  EXPECT_FALSE(pool.Take(4096, {}, 7, 0)) << "handed out once";
  pool.Return(4096, {}, *held);
  EXPECT_EQ(pool.size(), 1u);
}

TEST(PutReservationPoolTest, UsedForHalfItsTtlOnly) {
  PutReservationPool pool;
  pool.Keep(4096, {}, Grant(1, 1000), 7, 100);
  pool.Keep(4096, {}, Grant(2, 1000), 7, 100);
  EXPECT_TRUE(pool.Take(4096, {}, 7, 599));
  EXPECT_FALSE(pool.Take(4096, {}, 7, 600)) << "the master may give it back at 1100 or sooner";
  EXPECT_EQ(pool.size(), 0u) << "dropped, not kept";
}

TEST(PutReservationPoolTest, OnlyOnTheConnectionItWasGrantedOn) {
  PutReservationPool pool;
  pool.Keep(4096, {}, Grant(1), 7, 0);
  EXPECT_FALSE(pool.Take(4096, {}, 0, 0)) << "the connection ended (a restarted master)";
  pool.Keep(4096, {}, Grant(2), 7, 0);
  EXPECT_FALSE(pool.Take(4096, {}, 8, 0)) << "reconnected since";
  EXPECT_EQ(pool.size(), 0u);
}

TEST(PutReservationPoolTest, Pauses) {
  PutReservationPool pool;
  EXPECT_FALSE(pool.paused(0));
  pool.PauseUntil(100);
  EXPECT_TRUE(pool.paused(99));
  EXPECT_FALSE(pool.paused(100));
}

}  // namespace
}  // namespace shelfmark
