#include "rpc/leader_retry.h"

#include <algorithm>

namespace shelfmark {

bool ShouldRetryOnLeader(ErrorCode code, bool request_sent, bool read_only) {
  if (code == ErrorCode::NOT_LEADER) return true;
  if (code != ErrorCode::RPC_FAIL) return false;
  return !request_sent || read_only;
}

bool ShouldReResolve(ErrorCode code) {
  return code == ErrorCode::NOT_LEADER || code == ErrorCode::RPC_FAIL;
}

bool AbandonsHint(ErrorCode code) {
  return code == ErrorCode::NOT_LEADER || code == ErrorCode::RPC_FAIL ||
         code == ErrorCode::UNAUTHENTICATED || code == ErrorCode::RATE_LIMITED;
}

NextStep NextAfter(const AttemptReport& r) {
  if (r.followed_hint) return NextStep::kRetryNow;
  if (r.follows_leader || r.left_hint) {
    const bool again = ShouldRetryOnLeader(r.code, r.sent, r.read_only) || (r.left_hint && !r.sent);
    if (again) return NextStep::kRetryAfterPause;
  }
  if (r.first_drop && r.read_only) return NextStep::kRetryNow;
  return NextStep::kReturn;
}

std::chrono::milliseconds RetryBackoff::Next(Clock::time_point now) {
  using std::chrono::milliseconds;
  const milliseconds left =
      std::max(milliseconds(0), std::chrono::ceil<milliseconds>(deadline_ - now));
  const milliseconds pause = std::min(next_, left);
  next_ = std::min(next_ * 2, kMax);
  return pause;
}

}  // namespace shelfmark
