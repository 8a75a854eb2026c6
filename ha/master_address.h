// How clients, nodes and tools will name the master (not wired in yet;
// docs/ha.md): a fixed "host:port", or "etcd://H:P[;H:P...]" (Mooncake's
// form) meaning "ask these etcd endpoints who leads".
//
// Thread safety: reentrant; ResolveLeader blocks the calling thread.
#pragma once

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

// The current leader's RPC address under cluster `cluster_id`, polling
// until one is published or `timeout_ms` passes: ETCD_KEY_NOT_EXIST when
// etcd answered but no master leads, ETCD_OPERATION_ERROR when etcd never
// answered, DATA_CORRUPTED when the published value is not host:port,
// INVALID_PARAMS for a bad cluster id.
Result<HostPort> ResolveLeader(const std::vector<HostPort>& etcd_endpoints,
                               std::string_view cluster_id, int timeout_ms);

}  // namespace shelfmark::ha
