// LocationCache alone, on a ManualClock: expiry at the lease deadline minus
// the margin, the entry and byte bounds (least recently served first),
// invalidation and its epochs, and the counters.
#include "client/location_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "common/clock.h"

namespace shelfmark {
namespace {

constexpr int64_t kLeaseMs = 10'000;
constexpr int64_t kMarginMs = 1'000;

class LocationCacheTest : public ::testing::Test {
 protected:
  // A location of (tenant, key) with one MEMORY replica, leased for
  // kLeaseMs from now.
  std::shared_ptr<const ObjectLocation> Located(const std::string& tenant, const std::string& key,
                                                int64_t lease_ms = kLeaseMs) const {
    auto loc = std::make_shared<ObjectLocation>();
    loc->tenant = tenant;
    loc->key = key;
    ReplicaDescriptor r;
    r.memory.endpoint = "10.0.0.1:7000";
    r.memory.protocol = "ucx";
    r.memory.rkey = std::string(32, 'r');
    loc->info.replicas.push_back(r);
    loc->info.lease_ttl_ms = lease_ms;
    loc->lease_deadline_ms = clock_.NowMs() + lease_ms;
    return loc;
  }

  // Inserts a fresh location of `key` (epoch taken just before).
  void Put(LocationCache& cache, const std::string& key, int64_t lease_ms = kLeaseMs) {
    const uint64_t epoch = cache.Epoch("t", key);
    cache.Insert(Located("t", key, lease_ms), epoch);
  }

  static LocationCacheOptions Options(uint64_t entries = 100, uint64_t bytes = 1 << 20) {
    LocationCacheOptions o;
    o.max_entries = entries;
    o.max_bytes = bytes;
    o.margin_ms = kMarginMs;
    return o;
  }

  ManualClock clock_;
};

TEST_F(LocationCacheTest, ServesWhatWasInsertedUntilDeadlineMinusMargin) {
  LocationCache cache(Options(), &clock_);
  EXPECT_EQ(cache.Lookup("t", "k"), nullptr);
  auto loc = Located("t", "k");
  cache.Insert(loc, cache.Epoch("t", "k"));
  EXPECT_EQ(cache.Lookup("t", "k"), loc);  // the same shared location, no copy
  EXPECT_EQ(cache.Lookup("other", "k"), nullptr);
  clock_.AdvanceMs(kLeaseMs - kMarginMs - 1);
  EXPECT_EQ(cache.Lookup("t", "k"), loc);
  clock_.AdvanceMs(1);  // at deadline - margin: no longer served
  EXPECT_EQ(cache.Lookup("t", "k"), nullptr);
  const LocationCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.expired, 1u);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes, 0u);
}

TEST_F(LocationCacheTest, ALeaseShorterThanTheMarginIsNotKept) {
  LocationCache cache(Options(), &clock_);
  Put(cache, "short", kMarginMs);
  EXPECT_EQ(cache.Lookup("t", "short"), nullptr);
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST_F(LocationCacheTest, TheEmptyTenantIsTheDefaultOne) {
  LocationCache cache(Options(), &clock_);
  auto loc = Located("", "k");
  cache.Insert(loc, cache.Epoch("", "k"));
  EXPECT_EQ(cache.Lookup("default", "k"), loc);
  cache.Invalidate("default", "k");
  EXPECT_EQ(cache.Lookup("", "k"), nullptr);
  // Tenant and key are kept apart: ("ab", "c") is not ("a", "bc").
  cache.Insert(Located("ab", "c"), cache.Epoch("ab", "c"));
  EXPECT_EQ(cache.Lookup("a", "bc"), nullptr);
  EXPECT_NE(cache.Lookup("ab", "c"), nullptr);
}

TEST_F(LocationCacheTest, EntryBoundDropsTheLeastRecentlyServed) {
  LocationCache cache(Options(/*entries=*/3), &clock_);
  Put(cache, "a");
  Put(cache, "b");
  Put(cache, "c");
  ASSERT_NE(cache.Lookup("t", "a"), nullptr);  // a is now the most recent; b the least
  Put(cache, "d");
  EXPECT_EQ(cache.Lookup("t", "b"), nullptr);
  EXPECT_NE(cache.Lookup("t", "a"), nullptr);
  EXPECT_NE(cache.Lookup("t", "c"), nullptr);
  EXPECT_NE(cache.Lookup("t", "d"), nullptr);
  const LocationCacheStats s = cache.stats();
  EXPECT_EQ(s.evicted, 1u);
  EXPECT_EQ(s.entries, 3u);
}

TEST_F(LocationCacheTest, ByteBoundCountsTheLocationsSize) {
  const uint64_t one = LocationCache::SizeOf(*Located("t", "a"));
  EXPECT_GT(LocationCache::SizeOf(*Located("t", std::string(1000, 'k'))), one + 1000);
  LocationCache cache(Options(/*entries=*/100, /*bytes=*/2 * one), &clock_);
  Put(cache, "a");
  Put(cache, "b");
  EXPECT_EQ(cache.stats().bytes, 2 * one);
  Put(cache, "c");
  EXPECT_EQ(cache.Lookup("t", "a"), nullptr);
  EXPECT_EQ(cache.stats().entries, 2u);
  EXPECT_EQ(cache.stats().evicted, 1u);
  // A location larger than the whole bound is not kept, and evicts nothing.
  Put(cache, std::string(4 * one, 'x'));
  EXPECT_EQ(cache.stats().entries, 2u);
  EXPECT_EQ(cache.stats().evicted, 1u);
}

TEST_F(LocationCacheTest, AnEntryPastItsTimeIsCountedExpiredWhenItMakesRoom) {
  LocationCache cache(Options(/*entries=*/1), &clock_);
  Put(cache, "old");
  clock_.AdvanceMs(kLeaseMs);
  Put(cache, "new");
  EXPECT_EQ(cache.stats().expired, 1u);
  EXPECT_EQ(cache.stats().evicted, 0u);
}

TEST_F(LocationCacheTest, ANewerLookupReplacesTheEntry) {
  LocationCache cache(Options(), &clock_);
  Put(cache, "k");
  auto newer = Located("t", "k");
  cache.Insert(newer, cache.Epoch("t", "k"));
  EXPECT_EQ(cache.Lookup("t", "k"), newer);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().bytes, LocationCache::SizeOf(*newer));
}

TEST_F(LocationCacheTest, InvalidateDropsTheEntry) {
  LocationCache cache(Options(), &clock_);
  Put(cache, "k");
  cache.Invalidate("t", "k");
  cache.Invalidate("t", "never-there");
  EXPECT_EQ(cache.Lookup("t", "k"), nullptr);
  EXPECT_EQ(cache.stats().invalidated, 1u);
  EXPECT_EQ(cache.stats().bytes, 0u);
}

// After RemoveAll: every entry goes, and no answer older than that comes back.
TEST_F(LocationCacheTest, InvalidateAllDropsEveryEntryAndMovesEveryEpoch) {
  LocationCache cache(Options(), &clock_);
  Put(cache, "a");
  Put(cache, "b");
  const uint64_t before = cache.Epoch("t", "c");
  cache.InvalidateAll();
  cache.Insert(Located("t", "c"), before);
  EXPECT_EQ(cache.Lookup("t", "a"), nullptr);
  EXPECT_EQ(cache.Lookup("t", "c"), nullptr);
  EXPECT_EQ(cache.stats().invalidated, 2u);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().bytes, 0u);
}

// A lookup in flight while the key is invalidated (a Remove on another
// thread) must not bring the old location back.
TEST_F(LocationCacheTest, AnAnswerOlderThanAnInvalidateIsNotInserted) {
  LocationCache cache(Options(), &clock_);
  const uint64_t before = cache.Epoch("t", "k");
  cache.Invalidate("t", "k");
  cache.Insert(Located("t", "k"), before);
  EXPECT_EQ(cache.Lookup("t", "k"), nullptr);
  Put(cache, "k");  // a lookup started after the Invalidate is kept
  EXPECT_NE(cache.Lookup("t", "k"), nullptr);
}

TEST_F(LocationCacheTest, AnEntryTheCallerCannotUseIsAMissAndStays) {
  LocationCache cache(Options(), &clock_);
  Put(cache, "k");
  auto has_disk = [](const ObjectLocation& loc) {
    return loc.info.replicas.back().type == ReplicaType::LOCAL_DISK;
  };
  EXPECT_EQ(cache.Lookup("t", "k", has_disk), nullptr);
  EXPECT_NE(cache.Lookup("t", "k"), nullptr);
  const LocationCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);
}

TEST_F(LocationCacheTest, ZeroEntriesTurnsItOff) {
  LocationCache cache(Options(/*entries=*/0), &clock_);
  EXPECT_FALSE(cache.enabled());
  Put(cache, "k");
  EXPECT_EQ(cache.Lookup("t", "k"), nullptr);
  const LocationCacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses + s.entries, 0u);
}

// Off unless a client asks for it (location_cache.h says why).
TEST(LocationCacheOptions, OffByDefault) {
  EXPECT_EQ(LocationCacheOptions{}.max_entries, 0u);
  EXPECT_EQ(ClientOptions{}.location_cache.max_entries, 0u);
  EXPECT_GT(kLocationCacheEntries, 0u);
}

TEST_F(LocationCacheTest, ConcurrentCallersKeepTheBounds) {
  LocationCache cache(Options(/*entries=*/16), &clock_);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string key = "k" + std::to_string((i * 7 + t) % 40);
        if (i % 3 == 0) {
          Put(cache, key);
        } else if (i % 11 == 0) {
          cache.Invalidate("t", key);
        } else if (auto loc = cache.Lookup("t", key)) {
          EXPECT_EQ(loc->key, key);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const LocationCacheStats s = cache.stats();
  EXPECT_LE(s.entries, 16u);
  EXPECT_GT(s.hits, 0u);
}

}  // namespace
}  // namespace shelfmark
