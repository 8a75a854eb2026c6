// GhostKeys: hashes of keys recently evicted from 2Q's probation queue
// (directory/eviction_policy.h), oldest forgotten first. A put of a key
// still remembered enters the protected queue: it was evicted too soon.
//
// Thread safety: none; each shard keeps its own, under the shard's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>

namespace shelfmark {

class GhostKeys {
 public:
  // Remembers `hash`, then forgets the oldest while more than `limit` are held.
  void Add(uint64_t hash, size_t limit);
  // Whether `hash` was remembered; it is forgotten either way.
  bool Take(uint64_t hash);
  size_t size() const { return set_.size(); }
  void Clear();

 private:
  std::deque<uint64_t> order_;  // may hold hashes already taken
  std::unordered_set<uint64_t> set_;
};

}  // namespace shelfmark
