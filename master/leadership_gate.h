// LeadershipGate: whether this master may answer a call, by what the call
// does (docs/ha.md, "The master's role").
//
//   - Without HA (the default constructor) the gate is always open: Admit
//     answers OK at the cost of one branch.
//   - With HA it starts closed: every gated call (all but the token
//     handshake) answers NOT_LEADER, counted in not_leader_refusals(). The
//     master's HA wiring (master/master_ha.h) opens it once this master
//     leads and its before_serving step is done, and closes it at once when
//     the leadership ends.
//   - Open and fenced: a call that changes state is admitted only while
//     `can_acknowledge()` (LeaderElection::CanAcknowledge: this leader is
//     sure of its lease) holds, read once per such call; otherwise
//     NOT_LEADER, counted in fenced_refusals(). Reads and Ping pass.
//   - The leader hint: the address a NOT_LEADER answer names (docs/ha.md,
//     "NOT_LEADER names the leader"), set by the HA wiring; "" while this
//     master knows no other leader.
//
// Thread safety: every method from any thread; Admit is lock-free (one
// acquire load, and for a mutation on an open HA gate the fence check).
// `can_acknowledge` must be callable from any thread. The hint takes a
// mutex: it is read only when a call is refused.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/error_code.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace shelfmark {

// What a call does to the master's state (master/service_shared.h's table).
enum class CallKind : uint8_t {
  kHandshake,  // token handshake: never gated
  kRead,       // answers from the directory, changes nothing: leader only, even fenced
  kLiveness,   // Ping: leader only, not refused when fenced (it renews a node's TTL)
  kMutation,   // changes the directory (allocations included): leader only,
               // and refused while fenced; answered once enough standbys hold
               // the change
};

// Whether the gate refuses calls of `kind` while fenced.
constexpr bool Mutates(CallKind kind) { return kind == CallKind::kMutation; }

class LeadershipGate {
 public:
  // Always open (no HA).
  LeadershipGate() = default;
  // Closed until Open(); `can_acknowledge` guards mutations while open.
  explicit LeadershipGate(std::function<bool()> can_acknowledge);
  LeadershipGate(const LeadershipGate&) = delete;
  LeadershipGate& operator=(const LeadershipGate&) = delete;

  // OK, or NOT_LEADER (counted) when a call of `kind` may not be answered now.
  ErrorCode Admit(CallKind kind) {
    if (!ha_ || kind == CallKind::kHandshake) return ErrorCode::OK;
    return AdmitHa(kind);
  }

  void Open() { open_.store(true, std::memory_order_release); }
  void Close() { open_.store(false, std::memory_order_release); }
  bool is_open() const { return !ha_ || open_.load(std::memory_order_acquire); }
  bool ha() const { return ha_; }

  // The `host:port` NOT_LEADER answers name ("" : none).
  void SetLeaderHint(std::string address);
  std::string leader_hint() const;

  uint64_t not_leader_refusals() const { return not_leader_.load(std::memory_order_relaxed); }
  uint64_t fenced_refusals() const { return fenced_.load(std::memory_order_relaxed); }

 private:
  ErrorCode AdmitHa(CallKind kind);

  const bool ha_ = false;
  const std::function<bool()> can_acknowledge_;
  std::atomic<bool> open_{false};
  std::atomic<uint64_t> not_leader_{0};
  std::atomic<uint64_t> fenced_{0};
  mutable Mutex hint_mu_;
  std::string hint_ GUARDED_BY(hint_mu_);
};

}  // namespace shelfmark
