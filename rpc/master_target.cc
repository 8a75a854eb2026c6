#include "rpc/master_target.h"

#include <algorithm>
#include <utility>

#include "common/host_port.h"
#include "ha/leader_key.h"

namespace shelfmark {
namespace {

constexpr std::string_view kEtcdScheme = "etcd://";
// The longest host:port a hint may be: the longest DNS name (253) and
// ":65535". A master sends what it read from etcd; anything longer is no
// address a master could publish.
constexpr size_t kMaxHintBytes = 253 + 6;

}  // namespace

MasterTarget::MasterTarget(std::string address, std::string_view cluster_id,
                           bool fixed_follows_hints)
    : fixed_follows_hints_(fixed_follows_hints), cluster_id_(ha::ResolveClusterId(cluster_id)) {
  follows_leader_ = address.substr(0, kEtcdScheme.size()) == kEtcdScheme;
  if (!follows_leader_) {
    configured_ = address;
    address_ = std::move(address);  // as given: kj parses it at connect
    return;
  }
  Result<ha::MasterAddress> parsed = ha::ParseMasterAddress(address);
  usable_ = parsed.ok() && ha::ValidClusterId(cluster_id_);
  if (parsed.ok()) etcd_ = std::move(*parsed);
}

ErrorCode MasterTarget::Refresh(int64_t timeout_ms, bool* changed) {
  *changed = false;
  if (!needs_refresh()) return ErrorCode::OK;
  if (!usable_) return ErrorCode::INVALID_PARAMS;
  const int timeout = static_cast<int>(std::clamp<int64_t>(timeout_ms, 1, INT32_MAX));
  Result<HostPort> leader = ha::ResolveLeader(etcd_.etcd_endpoints, cluster_id_, timeout);
  if (!leader.ok()) {
    return leader.error() == ErrorCode::INVALID_PARAMS ? ErrorCode::INVALID_PARAMS
                                                       : ErrorCode::RPC_FAIL;
  }
  std::string address = leader->ToString();
  *changed = address != address_;
  address_ = std::move(address);
  suspect_ = false;
  hinted_ = false;
  return ErrorCode::OK;
}

bool MasterTarget::FollowHint(std::string_view leader) {
  if (!follows_hints() || hinted_ || leader.empty() || leader == address_) return false;
  if (leader.size() > kMaxHintBytes || !ParseHostPort(leader)) return false;
  address_ = std::string(leader);
  hinted_ = true;
  suspect_ = false;
  return true;
}

bool MasterTarget::LeaveHint() {
  if (!hinted_) return false;
  hinted_ = false;
  if (follows_leader_) {
    suspect_ = true;  // Refresh tells whether etcd names another address
    return false;
  }
  const bool changed = address_ != configured_;
  address_ = configured_;
  return changed;
}

}  // namespace shelfmark
