#include "auth/handshake_limiter.h"

#include <algorithm>

namespace shelfmark::auth {

HandshakeLimiter::HandshakeLimiter(const Clock& clock, HandshakeLimits limits)
    : clock_(clock), limits_(limits) {}

HandshakeLimiter::Bucket& HandshakeLimiter::Touch(std::string_view peer) {
  const int64_t now = clock_.NowMs();
  auto it = buckets_.find(std::string(peer));
  if (it == buckets_.end()) {
    if (buckets_.size() >= std::max<size_t>(1, limits_.max_peers)) {
      buckets_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.emplace_front(peer);
    it = buckets_.emplace(std::string(peer), Bucket{limits_.burst, now, lru_.begin()}).first;
    return it->second;
  }
  Bucket& b = it->second;
  const double elapsed_s = static_cast<double>(std::max<int64_t>(0, now - b.updated_ms)) / 1000.0;
  b.tokens = std::min(limits_.burst, b.tokens + elapsed_s * limits_.per_second);
  b.updated_ms = now;
  lru_.splice(lru_.begin(), lru_, b.lru);
  return b;
}

bool HandshakeLimiter::Allow(std::string_view peer) {
  MutexLock lock(&mu_);
  return Touch(peer).tokens >= 1.0;
}

void HandshakeLimiter::Failed(std::string_view peer) {
  MutexLock lock(&mu_);
  Bucket& b = Touch(peer);
  b.tokens = std::max(0.0, b.tokens - 1.0);
}

}  // namespace shelfmark::auth
