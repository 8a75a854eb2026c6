// MasterHa: the master's part in high availability (docs/ha.md, "The
// master's role"): it claims this master's published address in etcd
// (ha/member_registration.h), campaigns (ha/leader_election.h) and drives
// the LeadershipGate the RPC server answers through:
//
//   - closed (every call but the handshake answers NOT_LEADER) until this
//     master leads; then `before_serving(term)` runs on MasterHa's own
//     thread (so the election thread keeps renewing the lease meanwhile),
//     and the gate opens only if the leadership of that term still holds;
//   - closed again at once (on the election thread) when the leadership
//     ends;
//   - while open, mutations are admitted only while
//     LeaderElection::CanAcknowledge() holds (the fence);
//   - the gate's leader hint (what NOT_LEADER answers name) follows the
//     election's view: the other master that leads (UpdateLeaderHint).
//
// A before_serving that fails is logged and tried again (every second)
// while the same term lasts; the gate stays closed meanwhile.
//
// Thread safety: Start and Stop from one owner thread; gate() and
// serving() from any thread, view() and counts() from any thread once
// Start returned OK.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/host_port.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "ha/leader_election.h"
#include "ha/member_registration.h"
#include "master/leadership_gate.h"

namespace shelfmark {

class MetricsRegistry;

struct MasterHaOptions {
  std::vector<HostPort> etcd_endpoints;
  std::string cluster_id;        // ha::ValidClusterId
  int lease_ttl_s = 2;
  int safety_margin_ms = 500;    // < lease_ttl_s * 1000
  // Runs each time this master wins a term, before it serves (default: no
  // step). The place to load the replicated state into the Directory.
  std::function<ErrorCode(int64_t term)> before_serving;
  // Every change of the election's view (on the election thread: quick).
  std::function<void(const ha::LeaderView&)> on_view;
  // LeaderElectionOptions::may_campaign.
  std::function<bool()> may_campaign;
};

class MasterHa {
 public:
  explicit MasterHa(MasterHaOptions options);
  ~MasterHa();  // Stop()
  MasterHa(const MasterHa&) = delete;
  MasterHa& operator=(const MasterHa&) = delete;

  // The gate to hand to RpcServerOptions::gate (before Start).
  LeadershipGate* gate() { return &gate_; }

  // Claims `address` (what clients connect to, published while leading;
  // failing when etcd does not answer or another master holds it), then
  // starts campaigning. Non-OK: *error is a sentence for the operator;
  // nothing is left running. Once only.
  ErrorCode Start(const std::string& address, std::string* error);
  // Closes the gate, resigns (a standby takes over at its next poll) and
  // releases the address. Idempotent.
  void Stop();

  // Whether this master may acknowledge now (leads, fence holds); not
  // counted as a refusal. False before Start.
  bool FenceHolds() const { return election_ != nullptr && election_->FenceHolds(); }

  // ha::LeaderElection::LeaderGone (nothing before Start).
  void LeaderGone(int64_t term) {
    if (election_ != nullptr) election_->LeaderGone(term);
  }

  // After Start.
  ha::LeaderView view() const { return election_->view(); }
  ha::LeaderElectionCounts counts() const { return election_->counts(); }
  const LeadershipGate& gate_state() const { return gate_; }
  // True while the gate is open: this master leads and serves.
  bool serving() const { return gate_.is_open(); }

 private:
  ha::LeaderElectionOptions ElectionOptions(const std::string& address);
  void OnChange(const ha::LeaderView& view);
  void UpdateLeaderHint(const ha::LeaderView& view);
  void Promote();  // the promotion thread
  // Waits until a term needs promoting (its number) or Stop (0).
  int64_t NextTermToServe();
  bool WaitBriefly();

  const MasterHaOptions options_;
  std::string address_;  // this master's published address (set by Start)
  LeadershipGate gate_;
  // Made by Start (the address is known then), before the gate can open:
  // the gate's fence check reads election_ only while open.
  std::unique_ptr<ha::MemberRegistration> member_;
  std::unique_ptr<ha::LeaderElection> election_;
  std::thread promoter_;

  Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  int64_t leading_term_ GUARDED_BY(mu_) = 0;  // 0: not leading
  int64_t served_term_ GUARDED_BY(mu_) = 0;   // the term the gate was opened for
};

// shelfmark_master_ha_* (docs/metrics.md). `ha` must outlive the registry's use.
void AddMasterHaMetrics(MetricsRegistry& registry, const MasterHa& ha);

}  // namespace shelfmark
