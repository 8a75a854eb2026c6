// How clients, nodes and tools name the master (docs/ha.md, "Finding the
// leader"): a fixed "host:port", or "etcd://H:P[;H:P...]" (Mooncake's form)
// meaning "ask these etcd endpoints who leads the cluster".
//
// Thread safety: reentrant; ResolveLeader blocks the calling thread;
// ResolveClusterId reads the environment (getenv).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/host_port.h"
#include "common/result.h"

namespace shelfmark::ha {

struct MasterAddress {
  HostPort direct;                       // a plain "host:port"
  std::vector<HostPort> etcd_endpoints;  // "etcd://...": non-empty
  bool uses_etcd() const { return !etcd_endpoints.empty(); }
};

// INVALID_PARAMS for anything else (an empty endpoint list, a bad host:port,
// another scheme).
Result<MasterAddress> ParseMasterAddress(std::string_view text);

// The environment variables a cluster id comes from when none is given:
// ours first, then Mooncake's (its client and master read it for the etcd
// key of the master view).
inline constexpr const char* kClusterIdEnv = "SHELFMARK_CLUSTER_ID";
inline constexpr const char* kMooncakeClusterIdEnv = "MC_STORE_CLUSTER_ID";

// The cluster id to use: `explicit_id` when non-empty, else the first
// non-empty of $SHELFMARK_CLUSTER_ID and $MC_STORE_CLUSTER_ID, else
// kDefaultClusterId (ha/leader_key.h). Not validated (ValidClusterId).
std::string ResolveClusterId(std::string_view explicit_id);

// "" when `master` is a master address (ParseMasterAddress) and, for an
// etcd:// one, ResolveClusterId(cluster_id) is a valid cluster id;
// otherwise a one-line usage error naming the flag `master_flag` (or
// --cluster_id and the environment variables), e.g.
//   flag --master: etcd:// needs at least one endpoint HOST:PORT, got 'etcd://'
std::string MasterFlagError(std::string_view master_flag, std::string_view master,
                            std::string_view cluster_id);

// The current leader's RPC address under cluster `cluster_id`, polling
// until one is published or `timeout_ms` passes: ETCD_KEY_NOT_EXIST when
// etcd answered but no master leads, ETCD_OPERATION_ERROR when etcd never
// answered, DATA_CORRUPTED when the published value is not host:port,
// INVALID_PARAMS for a bad cluster id.
Result<HostPort> ResolveLeader(const std::vector<HostPort>& etcd_endpoints,
                               std::string_view cluster_id, int timeout_ms);

}  // namespace shelfmark::ha
