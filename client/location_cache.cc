#include "client/location_cache.h"

#include <functional>
#include <iterator>
#include <utility>

#include "client/client.h"
#include "common/object_key.h"

namespace shelfmark {

LocationCache::LocationCache(const LocationCacheOptions& options, const Clock* clock)
    : options_(options), clock_(clock) {}

std::string LocationCache::CacheId(std::string_view tenant, std::string_view key) {
  tenant = EffectiveTenant(tenant);
  std::string id = std::to_string(tenant.size());
  id += ':';
  id.append(tenant);
  id.append(key);
  return id;
}

size_t LocationCache::Stripe(const std::string& id) {
  return std::hash<std::string>{}(id) % kEpochStripes;
}

uint64_t LocationCache::SizeOf(const ObjectLocation& location) {
  // The location's own strings, and the id twice (the entry's and the index's).
  uint64_t bytes = sizeof(Entry) + sizeof(ObjectLocation) + 3 * (location.tenant.size() +
                   location.key.size()) + 2 * sizeof(std::string);
  for (const ReplicaDescriptor& r : location.info.replicas) {
    bytes += sizeof(ReplicaDescriptor) + r.memory.endpoint.size() + r.memory.protocol.size() +
             r.memory.rkey.size() + r.disk.endpoint.size();
  }
  return bytes;
}

std::shared_ptr<const ObjectLocation> LocationCache::Lookup(std::string_view tenant,
                                                            std::string_view key,
                                                            Usable usable) {
  if (!enabled()) return nullptr;
  const std::string id = CacheId(tenant, key);
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mu_);
  auto it = index_.find(id);
  if (it == index_.end()) {
    ++counters_.misses;
    return nullptr;
  }
  if (now >= it->second->expires_ms) {
    ++counters_.expired;
    ++counters_.misses;
    EraseLocked(it->second);
    return nullptr;
  }
  if (usable != nullptr && !usable(*it->second->location)) {
    ++counters_.misses;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++counters_.hits;
  return lru_.front().location;
}

uint64_t LocationCache::Epoch(std::string_view tenant, std::string_view key) const {
  if (!enabled()) return 0;
  const size_t stripe = Stripe(CacheId(tenant, key));
  MutexLock lock(&mu_);
  return epochs_[stripe];
}

void LocationCache::Insert(std::shared_ptr<const ObjectLocation> location, uint64_t epoch) {
  if (!enabled()) return;
  Entry entry;
  entry.id = CacheId(location->tenant, location->key);
  entry.expires_ms = location->lease_deadline_ms - options_.margin_ms;
  entry.bytes = SizeOf(*location);
  entry.location = std::move(location);
  const int64_t now = clock_->NowMs();
  if (now >= entry.expires_ms || entry.bytes > options_.max_bytes) return;
  const size_t stripe = Stripe(entry.id);
  MutexLock lock(&mu_);
  if (epochs_[stripe] != epoch) return;  // invalidated while the lookup was in flight
  if (auto it = index_.find(entry.id); it != index_.end()) EraseLocked(it->second);
  MakeRoomLocked(entry.bytes, now);
  bytes_ += entry.bytes;
  lru_.push_front(std::move(entry));
  index_.emplace(lru_.front().id, lru_.begin());
}

void LocationCache::Invalidate(std::string_view tenant, std::string_view key) {
  if (!enabled()) return;
  const std::string id = CacheId(tenant, key);
  const size_t stripe = Stripe(id);
  MutexLock lock(&mu_);
  ++epochs_[stripe];
  auto it = index_.find(id);
  if (it == index_.end()) return;
  ++counters_.invalidated;
  EraseLocked(it->second);
}

void LocationCache::InvalidateAll() {
  if (!enabled()) return;
  MutexLock lock(&mu_);
  for (uint64_t& epoch : epochs_) ++epoch;
  counters_.invalidated += lru_.size();
  while (!lru_.empty()) EraseLocked(lru_.begin());
}

LocationCacheStats LocationCache::stats() const {
  MutexLock lock(&mu_);
  LocationCacheStats s = counters_;
  s.entries = lru_.size();
  s.bytes = bytes_;
  return s;
}

void LocationCache::EraseLocked(Lru::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->id);
  lru_.erase(it);
}

void LocationCache::MakeRoomLocked(uint64_t bytes, int64_t now) {
  while (!lru_.empty() &&
         (lru_.size() >= options_.max_entries || bytes_ + bytes > options_.max_bytes)) {
    ++(now >= lru_.back().expires_ms ? counters_.expired : counters_.evicted);
    EraseLocked(std::prev(lru_.end()));
  }
}

}  // namespace shelfmark
