#include "master/master_replication.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "common/clock.h"
#include "ha/leader_key.h"
#include "service/metrics.h"

namespace shelfmark {
namespace {

ReplicationLeaderOptions LeaderOptions(const MasterReplicationOptions& o,
                                       std::function<bool(const std::vector<std::string>&)> publish,
                                       std::function<bool()> may_acknowledge) {
  ReplicationLeaderOptions l;
  l.cluster_id = o.cluster_id;
  l.tokens = o.tokens;
  l.sync_standbys = o.sync_standbys;
  l.io_timeout_ms = o.io_timeout_ms;
  l.max_connections = o.max_connections;
  if (!o.etcd_endpoints.empty()) l.publish_in_sync = std::move(publish);
  l.may_acknowledge = std::move(may_acknowledge);
  return l;
}

int64_t NowMs() { return SteadyClock().NowMs(); }

}  // namespace

MasterReplication::MasterReplication(Directory& directory, MasterReplicationOptions options)
    : dir_(directory),
      options_(std::move(options)),
      leader_(directory,
              LeaderOptions(
                  options_,
                  [this](const std::vector<std::string>& ids) { return PublishInSync(ids); },
                  [this] {
                    MutexLock lock(&gone_mu_);
                    return !fence_holds_ || fence_holds_();
                  })) {
  if (!options_.etcd_endpoints.empty()) {
    ha::EtcdClientOptions e;
    e.endpoints = options_.etcd_endpoints;
    e.request_timeout_ms = options_.etcd_request_timeout_ms;
    etcd_ = std::make_unique<ha::EtcdClient>(e);
  }
  // Not the serving leader until a term is won: no client expires here.
  dir_.SetServing(false);
  MutexLock lock(&mu_);
  standby_ = NewStandby();
}

std::unique_ptr<ReplicationStandby> MasterReplication::NewStandby() {
  auto standby = std::make_unique<ReplicationStandby>(ReplicationStandbyOptions{
      options_.cluster_id, options_.tokens.AdminToken(), options_.io_timeout_ms,
      [this](const std::string& address) { StandbyLostLeader(address); }, own_address_});
  standby->Start();
  return standby;
}

bool MasterReplication::PublishInSync(const std::vector<std::string>& ids) {
  const int64_t term = publishing_term_.load();
  if (etcd_ == nullptr || term == 0) return false;
  const ErrorCode rc = etcd_->PutIfCreatedAt(ha::LeaderKey(options_.cluster_id), term,
                                             ha::InSyncKey(options_.cluster_id),
                                             ha::EncodeInSync(term, ids));
  if (rc != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-master: ha: cannot publish the in-sync set of term %lld: %s\n",
                 static_cast<long long>(term), etcd_->last_error().c_str());
    return false;
  }
  return true;
}

bool MasterReplication::NamedInSync() const {
  if (options_.sync_standbys <= 0 || etcd_ == nullptr) return true;  // nothing is published
  if (view_.last_term == 0 || view_.in_sync_term != view_.last_term) return false;
  return std::find(view_.in_sync.begin(), view_.in_sync.end(), own_address_) !=
         view_.in_sync.end();
}

void MasterReplication::SetFence(std::function<bool()> fence_holds) {
  MutexLock lock(&gone_mu_);
  fence_holds_ = std::move(fence_holds);
}

void MasterReplication::SetOnLeaderGone(std::function<void(int64_t term)> on_leader_gone) {
  MutexLock lock(&gone_mu_);
  on_leader_gone_ = std::move(on_leader_gone);
}

void MasterReplication::StandbyLostLeader(const std::string& address) {
  std::function<void(int64_t)> tell;
  int64_t term = 0;
  {
    MutexLock lock(&gone_mu_);
    if (gone_view_.role == ha::Role::kLeader || gone_view_.leader_address != address) return;
    term = gone_view_.term;
    tell = on_leader_gone_;
  }
  std::fprintf(stderr, "shelfmark-master: ha: the leader of term %lld at %s is gone (it closed "
               "the stream and nothing listens there): revoking its lease\n",
               static_cast<long long>(term), address.c_str());
  if (tell) tell(term);
}

MasterReplication::~MasterReplication() {
  leader_.Stop();
  MutexLock lock(&mu_);
  if (standby_) standby_->Stop();
}

void MasterReplication::SetOwnAddress(std::string address) {
  std::unique_ptr<ReplicationStandby> old;
  {
    MutexLock lock(&mu_);
    own_address_ = std::move(address);
    old = std::move(standby_);
    standby_ = NewStandby();  // named by the address in the leader's in-sync set
  }
  if (old) old->Stop();
}

void MasterReplication::OnView(const ha::LeaderView& view) {
  bool stop_leading = false;
  {
    MutexLock lock(&gone_mu_);
    gone_view_ = view;
  }
  if (view.role != ha::Role::kLeader) publishing_term_.store(0);
  {
    MutexLock lock(&mu_);
    view_ = view;
    // Another leader is one of a term this process did not win, whatever
    // its address: a master restarted at once publishes the address its
    // killed predecessor still holds the key with, and must not take that
    // leader's directory for its own (it holds none of it).
    const bool other = view.role != ha::Role::kLeader && !view.leader_address.empty() &&
                       view.term != led_term_;
    // etcd's record of the latest leader (read while none leads): a master
    // started afresh learns there that the cluster had a leader, although
    // its key expired before this process saw it.
    const bool recorded_other = view.last_term != 0 && view.last_term != led_term_;
    if (view.role != ha::Role::kLeader && leading_) {
      leading_ = false;
      stop_leading = true;
    }
    if (other || recorded_other) saw_other_leader_ = true;
    if (view.leader_address.empty()) {
      if (no_leader_since_ms_ == 0) no_leader_since_ms_ = NowMs();
    } else {
      no_leader_since_ms_ = 0;
    }
    if (view.role != ha::Role::kLeader && standby_) {
      standby_->Follow(other && view.leader_address != own_address_ ? view.leader_address : "");
    }
  }
  // Stopping joins threads: not under mu_. The directory keeps what it
  // held, and expires nothing until a later term, which may load a newer
  // copy over it (BeforeServing).
  if (stop_leading) {
    dir_.SetServing(false);
    leader_.Stop();
  }
}

ErrorCode MasterReplication::BeforeServing(int64_t term) {
  MutexLock lock(&mu_);
  loaded_copy_ = false;
  if (standby_ && standby_->has_state() && saw_other_leader_) {
    standby_->Stop();  // its state is final now
    dir_.Clear();
    ErrorCode rc = ErrorCode::OK;
    standby_->WithState([&](const StandbyState& s) { rc = s.LoadInto(dir_); });
    if (rc != ErrorCode::OK) return rc;  // MasterHa retries; the standby stays stopped
    size_t objects = 0;
    standby_->WithState([&](const StandbyState& s) { objects = s.object_count(); });
    std::fprintf(stderr, "shelfmark-master: ha: term %lld: loaded the standby copy (%zu objects)\n",
                 static_cast<long long>(term), objects);
    loaded_copy_ = true;
  } else if (standby_) {
    standby_->Stop();
  }
  // A fresh standby for when this term ends (no copy: it must copy again).
  standby_ = NewStandby();
  leading_ = true;
  led_term_ = term;
  publishing_term_.store(term);
  saw_other_leader_ = false;
  leader_.Start();
  // Every node it holds, inherited or restored, gets a full client TTL from
  // now to ping this leader.
  dir_.SetServing(true);
  return ErrorCode::OK;
}

bool MasterReplication::MayCampaign() {
  MutexLock lock(&mu_);
  if (!saw_other_leader_) return true;
  // A copy counts only if the last leader's published in-sync set names
  // this master: then it holds every mutation that leader acknowledged (a
  // standby it dropped, or never waited for, may lack some).
  if (standby_ && standby_->has_state() && NamedInSync()) return true;
  return no_leader_since_ms_ != 0 && NowMs() - no_leader_since_ms_ >= options_.unsynced_takeover_ms;
}

ReplicationStandbyStats MasterReplication::standby_stats() const {
  MutexLock lock(&mu_);
  return standby_ ? standby_->stats() : ReplicationStandbyStats{};
}

bool MasterReplication::loaded_copy() const {
  MutexLock lock(&mu_);
  return loaded_copy_;
}

bool MasterReplication::has_copy() const {
  MutexLock lock(&mu_);
  return standby_ && standby_->has_state();
}

void AddReplicationMetrics(MetricsRegistry& registry, const MasterReplication& r) {
  const MasterReplication* p = &r;
  const ReplicationLeader& leader = r.leader();
  registry.AddGauge("shelfmark_master_ha_replication_standbys_in_sync",
                    "Standbys with a complete copy receiving this leader's batches.",
                    [&leader] { return static_cast<double>(leader.stats().in_sync); });
  registry.AddGauge("shelfmark_master_ha_replication_watchers",
                    "Standbys' watch connections this leader holds (their end tells a standby "
                    "this leader is gone).",
                    [&leader] { return static_cast<double>(leader.stats().watchers); });
  registry.AddGauge("shelfmark_master_ha_replication_lag_ops",
                    "Changes of this leader's directory not yet acknowledged by the standbys "
                    "its mutations wait for.",
                    [&leader] { return static_cast<double>(leader.stats().lag_ops); });
  registry.AddGauge("shelfmark_master_ha_replication_lag_seconds",
                    "Age of the oldest batch a standby has not acknowledged yet.",
                    [&leader] { return static_cast<double>(leader.stats().lag_ms) / 1000.0; });
  registry.AddCounterFunc("shelfmark_master_ha_replication_batches_total",
                          "Batches of changes this master shipped to its standbys.",
                          [&leader] { return static_cast<double>(leader.stats().batches); });
  registry.AddCounterFunc("shelfmark_master_ha_replication_dropped_standbys_total",
                          "Standby connections this leader dropped (errors, stalls, bad proofs).",
                          [&leader] { return static_cast<double>(leader.stats().dropped); });
  registry.AddGauge("shelfmark_master_ha_replication_connections",
                    "Replication connections this leader holds, in their handshake or after "
                    "(at most --ha_max_replication_connections).",
                    [&leader] { return static_cast<double>(leader.stats().connections); });
  registry.AddCounterFunc("shelfmark_master_ha_replication_evicted_connections_total",
                          "Replication connections closed in their handshake to make room "
                          "for a new one.",
                          [&leader] { return static_cast<double>(leader.stats().evicted); });
  registry.AddCounterFunc("shelfmark_master_ha_replication_rejected_connections_total",
                          "Replication connections closed at once: at the limit, none in "
                          "its handshake to replace.",
                          [&leader] { return static_cast<double>(leader.stats().rejected); });
  registry.AddGauge("shelfmark_master_ha_standby_synced",
                    "1 while this master, as a standby, holds a complete copy of the leader's "
                    "directory.",
                    [p] { return p->has_copy() ? 1.0 : 0.0; });
  registry.AddCounterFunc("shelfmark_master_ha_standby_batches_total",
                          "Batches this master applied as a standby.",
                          [p] { return static_cast<double>(p->standby_stats().batches); });
}

}  // namespace shelfmark
