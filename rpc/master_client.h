// MasterClient: the client-side stub of the master's Cap'n Proto RPC, used by
// nodes, the client library and the tools. Synchronous calls plus batch
// forms; each method mirrors the Directory method of the same name (see
// directory/directory.h for semantics) and returns the master's ErrorCode,
// or RPC_FAIL when the call could not be completed (connection refused,
// dropped, timed out, malformed reply).
//
// Thread safety: a MasterClient belongs to the thread that created it (it
// owns a KJ event loop on that thread); use one per thread.
// Reconnection: after a dropped connection the next call reconnects; calls
// that only read (Ping, GetReplicaList, ExistKey, Stat, ListKeys, CountKeys,
// GroupMembers, their batch forms) are retried once on a fresh connection,
// calls that change state are not (they return RPC_FAIL).
// Following the leader (address "etcd://H:P[;H:P...]", docs/ha.md "Finding
// the leader"): the leader's address is read from etcd (key
// shelfmark/<cluster_id>/leader) on first use, and again after a call is
// answered NOT_LEADER or fails with RPC_FAIL; the call is then tried again
// (rpc/leader_retry.h: NOT_LEADER and unsent calls always, calls whose
// request may have arrived only when read-only), pausing 50 ms doubling to
// 200 ms between attempts. No leader found in time: RPC_FAIL. A NOT_LEADER
// answer that names the leader sends the call there at once, without asking
// etcd (one hop; see MasterTarget); `follow_leader_hints` lets a host:port
// client do the same.
// Time: all of one call (resolutions, connects, handshakes, attempts,
// pauses; for a lookup, the lookup channel and its Cap'n Proto fallback)
// stays within call_timeout_ms.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/reply_poll.h"
#include "common/result.h"
#include "common/task_types.h"
#include "common/uuid.h"
#include "common/types.h"

namespace shelfmark {

struct MasterClientOptions {
  // host:port of shelfmark-master, or etcd://H:P[;H:P...]: follow the
  // leader of cluster `cluster_id` published in those etcd endpoints.
  std::string address = "127.0.0.1:50051";
  // With a host:port address: a NOT_LEADER answer naming the leader
  // (docs/ha.md, "NOT_LEADER names the leader") sends this client's calls
  // there from then on, and back to `address` when that leader fails them.
  // Off: `address` is the one master this client talks to (NOT_LEADER is
  // returned, as before HA). An etcd:// address always follows the hints.
  bool follow_leader_hints = false;
  // The cluster whose leader an etcd:// address follows; "" :
  // $SHELFMARK_CLUSTER_ID, else $MC_STORE_CLUSTER_ID, else "shelfmark"
  // (ha::ResolveClusterId). Unused with a host:port address.
  std::string cluster_id{};
  UUID client_id = UUID::Generate();
  int64_t call_timeout_ms = 10'000;
  // Proven to the master on every new connection (docs/security.md); the
  // master proves it back. Empty: no handshake (a master with tokens then
  // answers every call UNAUTHENTICATED).
  std::string token{};
  // GetReplicaList, PutStart, PutEnd, PutRevoke, ExistKey, Remove and
  // their batch forms go over the lookup channel (rpc/lookup_client.h: one
  // send and one receive per call on the calling thread) instead of Cap'n
  // Proto RPC. A master that does not speak it (it drops the connection
  // before answering the channel's first challenge) is then asked over
  // Cap'n Proto, as is every read whose channel call fails and every
  // mutation whose request was not sent.
  bool lookup_channel = true;
  // LookupClientOptions::reply_poll_us: how long a thread polls for the
  // channel's answer before it blocks (common/reply_poll.h).
  int64_t reply_poll_us = DefaultReplyPollMicros();
};

class MasterClient {
 public:
  explicit MasterClient(MasterClientOptions options);
  ~MasterClient();
  MasterClient(const MasterClient&) = delete;
  MasterClient& operator=(const MasterClient&) = delete;

  const UUID& client_id() const;
  // Connects now (calls connect lazily otherwise). RPC_FAIL when
  // unreachable (or no leader is published in etcd within
  // call_timeout_ms); UNAUTHENTICATED or RATE_LIMITED when the token
  // handshake fails (every call returns these too when its connection's
  // handshake fails); INVALID_PARAMS for an etcd:// address or cluster id
  // that does not parse.
  ErrorCode Connect();
  // The host:port calls go to: the fixed address, the leader last
  // resolved from etcd ("" before one was), or the leader a NOT_LEADER
  // answer named.
  std::string master_address() const;
  // The resolved cluster id (meaningful with an etcd:// address).
  const std::string& cluster_id() const;

  ErrorCode MountSegment(const Segment& segment);
  ErrorCode UnmountSegment(const UUID& segment_id);
  // Directory::DrainSegment; a master without the call answers an RPC error.
  ErrorCode DrainSegment(const UUID& segment_id);
  Result<PingResponse> Ping();
  ErrorCode MountLocalDisk(bool enable_offloading, std::string_view endpoint);

  Result<std::vector<ReplicaDescriptor>> PutStart(std::string_view tenant, std::string_view key,
                                                  uint64_t size, const PutConfig& config);
  // `checksum`: the value's, when PutStart carried none (Directory::PutEnd).
  ErrorCode PutEnd(std::string_view tenant, std::string_view key,
                   ReplicaType type = ReplicaType::MEMORY,
                   std::optional<uint64_t> checksum = std::nullopt);
  ErrorCode PutRevoke(std::string_view tenant, std::string_view key,
                      ReplicaType type = ReplicaType::MEMORY);
  // The one-round-trip put (Directory::ReservePut, CommitPut), on the
  // lookup channel only: UNAVAILABLE_IN_CURRENT_STATUS when the channel is
  // off or unusable now (no Cap'n Proto form exists); INVALID_PARAMS also
  // from a master too old to know the call. CommitPut's error is the
  // commit's code; its value the renewed reservation, if any.
  Result<PutReservationGrant> ReservePut(std::string_view tenant, uint64_t size,
                                         const PutConfig& config);
  Result<std::optional<PutReservationGrant>> CommitPut(std::string_view tenant,
                                                       std::string_view key, uint64_t reservation,
                                                       const PutConfig& config, bool renew);
  // Their batch forms (Directory::BatchReservePut, BatchCommitPut), on the
  // channel only as well: one grant per size, all or none; one commit
  // answer per key (`reservations` and `checksums`, when not empty, one per
  // key).
  Result<std::vector<PutReservationGrant>> BatchReservePut(std::string_view tenant,
                                                           const std::vector<uint64_t>& sizes,
                                                           const PutConfig& config);
  Result<std::vector<Result<std::optional<PutReservationGrant>>>> BatchCommitPut(
      std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& reservations, const std::vector<uint64_t>& checksums,
      const PutConfig& config, bool renew);
  // Whether a ReservePut or BatchReservePut refused with `rc` will stay
  // refused for a while (the channel is off, or the master too old to know
  // the call), so that asking again soon would cost a round trip for nothing.
  static bool ReservationRefusalLasts(ErrorCode rc) {
    return rc == ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS || rc == ErrorCode::INVALID_PARAMS;
  }
  // The lookup channel's LookupClient::IntactConnection (0: none): a
  // reservation granted while it was n is usable while it still is n.
  uint64_t ChannelConnection();
  Result<GetReplicaListResponse> GetReplicaList(std::string_view tenant, std::string_view key);
  Result<bool> ExistKey(std::string_view tenant, std::string_view key);
  Result<ObjectInfo> Stat(std::string_view tenant, std::string_view key);
  Result<std::vector<std::string>> ListKeys(std::string_view tenant, std::string_view prefix,
                                            uint64_t limit);
  Result<uint64_t> CountKeys(std::string_view tenant, bool all_tenants);
  Result<std::vector<std::string>> GroupMembers(std::string_view tenant,
                                                std::string_view group_id);
  ErrorCode Remove(std::string_view tenant, std::string_view key, bool force = false);
  Result<uint64_t> RemoveAll(std::string_view tenant, bool all_tenants, bool force = false);
  // The number of objects removed; `pattern` is a POSIX ERE (Directory::RemoveByRegex).
  Result<uint64_t> RemoveByRegex(std::string_view tenant, std::string_view pattern,
                                 bool force = false);

  // Batch forms: the outer Result fails only as a whole (RPC_FAIL or
  // INVALID_PARAMS for mismatched lengths); otherwise one answer per key, in order.
  Result<std::vector<Result<std::vector<ReplicaDescriptor>>>> BatchPutStart(
      std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const PutConfig& config,
      const std::vector<uint64_t>& checksums = {});
  // `checksums`: empty, or one per key (Directory::BatchPutEnd).
  Result<std::vector<ErrorCode>> BatchPutEnd(std::string_view tenant,
                                             const std::vector<std::string>& keys,
                                             const std::vector<uint64_t>& checksums = {});
  Result<std::vector<ErrorCode>> BatchPutRevoke(std::string_view tenant,
                                                const std::vector<std::string>& keys);
  Result<std::vector<Result<GetReplicaListResponse>>> BatchGetReplicaList(
      std::string_view tenant, const std::vector<std::string>& keys);
  Result<std::vector<Result<bool>>> BatchExistKey(std::string_view tenant,
                                                  const std::vector<std::string>& keys);
  Result<std::vector<ErrorCode>> BatchRemove(std::string_view tenant,
                                             const std::vector<std::string>& keys,
                                             bool force = false);

  Result<std::vector<OffloadTask>> OffloadHeartbeat(uint64_t max_tasks);
  Result<std::vector<ErrorCode>> NotifyOffloadSuccess(const std::vector<OffloadedObject>& items);
  ErrorCode EvictDiskReplica(std::string_view tenant, std::string_view key);
  Result<std::vector<ErrorCode>> NotifyOffloadFailure(const std::vector<OffloadFailure>& items);
  // Promotion on hit (docs/directory.md): one grant / one code per item, in
  // order.
  Result<std::vector<PromoteGrant>> PromoteStart(const std::vector<PromoteRequest>& items);
  Result<std::vector<ErrorCode>> PromoteEnd(const std::vector<PromoteResult>& items);

  // Copy and move tasks (Directory::CreateTask .. TaskEnd for the codes);
  // this client is the task's creator and executor.
  Result<UUID> CreateTask(std::string_view tenant, const TaskSpec& spec);
  Result<TaskInfo> QueryTask(std::string_view tenant, const UUID& id);
  Result<TaskGrant> TaskStart(std::string_view tenant, const UUID& id);
  ErrorCode TaskEnd(std::string_view tenant, const UUID& id, ErrorCode copied);

 private:
  // The Cap'n Proto forms of the two lookups (the lookup channel's fallback).
  Result<GetReplicaListResponse> CapnpGetReplicaList(std::string_view tenant,
                                                     std::string_view key);
  Result<std::vector<Result<GetReplicaListResponse>>> CapnpBatchGetReplicaList(
      std::string_view tenant, const std::vector<std::string>& keys);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shelfmark
