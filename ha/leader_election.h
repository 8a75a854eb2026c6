// LeaderElection: one master's campaign for the leadership of its cluster
// in etcd (docs/ha.md). A background thread:
//   - follower (or nobody known): reads the leader key every
//     `follower_poll_ms`; when it is absent, grants a lease and creates the
//     key with it if still absent (one transaction), value = `address`;
//     told that the leader is gone (LeaderGone), revokes its lease first;
//   - leader: renews the lease every `renew_interval_ms` (TTL/3 by default);
//     a renewal etcd answers "lease unknown" ends the leadership.
// The term is the leader key's create_revision: etcd revisions only grow, so
// every new leader has a higher term than every earlier one.
//
// Fencing: the time each successful renewal (or the grant) was SENT is
// recorded on the steady clock; CanAcknowledge() is true only while
//   now < sent + granted_ttl - safety_margin.
// etcd counts the lease from when it handles the request, which is after it
// was sent, so the lease cannot expire (and no other master can win) before
// sent + granted_ttl: a leader that cannot renew stops acknowledging at
// least `safety_margin` before then. The margin absorbs clock-rate
// differences between this host and etcd's.
//
// Thread safety: Start, Stop and Abandon from one owner thread; every other
// method from any thread. `on_change` runs on the election thread (and on the
// owner's thread during Stop/Abandon), without any lock held; it must not
// call Stop or Abandon.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/host_port.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "ha/etcd_client.h"

namespace shelfmark::ha {

enum class Role { kNone, kFollower, kLeader };
std::string_view RoleName(Role role);  // "none", "follower", "leader"

// What this master knows of the election.
struct LeaderView {
  Role role = Role::kNone;     // kNone: not started, stopped, or etcd not answering
  int64_t term = 0;            // create_revision of the leader key (0: none seen)
  std::string leader_address;  // the leader's published address ("" unknown)
  // The latest leader's term etcd records (LastLeaderKey), read while no
  // leader holds the key (0: none recorded, or not read yet).
  int64_t last_term = 0;
  // The in-sync set etcd records (InSyncKey), read with last_term: the term
  // whose leader published it (0: none) and the standbys it names.
  int64_t in_sync_term = 0;
  std::vector<std::string> in_sync;
  bool operator==(const LeaderView&) const = default;
};

struct LeaderElectionCounts {
  uint64_t elections_won = 0;
  uint64_t leaderships_lost = 0;       // a renewal found the lease gone
  uint64_t lease_renew_failures = 0;   // renewals that got no new TTL
  uint64_t fenced_refusals = 0;        // CanAcknowledge() calls that answered false
  uint64_t gone_leaders_revoked = 0;   // leases of gone leaders revoked (LeaderGone)
};

// Steady-clock instants of the fence (while leader).
struct LeaderFence {
  std::chrono::steady_clock::time_point renew_sent;  // of the latest successful renewal
  int64_t granted_ttl_s = 0;
  std::chrono::steady_clock::time_point ack_deadline;  // renew_sent + TTL - margin
  // The earliest instant etcd may expire the lease: renew_sent + TTL.
  std::chrono::steady_clock::time_point earliest_expiry() const {
    return renew_sent + std::chrono::seconds(granted_ttl_s);
  }
};

struct LeaderElectionOptions {
  std::vector<HostPort> etcd_endpoints;
  std::string cluster_id;  // ha/leader_key.h: [A-Za-z0-9._-]{1,128}
  std::string address;     // this master's RPC address, published while leader
  // etcd's lease TTL. etcd grants at least its minimum TTL, derived from its
  // election timeout (1.5 x election timeout, rounded up to seconds: 2 s
  // with etcd's default 1000 ms), so asking less may get more.
  int lease_ttl_s = 2;
  int safety_margin_ms = 500;   // must be < lease_ttl_s * 1000
  int renew_interval_ms = 0;    // 0: granted TTL / 3
  int follower_poll_ms = 100;
  int request_timeout_ms = 0;   // per etcd request and endpoint; 0: TTL / 4
  std::function<void(const LeaderView&)> on_change;
  // Asked before each campaign (nobody leads); false: do not campaign now
  // (a standby without a copy of the last leader's state). Unset: always.
  std::function<bool()> may_campaign;
};

class LeaderElection {
 public:
  explicit LeaderElection(LeaderElectionOptions options);
  ~LeaderElection();  // Stop()
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Starts the election thread; INVALID_PARAMS for bad options (empty
  // endpoints or address, bad cluster id, TTL < 1, margin outside
  // [0, TTL)), INTERNAL_ERROR when already started.
  ErrorCode Start();
  // Stops acknowledging, ends the thread and, if leader, resigns: deletes the
  // key if it is still ours and revokes the lease, so a follower wins at its
  // next poll. Bounded: at most three etcd requests' time (each
  // request_timeout_ms per endpoint) after the thread's current one.
  void Stop();
  // Stops without resigning, as a crash would: the key stays until etcd
  // expires the lease. For tests of failover.
  void Abandon();

  // Evidence that the leader of `term` is gone (ReplicationStandbyOptions::
  // on_leader_gone: its process no longer listens on its published
  // address, so it acknowledges nothing any more). The election thread
  // then revokes that leader's lease, if the key still belongs to `term`,
  // instead of waiting for etcd to expire it (up to the TTL, plus etcd's
  // expiry check), and campaigns at once (may_campaign permitting). The
  // fence argument is untouched: it is about leaders that live.
  void LeaderGone(int64_t term);

  // True only while this master leads and its fence holds (see above).
  bool CanAcknowledge();
  // The same answer, not counted as a refusal (for polling).
  bool FenceHolds() const;
  LeaderView view() const;
  LeaderElectionCounts counts() const;
  LeaderFence fence() const;
  const std::string& key() const { return key_; }

 private:
  using Clock = std::chrono::steady_clock;

  void Run();
  void Follow();
  void Campaign();
  void Renew();
  void LoseLeadership();
  void SetFence(Clock::time_point sent, int64_t ttl_s);
  void Publish(LeaderView next);
  void Publish(Role role, int64_t term, std::string address) {
    Publish(LeaderView{role, term, std::move(address), 0, 0, {}});
  }
  // While nobody leads: the view with etcd's records of the last leader and
  // its in-sync set; false when etcd does not answer.
  bool ReadRecords(LeaderView* view);
  void Shutdown(bool resign);
  // Waits until `until` or Stop (or, with `wake_on_gone`, a LeaderGone);
  // false when stopping.
  bool WaitUntil(Clock::time_point until, bool wake_on_gone = false);
  // LeaderGone's term since the last call (0: none), cleared.
  int64_t TakeGoneTerm();
  // Revokes the lease of the leader `holder` names if its term is
  // `gone_term`; true when it did (the key is gone with it).
  bool RevokeIfGone(const EtcdKeyValue& holder, int64_t gone_term);
  bool Stopping();
  std::chrono::milliseconds RenewInterval() const;

  const LeaderElectionOptions options_;
  const std::string key_;
  const std::string last_leader_key_;
  const std::string in_sync_key_;
  std::unique_ptr<EtcdClient> etcd_;
  std::thread thread_;  // owner thread only

  // The election thread's own state (and the owner's after join).
  bool leading_ = false;
  int64_t lease_id_ = 0;
  int64_t my_revision_ = 0;
  Clock::time_point next_renew_;

  // The fence: ack_deadline_ns_ copies fence_.ack_deadline for the fast path
  // (0: not leading).
  std::atomic<int64_t> ack_deadline_ns_{0};
  std::atomic<uint64_t> won_{0}, lost_{0}, renew_failures_{0}, refusals_{0}, revoked_{0};

  mutable Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  int64_t gone_term_ GUARDED_BY(mu_) = 0;  // LeaderGone's, until the thread looks
  LeaderView view_ GUARDED_BY(mu_);
  LeaderFence fence_ GUARDED_BY(mu_);
};

}  // namespace shelfmark::ha
