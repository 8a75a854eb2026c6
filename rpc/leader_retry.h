// When and how fast a MasterClient tries a call again: following the leader
// of an etcd:// address, or a leader a NOT_LEADER answer named (docs/ha.md,
// "Finding the leader"). Split out of MasterClient so the decision is
// tested on its own.
//
// Thread safety: the functions are pure; a RetryBackoff belongs to one call
// on one thread.
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

// Whether an attempt that went to an address a NOT_LEADER hint named, and
// ended with `code`, gives the hint up (MasterTarget::LeaveHint): that
// master does not lead either (NOT_LEADER), is not there (RPC_FAIL), or did
// not prove the token or refused ours (UNAUTHENTICATED, RATE_LIMITED).
bool AbandonsHint(ErrorCode code);

// What one attempt of a call found (MasterClient's loop).
struct AttemptReport {
  ErrorCode code = ErrorCode::OK;  // the attempt's whole-call code
  bool sent = false;               // its request left (after a failure: outcome unknown)
  bool read_only = false;          // the call only reads
  bool follows_leader = false;     // an etcd:// target
  bool followed_hint = false;      // NOT_LEADER named a leader; the target points there now
  bool left_hint = false;          // it went to a hinted address, which failed (AbandonsHint)
  bool first_drop = false;         // a fixed target's first attempt found its connection dropped
};

enum class NextStep { kReturn, kRetryNow, kRetryAfterPause };

// What the call does next:
//   - a hint followed: at once (NOT_LEADER: the master did nothing);
//   - an etcd:// target, or a hint left: after a pause, when
//     ShouldRetryOnLeader allows or the request never left (the hinted
//     master's handshake failed);
//   - a fixed target's read-only call whose connection had dropped: once
//     more at once, on a fresh connection (as before HA);
//   - otherwise the answer is the call's.
NextStep NextAfter(const AttemptReport& report);

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
