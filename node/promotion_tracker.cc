#include "node/promotion_tracker.h"

#include <algorithm>
#include <functional>

namespace shelfmark {

PromotionTracker::PromotionTracker(PromotionTrackerOptions options)
    : hits_(options.hits),
      window_ms_(std::max<int64_t>(options.window_ms, 1)),
      max_keys_(options.max_keys) {}

size_t PromotionTracker::Hash::operator()(const View& v) const {
  const size_t t = std::hash<std::string_view>()(v.first);
  const size_t k = std::hash<std::string_view>()(v.second);
  return t ^ (k + 0x9e3779b97f4a7c15ull + (t << 6) + (t >> 2));
}

bool PromotionTracker::Count(Entry& e, int64_t now_ms) const {
  if (e.count == 0 || Expired(e, now_ms)) {
    e = Entry{now_ms, 0, false};  // new key, a new window, or a request timed out
  } else if (e.requested) {
    return false;
  }
  if (++e.count < hits_) return false;
  e.requested = true;
  e.start_ms = now_ms;  // the request expires window_ms from now
  return true;
}

bool PromotionTracker::MakeRoom(int64_t now_ms) {
  if (keys_.size() < max_keys_) return true;
  if (now_ms < next_prune_ms_) return false;
  std::erase_if(keys_, [&](const auto& kv) { return Expired(kv.second, now_ms); });
  next_prune_ms_ = now_ms + std::max<int64_t>(window_ms_ / 8, 1);
  return keys_.size() < max_keys_;
}

bool PromotionTracker::Hit(std::string_view tenant, std::string_view key, int64_t now_ms) {
  if (hits_ == 0) return false;
  MutexLock lock(&mu_);
  auto it = keys_.find(View{tenant, key});
  if (it == keys_.end()) {
    if (!MakeRoom(now_ms)) return false;
    it = keys_.emplace(Key{std::string(tenant), std::string(key)}, Entry{}).first;
  }
  return Count(it->second, now_ms);
}

void PromotionTracker::Done(std::string_view tenant, std::string_view key) {
  MutexLock lock(&mu_);
  auto it = keys_.find(View{tenant, key});
  if (it != keys_.end()) keys_.erase(it);
}

size_t PromotionTracker::tracked() const {
  MutexLock lock(&mu_);
  return keys_.size();
}

}  // namespace shelfmark
