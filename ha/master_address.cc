#include "ha/master_address.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "ha/etcd_client.h"
#include "ha/leader_key.h"

namespace shelfmark::ha {
namespace {

constexpr std::string_view kEtcdScheme = "etcd://";
// How often ResolveLeader asks again while no master leads.
constexpr auto kResolvePoll = std::chrono::milliseconds(50);

}  // namespace

Result<MasterAddress> ParseMasterAddress(std::string_view text) {
  MasterAddress out;
  if (text.substr(0, kEtcdScheme.size()) == kEtcdScheme) {
    Result<std::vector<HostPort>> endpoints = ParseEtcdEndpoints(text.substr(kEtcdScheme.size()));
    if (!endpoints.ok()) return endpoints.error();
    out.etcd_endpoints = std::move(*endpoints);
    return out;
  }
  if (text.find("://") != std::string_view::npos) return ErrorCode::INVALID_PARAMS;
  std::optional<HostPort> direct = ParseHostPort(text);
  if (!direct) return ErrorCode::INVALID_PARAMS;
  out.direct = std::move(*direct);
  return out;
}

std::string ResolveClusterId(std::string_view explicit_id) {
  if (!explicit_id.empty()) return std::string(explicit_id);
  for (const char* name : {kClusterIdEnv, kMooncakeClusterIdEnv}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return std::string(kDefaultClusterId);
}

std::string MasterFlagError(std::string_view master_flag, std::string_view master,
                            std::string_view cluster_id) {
  const std::string flag = "flag --" + std::string(master_flag);
  const std::string got = ", got '" + std::string(master) + "'";
  Result<MasterAddress> address = ParseMasterAddress(master);
  if (!address.ok()) {
    if (master.substr(0, kEtcdScheme.size()) == kEtcdScheme) {
      return flag + ": etcd:// needs one or more etcd endpoints HOST:PORT separated by ';'" + got;
    }
    return flag + " expects HOST:PORT or etcd://HOST:PORT[;HOST:PORT...]" + got;
  }
  const std::string id = ResolveClusterId(cluster_id);
  if (address->uses_etcd() && !ValidClusterId(id)) {
    return std::string("flag --cluster_id (default: $") + kClusterIdEnv + ", $" +
           kMooncakeClusterIdEnv + ", '" + std::string(kDefaultClusterId) + "') expects 1.." +
           std::to_string(kMaxClusterIdLength) + " characters of [A-Za-z0-9._-], got '" + id +
           "'";
  }
  return "";
}

Result<HostPort> ResolveLeader(const std::vector<HostPort>& etcd_endpoints,
                               std::string_view cluster_id, int timeout_ms) {
  if (!ValidClusterId(cluster_id) || etcd_endpoints.empty()) return ErrorCode::INVALID_PARAMS;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string key = LeaderKey(cluster_id);
  ErrorCode last = ErrorCode::ETCD_OPERATION_ERROR;
  bool answered = false;
  EtcdClientOptions options;
  options.endpoints = etcd_endpoints;
  options.request_timeout_ms = std::clamp(timeout_ms, 1, 1000);
  EtcdClient etcd(options);
  while (true) {
    Result<std::optional<EtcdKeyValue>> kv = etcd.Get(key);
    if (kv.ok() && kv->has_value()) {
      std::optional<HostPort> leader = ParseHostPort((*kv)->value);
      if (!leader) return ErrorCode::DATA_CORRUPTED;
      return std::move(*leader);
    }
    if (kv.ok()) answered = true;
    last = kv.ok() ? ErrorCode::ETCD_KEY_NOT_EXIST : kv.error();
    if (Clock::now() + kResolvePoll >= deadline) break;
    std::this_thread::sleep_for(kResolvePoll);
  }
  return answered ? ErrorCode::ETCD_KEY_NOT_EXIST : last;
}

}  // namespace shelfmark::ha
