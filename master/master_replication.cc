#include "master/master_replication.h"

#include <cstdio>
#include <utility>

#include "common/clock.h"
#include "service/metrics.h"

namespace shelfmark {
namespace {

ReplicationLeaderOptions LeaderOptions(const MasterReplicationOptions& o) {
  ReplicationLeaderOptions l;
  l.cluster_id = o.cluster_id;
  l.tokens = o.tokens;
  l.sync_standbys = o.sync_standbys;
  l.io_timeout_ms = o.io_timeout_ms;
  return l;
}

int64_t NowMs() { return SteadyClock().NowMs(); }

}  // namespace

MasterReplication::MasterReplication(Directory& directory, MasterReplicationOptions options)
    : dir_(directory), options_(std::move(options)), leader_(directory, LeaderOptions(options_)) {
  standby_ = NewStandby();
}

std::unique_ptr<ReplicationStandby> MasterReplication::NewStandby() {
  auto standby = std::make_unique<ReplicationStandby>(ReplicationStandbyOptions{
      options_.cluster_id, options_.tokens.AdminToken(), options_.io_timeout_ms,
      [this](const std::string& address) { StandbyLostLeader(address); }});
  standby->Start();
  return standby;
}

void MasterReplication::SetOnLeaderGone(std::function<void(int64_t term)> on_leader_gone) {
  MutexLock lock(&mu_);
  on_leader_gone_ = std::move(on_leader_gone);
}

void MasterReplication::StandbyLostLeader(const std::string& address) {
  std::function<void(int64_t)> tell;
  int64_t term = 0;
  {
    MutexLock lock(&mu_);
    if (leading_ || view_.leader_address != address) return;  // old news
    term = view_.term;
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
  MutexLock lock(&mu_);
  own_address_ = std::move(address);
}

void MasterReplication::OnView(const ha::LeaderView& view) {
  bool stop_leading = false;
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
  // held; a later term loads a newer copy over it (BeforeServing).
  if (stop_leading) leader_.Stop();
}

ErrorCode MasterReplication::BeforeServing(int64_t term) {
  MutexLock lock(&mu_);
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
  } else if (standby_) {
    standby_->Stop();
  }
  // A fresh standby for when this term ends (no copy: it must copy again).
  standby_ = NewStandby();
  leading_ = true;
  led_term_ = term;
  saw_other_leader_ = false;
  leader_.Start();
  return ErrorCode::OK;
}

bool MasterReplication::MayCampaign() {
  MutexLock lock(&mu_);
  if (!saw_other_leader_) return true;
  if (standby_ && standby_->has_state()) return true;
  return no_leader_since_ms_ != 0 && NowMs() - no_leader_since_ms_ >= options_.unsynced_takeover_ms;
}

ReplicationStandbyStats MasterReplication::standby_stats() const {
  MutexLock lock(&mu_);
  return standby_ ? standby_->stats() : ReplicationStandbyStats{};
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
  registry.AddGauge("shelfmark_master_ha_standby_synced",
                    "1 while this master, as a standby, holds a complete copy of the leader's "
                    "directory.",
                    [p] { return p->has_copy() ? 1.0 : 0.0; });
  registry.AddCounterFunc("shelfmark_master_ha_standby_batches_total",
                          "Batches this master applied as a standby.",
                          [p] { return static_cast<double>(p->standby_stats().batches); });
}

}  // namespace shelfmark
