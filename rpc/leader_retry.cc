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

std::chrono::milliseconds RetryBackoff::Next(Clock::time_point now) {
  using std::chrono::milliseconds;
  const milliseconds left =
      std::max(milliseconds(0), std::chrono::ceil<milliseconds>(deadline_ - now));
  const milliseconds pause = std::min(next_, left);
  next_ = std::min(next_ * 2, kMax);
  return pause;
}

}  // namespace shelfmark
