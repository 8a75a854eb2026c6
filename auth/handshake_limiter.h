// HandshakeLimiter: how many failed handshakes a peer may make (docs/security.md).
//
// Each peer (an IP address, as text) has a bucket of `burst` failures that
// refills at `per_second`. A failed handshake takes one; while a peer's bucket
// is empty its handshakes are refused before any proof is checked (no HMAC
// work for a flood). Successful handshakes take nothing, so well-behaved
// clients are never limited unless they share an address with a flood.
// At most `max_peers` buckets are kept; the least recently touched is
// forgotten first (a full bucket is the same as none).
//
// Thread safety: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"
#include "common/mutex.h"

namespace shelfmark::auth {

struct HandshakeLimits {
  double burst = 20;       // failures a quiet peer may make at once
  double per_second = 5;   // refill rate
  size_t max_peers = 4096;
};

class HandshakeLimiter {
 public:
  // `clock` must outlive the limiter.
  HandshakeLimiter(const Clock& clock, HandshakeLimits limits);

  // False while `peer` has no failures left: refuse its handshake unchecked.
  bool Allow(std::string_view peer);
  // Records a failed handshake of `peer`.
  void Failed(std::string_view peer);

 private:
  struct Bucket {
    double tokens;
    int64_t updated_ms;
    std::list<std::string>::iterator lru;
  };
  Bucket& Touch(std::string_view peer) REQUIRES(mu_);

  const Clock& clock_;
  const HandshakeLimits limits_;
  Mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_ GUARDED_BY(mu_);
  std::list<std::string> lru_ GUARDED_BY(mu_);  // front: most recently touched
};

}  // namespace shelfmark::auth
