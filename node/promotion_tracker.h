// PromotionTracker: decides when an object served from the node's SSD store
// is read often enough to be promoted back into DRAM (promotion on hit,
// docs/node.md). It counts served reads per (tenant, key):
//
//  - Hit() counts one read at `now_ms`. The first counted read opens a
//    window of `window_ms`; a read at or after the window's end opens a new
//    window at 1. Hit() returns true exactly once, when the count reaches
//    `hits` inside the window; the key is then "requested".
//  - A requested key never returns true again until Done() (the promotion
//    ended: promoted or failed; its count starts afresh) or until
//    `window_ms` has passed since the request (a refused or lost request
//    is retried later, after `hits` reads in a new window, never on every
//    read).
//  - Bounded: at most `max_keys` keys are tracked. A new key when full first
//    forgets keys whose window (or request) has expired, at most once per
//    window_ms / 8 (the scan is O(max_keys)); if none could be forgotten the
//    new key is not tracked (Hit false). Memory never grows with the number
//    of distinct keys read.
//  - hits == 0 disables it: Hit() is always false and nothing is tracked.
//
// The clock is the caller's (`now_ms`, any monotonic milliseconds).
//
// Thread safety: every method may be called from any thread; one mutex, one
// hash lookup per Hit() (it runs on the UCX progress thread for every read
// served from disk). A key's strings are copied only when it is first
// tracked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"

namespace shelfmark {

struct PromotionTrackerOptions {
  uint32_t hits = 3;         // reads within the window that request a promotion; 0: off
  int64_t window_ms = 10'000;  // > 0
  size_t max_keys = 65536;   // keys tracked at most
};

class PromotionTracker {
 public:
  explicit PromotionTracker(PromotionTrackerOptions options);

  bool Hit(std::string_view tenant, std::string_view key, int64_t now_ms);
  // The key's promotion ended: forget it (no-op for an untracked key).
  void Done(std::string_view tenant, std::string_view key);
  size_t tracked() const;

 private:
  using View = std::pair<std::string_view, std::string_view>;
  struct Key {
    std::string tenant, key;
    View view() const { return {tenant, key}; }
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const View& v) const;
    size_t operator()(const Key& k) const { return (*this)(k.view()); }
  };
  struct Eq {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return AsView(a) == AsView(b);
    }
    static View AsView(const View& v) { return v; }
    static View AsView(const Key& k) { return k.view(); }
  };
  struct Entry {
    int64_t start_ms = 0;  // the window's first counted read, or the request
    uint32_t count = 0;
    bool requested = false;
  };

  // Counts one read of `e` (found or new); true when it becomes requested.
  bool Count(Entry& e, int64_t now_ms) const;
  bool Expired(const Entry& e, int64_t now_ms) const { return now_ms - e.start_ms >= window_ms_; }
  // Room for one more key: forgets expired keys when full (rate-limited).
  bool MakeRoom(int64_t now_ms) REQUIRES(mu_);

  const uint32_t hits_;
  const int64_t window_ms_;
  const size_t max_keys_;
  mutable Mutex mu_;
  std::unordered_map<Key, Entry, Hash, Eq> keys_ GUARDED_BY(mu_);
  int64_t next_prune_ms_ GUARDED_BY(mu_) = INT64_MIN;
};

}  // namespace shelfmark
