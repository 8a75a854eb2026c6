// MasterReplication: what a master does with hot-standby replication as its
// HA role changes (docs/ha.md, "Replication"):
//
//   - as a standby it follows the leader the election names
//     (ReplicationStandby) and keeps a copy of its directory;
//   - when it wins a term (before_serving) it loads that copy into its
//     Directory (if it has one from a leader other than itself) and starts
//     shipping to standbys (ReplicationLeader), the RPC port handing their
//     connections over (Adopt);
//   - when it loses the term it stops shipping and follows the new leader.
//
// Who may campaign (may_campaign): a master with a complete copy of the
// last leader's state that the leader's published in-sync set names; a
// master that saw no leader of a term it did not win since it last led (its
// own directory is the latest: a single master through an etcd outage, or a
// fresh cluster; not a master restarted after its killed predecessor, whose
// term etcd records); or, after `unsynced_takeover_ms` without any leader,
// any master (so a cluster whose standbys never finished a copy does not
// stay without a leader; what the old leader acknowledged alone is lost
// then).
//
// Client expiry (Directory::SetServing): held from construction until a
// term is won and again once it is lost; each term won gives every node in
// the directory a full client TTL from its start.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "auth/token_table.h"
#include "common/host_port.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "directory/directory.h"
#include "ha/etcd_client.h"
#include "ha/leader_election.h"
#include "replication/replication_leader.h"
#include "replication/replication_standby.h"

namespace shelfmark {

class MetricsRegistry;

struct MasterReplicationOptions {
  std::string cluster_id;
  auth::TokenTable tokens;   // the master's; standbys prove tokens.AdminToken()
  int sync_standbys = 1;
  int64_t io_timeout_ms = 5'000;
  size_t max_connections = 16;  // ReplicationLeaderOptions::max_connections
  int64_t unsynced_takeover_ms = 10'000;
  // Where the leader publishes its in-sync set (ha/leader_key.h,
  // InSyncKey); empty: nowhere (every set counts at once, and the campaign
  // rule cannot ask for it).
  std::vector<HostPort> etcd_endpoints;
  int etcd_request_timeout_ms = 500;
};

class MasterReplication {
 public:
  MasterReplication(Directory& directory, MasterReplicationOptions options);
  ~MasterReplication();

  // This master's published address (known once the RPC port is bound;
  // before MasterHa starts).
  void SetOwnAddress(std::string address);

  // Told when the leader this standby follows is gone for certain
  // (ReplicationStandbyOptions::on_leader_gone), with that leader's term:
  // MasterHa::LeaderGone. Set before MasterHa starts.
  void SetOnLeaderGone(std::function<void(int64_t term)> on_leader_gone);
  // Whether this master may acknowledge now (MasterHa::FenceHolds), for
  // ReplicationLeaderOptions::may_acknowledge. Set before MasterHa starts.
  void SetFence(std::function<bool()> fence_holds);

  // MasterHaOptions hooks.
  void OnView(const ha::LeaderView& view);
  ErrorCode BeforeServing(int64_t term);
  bool MayCampaign();

  // The leader side (RpcServerOptions::on_standby, the mutations' wait).
  ReplicationLeader& leader() { return leader_; }
  const ReplicationLeader& leader() const { return leader_; }
  ReplicationStandbyStats standby_stats() const;
  bool has_copy() const;
  // Whether the last term this master won began by loading a standby copy
  // (false before any term and when it kept its own directory).
  bool loaded_copy() const;

 private:
  // A started standby with this master's options (no copy yet).
  std::unique_ptr<ReplicationStandby> NewStandby() REQUIRES(mu_);
  // ReplicationLeaderOptions::publish_in_sync: the set under this term's
  // leadership (an etcd transaction guarded by the leader key).
  bool PublishInSync(const std::vector<std::string>& ids);
  // Whether the last leader's published in-sync set names this master.
  bool NamedInSync() const REQUIRES(mu_);
  // The standby's on_leader_gone: the term of the leader at `address`, if
  // the election still names it, goes to on_leader_gone_.
  void StandbyLostLeader(const std::string& address);

  Directory& dir_;
  const MasterReplicationOptions options_;
  ReplicationLeader leader_;
  mutable Mutex mu_;
  std::unique_ptr<ReplicationStandby> standby_ GUARDED_BY(mu_);
  std::string own_address_ GUARDED_BY(mu_);
  ha::LeaderView view_ GUARDED_BY(mu_);  // the election's latest
  // The standby's callback reads these under their own lock: mu_ may be
  // held while a standby is stopped (which joins the thread calling it).
  mutable Mutex gone_mu_;
  ha::LeaderView gone_view_ GUARDED_BY(gone_mu_);
  std::function<void(int64_t term)> on_leader_gone_ GUARDED_BY(gone_mu_);
  std::function<bool()> fence_holds_ GUARDED_BY(gone_mu_);
  std::unique_ptr<ha::EtcdClient> etcd_;       // null: no publishing
  std::atomic<int64_t> publishing_term_{0};  // the term this master leads (0: none)
  bool leading_ GUARDED_BY(mu_) = false;
  bool saw_other_leader_ GUARDED_BY(mu_) = false;
  int64_t led_term_ GUARDED_BY(mu_) = 0;  // the last term this process won (0: none)
  bool loaded_copy_ GUARDED_BY(mu_) = false;  // in led_term_
  int64_t no_leader_since_ms_ GUARDED_BY(mu_) = 0;  // 0: a leader is known
};

// shelfmark_master_ha_replication_* (docs/metrics.md). `r` must outlive the
// registry's use.
void AddReplicationMetrics(MetricsRegistry& registry, const MasterReplication& r);

}  // namespace shelfmark
