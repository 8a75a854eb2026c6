// The directory's 1024 metadata shards. A shard maps tenant -> TenantState;
// a tenant's state holds its objects, its keys with an unfinished put and
// the member lists of groups routed to this shard.
//
// Thread safety: every field of a shard's tenants is guarded by the shard's
// `mu` (ObjectMetadata::lease_deadline_ms excepted, see object_metadata.h).
// The compiler checks access to `tenants` itself (GUARDED_BY, clang
// -Wthread-safety); pointers into it (an ObjectMetadata*) are not tracked.
// Invariant: no TenantState in `tenants` is empty (Empty() is false).
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "directory/changed_keys.h"
#include "directory/ghost_keys.h"
#include "directory/key_map.h"
#include "directory/object_metadata.h"
#include "directory/tenant_map.h"
#include "directory/view_set.h"

namespace shelfmark {

inline constexpr size_t kShardCount = 1024;

// std::hash over string_view, usable for heterogeneous lookups.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct TenantState {
  KeyMap<ObjectMetadata> objects;
  // Keys with an unfinished put: views of their key bytes in `objects`'
  // entries (stable until the entry is erased; EraseObject drops the view
  // first), so that a put allocates no copy of its key here.
  ViewSet processing;
  StringMap<std::set<std::string>> groups;  // group id -> member keys
  // Pending versions of upserts (PutConfig::replace), kept apart from the
  // live objects until PutEnd swaps them in (directory_upsert.cc). Every key
  // here is in `objects` too, with has_pending set.
  KeyMap<ObjectMetadata> replacing;

  // Drops `key` from `processing` if there.
  void EndProcessing(std::string_view key) { processing.erase(key); }

  bool Empty() const {
    return objects.empty() && processing.empty() && groups.empty() && replacing.empty();
  }
};

using TenantMap = BasicTenantMap<TenantState>;

struct MetadataShard {
  mutable SharedMutex mu;
  TenantMap tenants GUARDED_BY(mu);
  // (tenant, key) of objects changed since the change feed last took them
  // (directory/change_feed.h); appended only while the feed is enabled.
  ChangedKeys changed GUARDED_BY(mu);
  // Keys of this shard recently evicted from 2Q's probation (eviction.cc).
  GhostKeys ghosts GUARDED_BY(mu);
};

// A key's (or a group id's) hash: the default tenant hashes the name alone.
// Its shard is the hash modulo kShardCount; 2Q's ghost lists keep it whole.
uint64_t TenantKeyHash(std::string_view tenant, std::string_view name);
// Shard of a key (or of a group id).
size_t ShardIndex(std::string_view tenant, std::string_view name);

}  // namespace shelfmark
