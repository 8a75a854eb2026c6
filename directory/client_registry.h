// ClientRegistry: the nodes known to the master (liveness by ping), their
// SSD stores (DiskNode, owner of LOCAL_DISK replicas) and their offload work.
//
// Thread safety: all methods are thread-safe (one mutex, a leaf lock).
// Lifetime: a DiskNode MountDisk returns or TakeExpired hands out lives
// as long as the caller keeps it (it drops the node's replicas first); one
// taken out by TakeDisk or a superseding MountDisk stays valid until its
// client goes (a call of that client may still hold it).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "common/uuid.h"
#include "directory/directory_state.h"
#include "common/types.h"

namespace shelfmark {

struct DiskNode {
  DiskNode(const UUID& id, std::string ep, bool offload)
      : client_id(id), endpoint(std::move(ep)), enable_offloading(offload) {}
  const UUID client_id;
  const std::string endpoint;  // immutable: read without locks
  const bool enable_offloading;
  // The node reported a copy it could not make (NotifyOffloadFailure) and
  // none made since: eviction waits for no copy to it (directory_offload.cc).
  std::atomic<bool> copies_failing{false};
};

// An offload task handed to a node and not yet reported back.
struct InflightOffload {
  std::string tenant;
  std::string key;
  uint64_t replica_id;
  int64_t deadline_ms;
};

struct ExpiredClient {
  UUID id;
  std::unique_ptr<DiskNode> disk;  // may be null
};

class ClientRegistry {
 public:
  // Registers (or refreshes) a client as alive at `now_ms`.
  void Touch(const UUID& client, int64_t now_ms);
  // Refreshes a known client; false for an unknown one.
  bool Ping(const UUID& client, int64_t now_ms);
  bool Known(const UUID& client) const;
  // Installs the client's SSD store. Returns the node replaced by a mount
  // with a different endpoint or offload setting (its replicas must be
  // dropped before it is destroyed), or null. With `superseded`, other
  // clients' stores at `endpoint` are first taken out, as TakeDisk does,
  // under the same lock, and appended to it: an endpoint names one live
  // process, so they are a previous process's there (the caller drops their
  // replicas). Snapshot restore passes none: it installs what it reads.
  std::unique_ptr<DiskNode> MountDisk(const UUID& client, std::string_view endpoint,
                                      bool enable_offloading, int64_t now_ms,
                                      std::vector<const DiskNode*>* superseded = nullptr);
  // Takes the client's SSD store out (null: it has none): Disk() no longer
  // finds it, so no replica is added to it; the caller drops its replicas.
  // Drops the offload tasks queued for it; its in-flight ones stay until
  // they time out (TakeTimedOutInflight), so their pins are dropped. The
  // client stays known until it expires, and the node valid until then.
  const DiskNode* TakeDisk(const UUID& client);
  // The client's DiskNode or null.
  DiskNode* Disk(const UUID& client) const;
  // Removes and returns the clients silent since before `now_ms - ttl_ms`;
  // none while expiry is held.
  std::vector<ExpiredClient> TakeExpired(int64_t now_ms, int64_t ttl_ms);
  // Expiry held: a master that is not the serving leader (HA) expires no
  // client, since clients ping only the leader (docs/ha.md). Released at
  // `now_ms`, every known client counts as seen then: a full TTL to reach
  // the master that now serves. Idempotent.
  void HoldExpiry();
  void ReleaseExpiry(int64_t now_ms);
  bool expiry_held() const;

  // Queues an offload task for `client`; false (dropped) when the client is
  // unknown or already has `limit` tasks queued.
  bool QueueOffload(const UUID& client, OffloadTask task, size_t limit = kMaxQueuedOffloads);
  // Tasks queued, all clients, now.
  uint64_t QueuedOffloads() const;
  // Takes up to `max` queued tasks.
  std::vector<OffloadTask> TakeOffload(const UUID& client, size_t max);
  void AddInflight(const UUID& client, InflightOffload item);
  // Removes the in-flight entry for the key; false when there was none.
  bool FinishInflight(const UUID& client, std::string_view tenant, std::string_view key,
                      uint64_t* replica_id);
  // Removes in-flight entries past their deadline (all clients).
  std::vector<InflightOffload> TakeTimedOutInflight(int64_t now_ms);

  // --- snapshots ---
  // Every client's SSD store registration, sorted by client id.
  std::vector<DiskNodeState> ExportDisks() const;
  // Every non-empty offload queue, sorted by client id (in-flight entries are
  // not exported).
  std::vector<PendingOffloadState> ExportOffloads() const;
  // Marks every known client alive at `now_ms`.
  void TouchAll(int64_t now_ms);
  // Forgets every client. Precondition: no replica points at their disks.
  void Clear();

  size_t size() const;
  static constexpr size_t kMaxQueuedOffloads = 100'000;  // the default limit

 private:
  struct ClientState {
    int64_t last_seen_ms = 0;
    std::unique_ptr<DiskNode> disk;
    std::deque<OffloadTask> offload_queue;
    std::vector<InflightOffload> inflight;
    std::vector<std::unique_ptr<DiskNode>> taken_disks;  // by TakeDisk, kept until the client goes
  };
  // TakeDisk's work on a state, under mu_.
  static const DiskNode* TakeDiskOf(ClientState& state);

  mutable Mutex mu_;
  std::unordered_map<UUID, ClientState, UUIDHash> clients_ GUARDED_BY(mu_);
  bool expiry_held_ GUARDED_BY(mu_) = false;
};

}  // namespace shelfmark
