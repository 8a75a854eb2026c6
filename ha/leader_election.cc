#include "ha/leader_election.h"

#include <algorithm>
#include <utility>

#include "ha/leader_key.h"

namespace shelfmark::ha {
namespace {

using std::chrono::milliseconds;

int64_t ToNs(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

EtcdClientOptions ClientOptions(const LeaderElectionOptions& o) {
  EtcdClientOptions out;
  out.endpoints = o.etcd_endpoints;
  out.request_timeout_ms =
      o.request_timeout_ms > 0 ? o.request_timeout_ms : std::max(1, o.lease_ttl_s * 1000 / 4);
  return out;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kNone: return "none";
    case Role::kFollower: return "follower";
    case Role::kLeader: return "leader";
  }
  return "none";
}

LeaderElection::LeaderElection(LeaderElectionOptions options)
    : options_(std::move(options)),
      key_(ValidClusterId(options_.cluster_id) ? LeaderKey(options_.cluster_id) : ""),
      last_leader_key_(ValidClusterId(options_.cluster_id) ? LastLeaderKey(options_.cluster_id)
                                                          : ""),
      in_sync_key_(ValidClusterId(options_.cluster_id) ? InSyncKey(options_.cluster_id) : ""),
      etcd_(std::make_unique<EtcdClient>(ClientOptions(options_))) {}

LeaderElection::~LeaderElection() { Stop(); }

ErrorCode LeaderElection::Start() {
  const LeaderElectionOptions& o = options_;
  if (o.etcd_endpoints.empty() || o.address.empty() || key_.empty() || o.lease_ttl_s < 1 ||
      o.safety_margin_ms < 0 || o.safety_margin_ms >= o.lease_ttl_s * 1000 ||
      o.follower_poll_ms < 1 || o.renew_interval_ms < 0 || o.request_timeout_ms < 0) {
    return ErrorCode::INVALID_PARAMS;
  }
  if (thread_.joinable()) return ErrorCode::INTERNAL_ERROR;
  {
    MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  return ErrorCode::OK;
}

void LeaderElection::Stop() { Shutdown(/*resign=*/true); }

void LeaderElection::Abandon() { Shutdown(/*resign=*/false); }

void LeaderElection::Shutdown(bool resign) {
  if (!thread_.joinable()) return;
  ack_deadline_ns_.store(0);  // stop acknowledging before anything else
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  ack_deadline_ns_.store(0);  // a renewal in flight at Stop may have re-armed it
  if (resign && leading_) {
    // Best effort, each bounded: a failure leaves the key to the lease's expiry.
    (void)etcd_->DeleteIfCreatedAt(key_, my_revision_);
    (void)etcd_->LeaseRevoke(lease_id_);
  }
  leading_ = false;
  Publish(Role::kNone, 0, "");
}

bool LeaderElection::FenceHolds() const {
  const int64_t deadline = ack_deadline_ns_.load();
  return deadline != 0 && ToNs(Clock::now()) < deadline;
}

bool LeaderElection::CanAcknowledge() {
  const int64_t deadline = ack_deadline_ns_.load();
  if (deadline != 0 && ToNs(Clock::now()) < deadline) return true;
  refusals_.fetch_add(1);
  return false;
}

LeaderView LeaderElection::view() const {
  MutexLock lock(&mu_);
  return view_;
}

LeaderFence LeaderElection::fence() const {
  MutexLock lock(&mu_);
  return fence_;
}

LeaderElectionCounts LeaderElection::counts() const {
  return {won_.load(), lost_.load(), renew_failures_.load(), refusals_.load(), revoked_.load()};
}

void LeaderElection::LeaderGone(int64_t term) {
  if (term <= 0) return;
  {
    MutexLock lock(&mu_);
    gone_term_ = term;
  }
  cv_.notify_all();
}

int64_t LeaderElection::TakeGoneTerm() {
  MutexLock lock(&mu_);
  return std::exchange(gone_term_, 0);
}

bool LeaderElection::RevokeIfGone(const EtcdKeyValue& holder, int64_t gone_term) {
  if (gone_term == 0 || holder.create_revision != gone_term) return false;
  // That lease is the gone leader's alone: if the key changed meanwhile,
  // revoking it touches no other leader.
  if (holder.lease == 0 || etcd_->LeaseRevoke(holder.lease) != ErrorCode::OK) return false;
  revoked_.fetch_add(1);
  return true;
}

bool LeaderElection::Stopping() {
  MutexLock lock(&mu_);
  return stopping_;
}

bool LeaderElection::WaitUntil(Clock::time_point until, bool wake_on_gone) {
  MutexLock lock(&mu_);
  while (!stopping_ && !(wake_on_gone && gone_term_ != 0) && Clock::now() < until) {
    cv_.wait_until(lock, until);
  }
  return !stopping_;
}

std::chrono::milliseconds LeaderElection::RenewInterval() const {
  if (options_.renew_interval_ms > 0) return milliseconds(options_.renew_interval_ms);
  return milliseconds(std::max<int64_t>(1, fence().granted_ttl_s * 1000 / 3));
}

void LeaderElection::Run() {
  while (!Stopping()) {
    if (leading_) {
      Renew();
    } else {
      Follow();
    }
  }
}

void LeaderElection::Follow() {
  const int64_t gone = TakeGoneTerm();
  Result<std::optional<EtcdKeyValue>> holder = etcd_->Get(key_);
  if (holder.ok() && holder->has_value() && RevokeIfGone(**holder, gone)) {
    holder = etcd_->Get(key_);  // gone with the lease: campaign now
  }
  if (holder.ok() && !holder->has_value()) {
    // Nobody leads: who led last (the campaign rule asks) is in the view
    // may_campaign's owner saw through on_change first.
    LeaderView records{Role::kFollower, view().term, "", 0, 0, {}};
    if (!ReadRecords(&records)) {
      Publish(Role::kNone, view().term, "");  // etcd not answering: decide nothing
    } else {
      Publish(std::move(records));
      if (!options_.may_campaign || options_.may_campaign()) {
        Campaign();
        if (leading_) return;
      }
    }
  } else if (holder.ok()) {
    Publish(Role::kFollower, (*holder)->create_revision, (*holder)->value);
  } else {
    Publish(Role::kNone, view().term, "");  // etcd not answering: leader unknown
  }
  WaitUntil(Clock::now() + milliseconds(options_.follower_poll_ms), /*wake_on_gone=*/true);
}

void LeaderElection::Campaign() {
  const Clock::time_point sent = Clock::now();  // before the grant: the lease starts later
  Result<EtcdLease> lease = etcd_->LeaseGrant(options_.lease_ttl_s);
  if (!lease.ok()) return;
  Result<EtcdCreateResult> r =
      etcd_->CreateIfAbsent(key_, options_.address, lease->id, last_leader_key_);
  if (!r.ok() || !r->created) {
    // Lost (or unsure: revoking also deletes a key the lost reply may have created).
    (void)etcd_->LeaseRevoke(lease->id);
    if (r.ok()) Publish(Role::kFollower, r->holder.create_revision, r->holder.value);
    return;
  }
  leading_ = true;
  lease_id_ = lease->id;
  my_revision_ = r->revision;
  SetFence(sent, lease->ttl_s);
  next_renew_ = sent + RenewInterval();
  won_.fetch_add(1);
  Publish(LeaderView{Role::kLeader, my_revision_, options_.address, my_revision_, 0, {}});
}

void LeaderElection::Renew() {
  if (!WaitUntil(next_renew_)) return;
  const Clock::time_point sent = Clock::now();
  Result<int64_t> ttl = etcd_->LeaseKeepAliveOnce(lease_id_);
  if (ttl.ok()) {
    SetFence(sent, *ttl);
    next_renew_ = sent + RenewInterval();
    return;
  }
  renew_failures_.fetch_add(1);
  if (ttl.error() == ErrorCode::ETCD_KEY_NOT_EXIST) {
    LoseLeadership();
    return;
  }
  // etcd did not answer: the fence runs out on its own; try again soon.
  next_renew_ = Clock::now() + std::max(milliseconds(10), RenewInterval() / 4);
}

void LeaderElection::LoseLeadership() {
  ack_deadline_ns_.store(0);
  leading_ = false;
  lost_.fetch_add(1);
  Publish(Role::kNone, my_revision_, "");
}

void LeaderElection::SetFence(Clock::time_point sent, int64_t ttl_s) {
  LeaderFence f;
  f.renew_sent = sent;
  f.granted_ttl_s = ttl_s;
  f.ack_deadline = sent + std::chrono::seconds(ttl_s) - milliseconds(options_.safety_margin_ms);
  {
    MutexLock lock(&mu_);
    fence_ = f;
  }
  ack_deadline_ns_.store(ToNs(f.ack_deadline));
}

bool LeaderElection::ReadRecords(LeaderView* view) {
  Result<std::optional<EtcdKeyValue>> last = etcd_->Get(last_leader_key_);
  if (!last.ok()) return false;
  Result<std::optional<EtcdKeyValue>> in_sync = etcd_->Get(in_sync_key_);
  if (!in_sync.ok()) return false;
  view->last_term = last->has_value() ? (*last)->mod_revision : 0;
  if (!in_sync->has_value() ||
      !DecodeInSync((*in_sync)->value, &view->in_sync_term, &view->in_sync)) {
    view->in_sync_term = 0;  // none, or not ours to read: nobody is named
    view->in_sync.clear();
  }
  return true;
}

void LeaderElection::Publish(LeaderView next) {
  {
    MutexLock lock(&mu_);
    if (view_ == next) return;
    view_ = next;
  }
  if (options_.on_change) options_.on_change(next);
}

}  // namespace shelfmark::ha
