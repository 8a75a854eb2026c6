// LocationCache: the locations (ObjectLocation, client/client.h) of objects
// this client looked up, kept so that a repeated get of a hot key within its
// lease costs one one-sided read and no master RPC.
//
// Why it is sound: the lease GetReplicaList grants promises that, until it
// ends, the object is neither evicted nor removed (a Remove without force
// answers OBJECT_HAS_LEASE) and its replicas stay where they are; a put of
// the same key cannot succeed while the object exists. So a location is as
// good as a fresh one until its lease_deadline_ms. The one exception is a
// forced remove (by this client: it calls Invalidate; by another client:
// not covered, as for a get in flight today; the checksum, when the object
// has one, still catches memory reused by another object).
//
// Expiry: an entry is served only while now < lease_deadline_ms - margin_ms
// on the client's Clock, so a read started from it has at least margin_ms
// before the deadline. The lease check after every read (LEASE_EXPIRED for a
// read ending at or after the deadline) is what keeps reads correct; the
// margin only makes a late read, and the fresh lookup that follows it, rare.
//
// Bounds: at most max_entries entries and max_bytes bytes (SizeOf: the
// entry's approximate memory); the least recently served entry goes first.
// max_entries == 0 turns the cache off: Lookup answers nullptr, Insert does
// nothing, the counters stay 0. Off by default: with forced removes by other
// clients an entry may point at memory another object reuses, which only a
// checksum catches, or at a removed object whose bytes are still there
// (tests/cluster_model_test.cc, clients mixing forced removes and gets of
// shared keys, half without checksums, gets over a thousand wrong answers
// with it on); a client turns it on knowing its workload
// (kLocationCacheEntries).
//
// Races: an Insert of a lookup's answer must not undo an Invalidate made
// while that lookup was in flight (a Remove on another thread). The caller
// takes Epoch(tenant, key) before the lookup and hands it to Insert, which
// drops an answer whose epoch has moved. Epochs are kept per stripe of keys,
// so an Invalidate of another key of the same stripe drops it too: at worst
// one more lookup later, never a stale entry.
//
// Thread safety: every method may be called from any thread (one mutex).
// Entries are immutable and shared: a location Lookup returned stays valid
// for its holder after the entry is dropped.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"
#include "common/mutex.h"

namespace shelfmark {

struct ObjectLocation;

// The size to turn the cache on with (ClientOptions::location_cache).
inline constexpr uint64_t kLocationCacheEntries = 65536;

struct LocationCacheOptions {
  uint64_t max_entries = 0;  // 0: off (the default, see above)
  uint64_t max_bytes = 64ull << 20;
  // Entries are served until lease_deadline_ms - margin_ms (>= 0).
  int64_t margin_ms = 1000;
};

// Counters since the cache was made, and its current size.
struct LocationCacheStats {
  uint64_t hits = 0;         // Lookups answered with an entry
  uint64_t misses = 0;       // Lookups answered nullptr (expired or refused entries included)
  uint64_t expired = 0;      // entries dropped because their time had passed
  uint64_t evicted = 0;      // live entries dropped for room (max_entries, max_bytes)
  uint64_t invalidated = 0;  // entries dropped by Invalidate
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

class LocationCache {
 public:
  // `clock` (the client's) must outlive the cache.
  LocationCache(const LocationCacheOptions& options, const Clock* clock);
  LocationCache(const LocationCache&) = delete;
  LocationCache& operator=(const LocationCache&) = delete;

  bool enabled() const { return options_.max_entries > 0; }

  // Whether a caller can use a location (Lookup's filter).
  using Usable = bool (*)(const ObjectLocation&);
  // The live entry of (tenant, key), made the most recently served; nullptr
  // when there is none (an expired one is dropped) or `usable` (when set)
  // refuses it (a miss; the entry stays).
  std::shared_ptr<const ObjectLocation> Lookup(std::string_view tenant, std::string_view key,
                                               Usable usable = nullptr);
  // Taken before a master lookup whose answer will be passed to Insert.
  uint64_t Epoch(std::string_view tenant, std::string_view key) const;
  // Keeps `location` (replacing the key's entry) unless its epoch moved
  // since `epoch`, its time has already passed, or it alone exceeds
  // max_bytes; older entries make room.
  void Insert(std::shared_ptr<const ObjectLocation> location, uint64_t epoch);
  // Drops the key's entry and moves its epoch (see Races above).
  void Invalidate(std::string_view tenant, std::string_view key);
  // Drops every entry and moves every epoch (after RemoveAll: coarser than
  // the tenant's keys, which the cache cannot list cheaply, and as sound).
  void InvalidateAll();

  LocationCacheStats stats() const;

  // The approximate memory an entry of `location` takes: the location
  // (tenant, key, descriptors and their strings) plus the cache's key.
  static uint64_t SizeOf(const ObjectLocation& location);

 private:
  static constexpr size_t kEpochStripes = 256;

  struct Entry {
    std::string id;  // CacheId(tenant, key)
    std::shared_ptr<const ObjectLocation> location;
    int64_t expires_ms = 0;  // lease_deadline_ms - margin_ms
    uint64_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently served first

  // One string per (tenant, key), unambiguous for any bytes; the empty
  // tenant is the default one, as for the master.
  static std::string CacheId(std::string_view tenant, std::string_view key);
  static size_t Stripe(const std::string& id);
  void EraseLocked(Lru::iterator it) REQUIRES(mu_);
  // Drops least recently served entries until `bytes` more fit.
  void MakeRoomLocked(uint64_t bytes, int64_t now) REQUIRES(mu_);

  const LocationCacheOptions options_;
  const Clock* const clock_;
  mutable Mutex mu_;
  Lru lru_ GUARDED_BY(mu_);
  std::unordered_map<std::string, Lru::iterator> index_ GUARDED_BY(mu_);
  std::array<uint64_t, kEpochStripes> epochs_ GUARDED_BY(mu_) = {};
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  LocationCacheStats counters_ GUARDED_BY(mu_);
};

}  // namespace shelfmark
