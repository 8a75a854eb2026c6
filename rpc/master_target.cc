#include "rpc/master_target.h"

#include <algorithm>
#include <utility>

#include "ha/leader_key.h"

namespace shelfmark {
namespace {

constexpr std::string_view kEtcdScheme = "etcd://";

}  // namespace

MasterTarget::MasterTarget(std::string address, std::string_view cluster_id)
    : cluster_id_(ha::ResolveClusterId(cluster_id)) {
  follows_leader_ = address.substr(0, kEtcdScheme.size()) == kEtcdScheme;
  if (!follows_leader_) {
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
  return ErrorCode::OK;
}

}  // namespace shelfmark
