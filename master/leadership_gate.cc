#include "master/leadership_gate.h"

#include <utility>

namespace shelfmark {

LeadershipGate::LeadershipGate(std::function<bool()> can_acknowledge)
    : ha_(true), can_acknowledge_(std::move(can_acknowledge)) {}

ErrorCode LeadershipGate::AdmitHa(CallKind kind) {
  if (!open_.load(std::memory_order_acquire)) {
    not_leader_.fetch_add(1, std::memory_order_relaxed);
    return ErrorCode::NOT_LEADER;
  }
  if (!Mutates(kind) || !can_acknowledge_ || can_acknowledge_()) {
    return ErrorCode::OK;
  }
  fenced_.fetch_add(1, std::memory_order_relaxed);
  return ErrorCode::NOT_LEADER;
}

void LeadershipGate::SetLeaderHint(std::string address) {
  MutexLock lock(&hint_mu_);
  hint_ = std::move(address);
}

std::string LeadershipGate::leader_hint() const {
  MutexLock lock(&hint_mu_);
  return hint_;
}

}  // namespace shelfmark
