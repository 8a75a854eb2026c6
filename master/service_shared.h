// What the master's two request paths share (internal to master/): the
// method table (metric label and the roles that may call), the per-method
// metrics, and the state every connection's service reads. The Cap'n Proto
// service (master_service.cc) and the lookup channel's sessions
// (lookup_session.h) both answer through it, so a lookup is authorised and
// counted the same whichever protocol carried it.
//
// Thread safety: SharedState is read-only after construction but for its
// AuthPolicy (thread-safe limiter, atomic counters) and the metrics
// (thread-safe); every loop thread uses it at once.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "auth/token_table.h"
#include "common/error_code.h"
#include "master/connection_auth.h"
#include "service/metrics.h"

namespace shelfmark {

class Directory;

namespace master_internal {

// Who may make a call (auth::Role bits; any one suffices). kOpen: no
// handshake needed (the handshake itself).
constexpr uint32_t kOpen = 0;
constexpr uint32_t kNode = auth::kRoleNode;
constexpr uint32_t kNodeOrAdmin = auth::kRoleNode | auth::kRoleAdmin;
constexpr uint32_t kClient = auth::kRoleClient | auth::kRoleAdmin;  // admin may too
constexpr uint32_t kReader = auth::kAllRoles;  // nodes read what they offload
constexpr uint32_t kAdmin = auth::kRoleAdmin;

// One entry per MasterService method: enum constant, metric label, roles.
// Calls that name a tenant, force or all tenants also pass
// ConnectionAuth::Check.
#define SHELFMARK_RPC_METHODS(X)                                                       \
  X(kMountSegment, "MountSegment", kNode) X(kUnmountSegment, "UnmountSegment", kNodeOrAdmin) \
  X(kPing, "Ping", kNode) X(kMountLocalDisk, "MountLocalDisk", kNode)                  \
  X(kPutStart, "PutStart", kClient) X(kPutEnd, "PutEnd", kClient)                      \
  X(kPutRevoke, "PutRevoke", kClient)                                                  \
  X(kGetReplicaList, "GetReplicaList", kReader) X(kExistKey, "ExistKey", kReader)      \
  X(kStat, "Stat", kReader) X(kListKeys, "ListKeys", kClient)                          \
  X(kCountKeys, "CountKeys", kClient) X(kGroupMembers, "GroupMembers", kReader)        \
  X(kRemove, "Remove", kClient) X(kRemoveAll, "RemoveAll", kAdmin)                     \
  X(kRemoveByRegex, "RemoveByRegex", kClient)                                          \
  X(kBatchPutStart, "BatchPutStart", kClient) X(kBatchPutEnd, "BatchPutEnd", kClient)  \
  X(kBatchPutRevoke, "BatchPutRevoke", kClient)                                        \
  X(kBatchGetReplicaList, "BatchGetReplicaList", kReader)                              \
  X(kBatchExistKey, "BatchExistKey", kReader) X(kBatchRemove, "BatchRemove", kClient)  \
  X(kOffloadHeartbeat, "OffloadHeartbeat", kNode)                                      \
  X(kNotifyOffloadSuccess, "NotifyOffloadSuccess", kNode)                              \
  X(kEvictDiskReplica, "EvictDiskReplica", kNode)                                      \
  X(kPromoteStart, "PromoteStart", kNode) X(kPromoteEnd, "PromoteEnd", kNode)          \
  X(kAuthChallenge, "AuthChallenge", kOpen) X(kAuthenticate, "Authenticate", kOpen)

enum Method : int {
#define SHELFMARK_X(id, name, roles) id,
  SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
  kMethodCount
};

inline constexpr std::array<const char*, kMethodCount> kMethodNames = {
#define SHELFMARK_X(id, name, roles) name,
    SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
};

inline constexpr std::array<uint32_t, kMethodCount> kMethodRoles = {
#define SHELFMARK_X(id, name, roles) roles,
    SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
};

struct MethodMetrics {
  Counter* requests = nullptr;
  Counter* failures = nullptr;
  Histogram* latency_seconds = nullptr;
};

struct SharedState {
  SharedState(Directory& d, size_t batch, auth::TokenTable tokens, auth::HandshakeLimits limits)
      : directory(d), max_batch(batch), auth(std::move(tokens), limits) {}
  Directory& directory;
  size_t max_batch;
  AuthPolicy auth;  // its limiter and counters change; the rest is read-only
  bool has_metrics = false;
  std::array<MethodMetrics, kMethodCount> metrics{};
};

// Counts one answered call of `method` (whole-call `code`, begun at `start`).
inline void RecordCall(const SharedState& s, Method method, ErrorCode code,
                       std::chrono::steady_clock::time_point start) {
  if (!s.has_metrics) return;
  const MethodMetrics& m = s.metrics[method];
  m.requests->Inc();
  if (code != ErrorCode::OK) m.failures->Inc();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  m.latency_seconds->Observe(std::chrono::duration<double>(elapsed).count());
}

}  // namespace master_internal
}  // namespace shelfmark
