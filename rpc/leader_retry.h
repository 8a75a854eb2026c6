// When and how fast a MasterClient that follows the leader of an etcd://
// address tries a call again (docs/ha.md, "Finding the leader"). Split out
// of MasterClient so the decision is tested on its own.
//
// Thread safety: ShouldRetryOnLeader is pure; a RetryBackoff belongs to one
// call on one thread.
#pragma once

#include <chrono>

#include "common/error_code.h"

namespace shelfmark {

// Whether a call is tried again (after the leader is re-resolved), given the
// whole-call `code` of an attempt and whether its request was sent:
//   - NOT_LEADER: yes, always (the master that answered did nothing);
//   - RPC_FAIL with the request not sent (no leader resolved, connection
//     refused, the token handshake's transport failed): yes, always;
//   - RPC_FAIL after the request was sent (dropped, timed out, malformed
//     reply): only when `read_only` (a mutation may have happened);
//   - anything else is the call's answer: no.
bool ShouldRetryOnLeader(ErrorCode code, bool request_sent, bool read_only);

// Whether an attempt's `code` makes the resolved leader suspect, so the
// next attempt (or call) asks etcd again: NOT_LEADER and RPC_FAIL.
bool ShouldReResolve(ErrorCode code);

// The pauses between attempts of one call: 50 ms, doubling up to 200 ms,
// and never past the call's deadline.
class RetryBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirst{50};
  static constexpr std::chrono::milliseconds kMax{200};

  explicit RetryBackoff(Clock::time_point deadline) : deadline_(deadline) {}

  // The next pause counted from `now`, clamped to the deadline (zero once
  // it has passed); each call doubles the following one.
  std::chrono::milliseconds Next(Clock::time_point now);
  bool Expired(Clock::time_point now) const { return now >= deadline_; }

 private:
  Clock::time_point deadline_;
  std::chrono::milliseconds next_ = kFirst;
};

}  // namespace shelfmark
