#include "ha/member_registration.h"

#include <algorithm>
#include <utility>

#include "ha/leader_key.h"

namespace shelfmark::ha {
namespace {

using std::chrono::milliseconds;

EtcdClientOptions ClientOptions(const MemberRegistrationOptions& o) {
  EtcdClientOptions out;
  out.endpoints = o.etcd_endpoints;
  out.request_timeout_ms = std::max(1, o.request_timeout_ms);
  return out;
}

}  // namespace

MemberRegistration::MemberRegistration(MemberRegistrationOptions options)
    : options_(std::move(options)),
      key_(ValidClusterId(options_.cluster_id) ? MemberKey(options_.cluster_id, options_.address)
                                               : ""),
      etcd_(std::make_unique<EtcdClient>(ClientOptions(options_))) {}

MemberRegistration::~MemberRegistration() { Stop(); }

ErrorCode MemberRegistration::ClaimOnce(std::string* holder) {
  Result<EtcdLease> lease = etcd_->LeaseGrant(options_.lease_ttl_s);
  if (!lease.ok()) return lease.error();
  Result<EtcdCreateResult> r = etcd_->CreateIfAbsent(key_, options_.holder, lease->id);
  if (!r.ok() || !r->created) {
    (void)etcd_->LeaseRevoke(lease->id);
    if (!r.ok()) return r.error();
    *holder = r->holder.value;
    return ErrorCode::ETCD_TRANSACTION_FAIL;
  }
  lease_id_ = lease->id;
  granted_ttl_s_ = lease->ttl_s;
  return ErrorCode::OK;
}

ErrorCode MemberRegistration::Register(std::string* error) {
  if (key_.empty() || options_.address.empty() || options_.etcd_endpoints.empty() ||
      options_.lease_ttl_s < 1 || thread_.joinable()) {
    *error = "bad member registration options";
    return ErrorCode::INVALID_PARAMS;
  }
  // A crashed holder's key lives until its lease expires: wait that long.
  // An etcd that does not answer in time (busy, or starting too) gets as
  // long: a claim that timed out revoked its lease, so trying again is safe.
  const Clock::time_point deadline =
      Clock::now() + std::chrono::seconds(options_.lease_ttl_s) + milliseconds(1000);
  std::string holder;
  ErrorCode code = ClaimOnce(&holder);
  while ((code == ErrorCode::ETCD_TRANSACTION_FAIL || code == ErrorCode::ETCD_OPERATION_ERROR) &&
         Clock::now() < deadline) {
    WaitUntil(std::min(deadline, Clock::now() + milliseconds(100)));
    code = ClaimOnce(&holder);
  }
  if (code == ErrorCode::ETCD_TRANSACTION_FAIL) {
    *error = "another master of cluster " + options_.cluster_id + " publishes " +
             options_.address + " (etcd key " + key_ + " is held by " + holder + ")";
  } else if (code != ErrorCode::OK) {
    *error = "etcd did not answer: " + etcd_->last_error();
  }
  if (code != ErrorCode::OK) return code;
  {
    MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
  return ErrorCode::OK;
}

void MemberRegistration::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (lease_id_ != 0) (void)etcd_->LeaseRevoke(lease_id_);  // best effort: else it expires
  lease_id_ = 0;
}

bool MemberRegistration::WaitUntil(Clock::time_point until) {
  MutexLock lock(&mu_);
  while (!stopping_ && Clock::now() < until) cv_.wait_until(lock, until);
  return !stopping_;
}

// Renews every TTL/3; a lease etcd no longer knows is claimed again.
void MemberRegistration::Run() {
  const auto interval = [this] {
    return milliseconds(std::max<int64_t>(10, std::max<int64_t>(1, granted_ttl_s_) * 1000 / 3));
  };
  Clock::time_point next = Clock::now() + interval();
  while (WaitUntil(next)) {
    if (lease_id_ != 0) {
      Result<int64_t> ttl = etcd_->LeaseKeepAliveOnce(lease_id_);
      if (ttl.ok() || ttl.error() != ErrorCode::ETCD_KEY_NOT_EXIST) {
        next = Clock::now() + (ttl.ok() ? interval() : interval() / 4);
        continue;
      }
      lease_id_ = 0;  // expired: the key went with it
    }
    std::string holder;
    const ErrorCode code = ClaimOnce(&holder);
    if (code == ErrorCode::ETCD_TRANSACTION_FAIL) claims_lost_.fetch_add(1);
    next = Clock::now() + (code == ErrorCode::OK ? interval() : interval() / 4);
  }
}

}  // namespace shelfmark::ha
