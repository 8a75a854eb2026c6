#include "master/master_ha.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "service/metrics.h"

namespace shelfmark {
namespace {

std::string HolderName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string("shelfmark-master pid ") + std::to_string(getpid()) + " on " +
         (host[0] != '\0' ? host : "?");
}

ha::MemberRegistrationOptions MemberOptions(const MasterHaOptions& o, const std::string& address) {
  ha::MemberRegistrationOptions m;
  m.etcd_endpoints = o.etcd_endpoints;
  m.cluster_id = o.cluster_id;
  m.address = address;
  m.holder = HolderName();
  m.lease_ttl_s = o.lease_ttl_s;
  m.request_timeout_ms = std::max(1, o.lease_ttl_s * 1000 / 4);
  return m;
}

}  // namespace

MasterHa::MasterHa(MasterHaOptions options)
    : options_(std::move(options)), gate_([this] { return election_->CanAcknowledge(); }) {}

MasterHa::~MasterHa() { Stop(); }

ha::LeaderElectionOptions MasterHa::ElectionOptions(const std::string& address) {
  ha::LeaderElectionOptions e;
  e.etcd_endpoints = options_.etcd_endpoints;
  e.cluster_id = options_.cluster_id;
  e.address = address;
  e.lease_ttl_s = options_.lease_ttl_s;
  e.safety_margin_ms = options_.safety_margin_ms;
  e.on_change = [this](const ha::LeaderView& view) { OnChange(view); };
  e.may_campaign = options_.may_campaign;
  return e;
}

ErrorCode MasterHa::Start(const std::string& address, std::string* error) {
  if (member_ != nullptr) return ErrorCode::INTERNAL_ERROR;
  address_ = address;
  member_ = std::make_unique<ha::MemberRegistration>(MemberOptions(options_, address));
  election_ = std::make_unique<ha::LeaderElection>(ElectionOptions(address));
  ErrorCode code = member_->Register(error);
  if (code != ErrorCode::OK) return code;
  {
    MutexLock lock(&mu_);
    stopping_ = false;
  }
  promoter_ = std::thread([this] { Promote(); });
  code = election_->Start();
  if (code != ErrorCode::OK) {
    *error = "cannot start the election (" + std::string(ErrorCodeName(code)) + ")";
    Stop();
  }
  return code;
}

void MasterHa::Stop() {
  gate_.Close();
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (promoter_.joinable()) promoter_.join();
  if (election_ != nullptr) election_->Stop();
  gate_.Close();
  if (member_ != nullptr) member_->Stop();
}

// On the election thread (or the owner's, in Stop): closes at once on a
// lost leadership; wakes the promotion thread on a won one.
void MasterHa::OnChange(const ha::LeaderView& view) {
  const int64_t term = view.role == ha::Role::kLeader ? view.term : 0;
  UpdateLeaderHint(view);
  {
    MutexLock lock(&mu_);
    if (term != leading_term_ && leading_term_ != 0) {
      gate_.Close();
      served_term_ = 0;
    }
    leading_term_ = term;
  }
  cv_.notify_all();
  if (options_.on_view) options_.on_view(view);
  std::fprintf(stderr, "shelfmark-master: ha: %s, term %lld, leader %s\n",
               std::string(ha::RoleName(view.role)).c_str(), static_cast<long long>(view.term),
               view.leader_address.empty() ? "unknown" : view.leader_address.c_str());
}

// The leader NOT_LEADER answers name: another master that etcd says leads.
// A view without a leader while etcd does not answer (role none) keeps the
// last one: that master may still lead, and a client checks by its next
// answer anyway. Nobody leading in etcd, or this master itself (leading,
// or its predecessor's key with its own address), names none.
void MasterHa::UpdateLeaderHint(const ha::LeaderView& view) {
  if (view.role == ha::Role::kNone) return;
  const bool other = view.role == ha::Role::kFollower && view.leader_address != address_;
  gate_.SetLeaderHint(other ? view.leader_address : std::string());
}

int64_t MasterHa::NextTermToServe() {
  MutexLock lock(&mu_);
  while (!stopping_ && (leading_term_ == 0 || leading_term_ == served_term_)) cv_.wait(lock);
  return stopping_ ? 0 : leading_term_;
}

bool MasterHa::WaitBriefly() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  MutexLock lock(&mu_);
  while (!stopping_ && std::chrono::steady_clock::now() < until) cv_.wait_until(lock, until);
  return !stopping_;
}

void MasterHa::Promote() {
  for (int64_t term = NextTermToServe(); term != 0; term = NextTermToServe()) {
    const ErrorCode code = options_.before_serving ? options_.before_serving(term) : ErrorCode::OK;
    if (code != ErrorCode::OK) {
      std::fprintf(stderr, "shelfmark-master: ha: before serving term %lld: %s; retrying\n",
                   static_cast<long long>(term), std::string(ErrorCodeName(code)).c_str());
      if (!WaitBriefly()) return;
      continue;
    }
    MutexLock lock(&mu_);
    if (!stopping_ && leading_term_ == term) {  // still ours: serve
      served_term_ = term;
      gate_.Open();
    }
  }
}

void AddMasterHaMetrics(MetricsRegistry& registry, const MasterHa& ha) {
  const MasterHa* h = &ha;
  registry.AddGauge("shelfmark_master_ha_role",
                    "1 while this master leads and serves, 0 while it is a standby.",
                    [h] { return h->serving() ? 1.0 : 0.0; });
  registry.AddGauge("shelfmark_master_ha_term",
                    "The leader's term (etcd create_revision of the leader key) this master "
                    "last saw; 0 when none.",
                    [h] { return static_cast<double>(h->view().term); });
  registry.AddGauge("shelfmark_master_ha_leader_known",
                    "1 while this master knows a leader (itself or another), 0 while none "
                    "leads or etcd does not answer.",
                    [h] { return h->view().leader_address.empty() ? 0.0 : 1.0; });
  auto count = [h](uint64_t ha::LeaderElectionCounts::*field) {
    return [h, field] { return static_cast<double>(h->counts().*field); };
  };
  registry.AddCounterFunc("shelfmark_master_ha_elections_won_total",
                          "Elections this master won.", count(&ha::LeaderElectionCounts::elections_won));
  registry.AddCounterFunc("shelfmark_master_ha_leaderships_lost_total",
                          "Leaderships that ended because etcd no longer knew the lease.",
                          count(&ha::LeaderElectionCounts::leaderships_lost));
  registry.AddCounterFunc("shelfmark_master_ha_lease_renew_failures_total",
                          "Lease renewals that got no new TTL from etcd.",
                          count(&ha::LeaderElectionCounts::lease_renew_failures));
  registry.AddCounterFunc("shelfmark_master_ha_gone_leaders_revoked_total",
                          "Leases of gone leaders (their stream closed, their address refusing "
                          "connections) this master revoked to take over at once.",
                          count(&ha::LeaderElectionCounts::gone_leaders_revoked));
  registry.AddCounterFunc("shelfmark_master_ha_fenced_writes_total",
                          "Calls that change state refused NOT_LEADER while this leader could "
                          "not be sure of its lease.",
                          [h] { return static_cast<double>(h->gate_state().fenced_refusals()); });
  registry.AddCounterFunc("shelfmark_master_ha_not_leader_total",
                          "Calls refused NOT_LEADER because this master did not serve as leader.",
                          [h] { return static_cast<double>(h->gate_state().not_leader_refusals()); });
}

}  // namespace shelfmark
