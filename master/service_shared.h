// What the master's two request paths share (internal to master/): the
// method table (metric label and the roles that may call), the per-method
// metrics, and the state every connection's service reads (its leadership
// gate included). The Cap'n Proto
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
#include <memory>
#include <utility>

#include "auth/token_table.h"
#include "common/error_code.h"
#include "master/connection_auth.h"
#include "master/leadership_gate.h"
#include "service/metrics.h"

namespace shelfmark {

class Directory;
class ReplicationLeader;

namespace master_internal {

// Who may make a call (auth::Role bits; any one suffices). kOpen: no
// handshake needed (the handshake itself).
constexpr uint32_t kOpen = 0;
constexpr uint32_t kNode = auth::kRoleNode;
constexpr uint32_t kNodeOrAdmin = auth::kRoleNode | auth::kRoleAdmin;
constexpr uint32_t kClient = auth::kRoleClient | auth::kRoleAdmin;  // admin may too
constexpr uint32_t kReader = auth::kAllRoles;  // nodes read what they offload
constexpr uint32_t kAdmin = auth::kRoleAdmin;

// What a call does (master/leadership_gate.h): the column the HA gate reads.
constexpr CallKind kAuthCall = CallKind::kHandshake;
constexpr CallKind kReads = CallKind::kRead;
constexpr CallKind kLive = CallKind::kLiveness;
constexpr CallKind kWrites = CallKind::kMutation;

// One entry per MasterService method: enum constant, metric label, roles,
// what it does to the state (a standby answers every call but the
// handshake NOT_LEADER; a fenced leader answers kWrites NOT_LEADER; with
// hot standbys, kWrites wait for the change to be replicated).
// Calls that name a tenant, force or all tenants also pass
// ConnectionAuth::Check.
#define SHELFMARK_RPC_METHODS(X)                                                       \
  X(kMountSegment, "MountSegment", kNode, kWrites)                                     \
  X(kUnmountSegment, "UnmountSegment", kNodeOrAdmin, kWrites)                          \
  X(kDrainSegment, "DrainSegment", kNodeOrAdmin, kWrites)                              \
  X(kPing, "Ping", kNode, kLive)                                                       \
  X(kMountLocalDisk, "MountLocalDisk", kNode, kWrites)                                 \
  X(kPutStart, "PutStart", kClient, kWrites)                                           \
  X(kPutEnd, "PutEnd", kClient, kWrites)                                               \
  X(kPutRevoke, "PutRevoke", kClient, kWrites)                                         \
  X(kGetReplicaList, "GetReplicaList", kReader, kReads)                                \
  X(kExistKey, "ExistKey", kReader, kReads)                                            \
  X(kStat, "Stat", kReader, kReads)                                                    \
  X(kListKeys, "ListKeys", kClient, kReads)                                            \
  X(kCountKeys, "CountKeys", kClient, kReads)                                          \
  X(kGroupMembers, "GroupMembers", kReader, kReads)                                    \
  X(kRemove, "Remove", kClient, kWrites)                                               \
  X(kRemoveAll, "RemoveAll", kAdmin, kWrites)                                          \
  X(kRemoveByRegex, "RemoveByRegex", kClient, kWrites)                                 \
  X(kBatchPutStart, "BatchPutStart", kClient, kWrites)                                 \
  X(kBatchPutEnd, "BatchPutEnd", kClient, kWrites)                                     \
  X(kBatchPutRevoke, "BatchPutRevoke", kClient, kWrites)                               \
  X(kBatchGetReplicaList, "BatchGetReplicaList", kReader, kReads)                      \
  X(kBatchExistKey, "BatchExistKey", kReader, kReads)                                  \
  X(kBatchRemove, "BatchRemove", kClient, kWrites)                                     \
  X(kOffloadHeartbeat, "OffloadHeartbeat", kNode, kWrites)                             \
  X(kNotifyOffloadSuccess, "NotifyOffloadSuccess", kNode, kWrites)                     \
  X(kEvictDiskReplica, "EvictDiskReplica", kNode, kWrites)                             \
  X(kNotifyOffloadFailure, "NotifyOffloadFailure", kNode, kWrites)                     \
  X(kPromoteStart, "PromoteStart", kNode, kWrites)                                     \
  X(kPromoteEnd, "PromoteEnd", kNode, kWrites)                                         \
  X(kCreateTask, "CreateTask", kClient, kWrites)                                       \
  X(kQueryTask, "QueryTask", kClient, kReads)                                          \
  X(kTaskStart, "TaskStart", kClient, kWrites)                                         \
  X(kTaskEnd, "TaskEnd", kClient, kWrites)                                             \
  X(kReservePut, "ReservePut", kClient, kWrites)                                       \
  X(kCommitPut, "CommitPut", kClient, kWrites)                                         \
  X(kBatchReservePut, "BatchReservePut", kClient, kWrites)                             \
  X(kBatchCommitPut, "BatchCommitPut", kClient, kWrites)                               \
  X(kAuthChallenge, "AuthChallenge", kOpen, kAuthCall)                                 \
  X(kAuthenticate, "Authenticate", kOpen, kAuthCall)

enum Method : int {
#define SHELFMARK_X(id, name, roles, kind) id,
  SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
  kMethodCount
};

inline constexpr std::array<const char*, kMethodCount> kMethodNames = {
#define SHELFMARK_X(id, name, roles, kind) name,
    SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
};

inline constexpr std::array<uint32_t, kMethodCount> kMethodRoles = {
#define SHELFMARK_X(id, name, roles, kind) roles,
    SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
};

inline constexpr std::array<CallKind, kMethodCount> kMethodKinds = {
#define SHELFMARK_X(id, name, roles, kind) kind,
    SHELFMARK_RPC_METHODS(SHELFMARK_X)
#undef SHELFMARK_X
};

struct MethodMetrics {
  Counter* requests = nullptr;
  Counter* failures = nullptr;
  Histogram* latency_seconds = nullptr;
};

struct SharedState {
  SharedState(Directory& d, size_t batch, auth::TokenTable tokens, auth::HandshakeLimits limits,
              LeadershipGate* g)
      : directory(d),
        max_batch(batch),
        auth(std::make_shared<AuthPolicy>(std::move(tokens), limits)),
        gate(g != nullptr ? *g : always_open) {}
  Directory& directory;
  size_t max_batch;
  // Its limiter and counters change; the rest is read-only. Shared: a hot
  // standby's handshake, checked on a thread of its own, may end after the
  // server (RpcServer's on_standby).
  std::shared_ptr<AuthPolicy> auth;
  LeadershipGate always_open;  // the gate without HA
  LeadershipGate& gate;        // thread-safe; the HA wiring's, or always_open
  bool has_metrics = false;
  std::array<MethodMetrics, kMethodCount> metrics{};
  // Hot standbys (set before serving; null: none): mutations wait for them.
  ReplicationLeader* replication = nullptr;
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
