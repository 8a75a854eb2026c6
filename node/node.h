// Node: the logic of shelfmark-node. It owns a DRAM segment (a memfd mapped
// shared, pages populated up front), registers it with a TransportEngine for
// remote access, offers it to clients on this host (ShareLocally), and keeps
// it mounted at the master:
//
//   Run():  mount (retrying every retry_interval_ms while the master is
//           unreachable or refuses) -> ping every ping_interval_ms (keep it
//           well under the master's client TTL, default 10 s: e.g. ttl / 3)
//           -> a Ping answering NEED_REMOUNT (the master restarted or
//           expired us) remounts the same segment -> Stop() -> unmount and
//           return.
//
// SSD store (optional, NodeOptions::disk): the node serves LOCAL_DISK reads
// of `disk` on `disk_am` (a LocalDiskService, alive as long as the node) and,
// after every (re)mount, registers its disk at the master (MountLocalDisk,
// offloading enabled, endpoint = disk_endpoint) and re-reports every object
// the backend holds (NotifyOffloadSuccess), so a restarted master relearns
// the SSD data. Offloading runs on a thread of its own (with its own master
// connection), started after the first disk report and paused while the
// node is not mounted with its disk reported: it takes offload tasks
// (OffloadHeartbeat, up to kOffloadTasks at a time) and asks again at once
// while the master has some, else waits offload_poll_interval_ms. It groups
// the objects into batches of at most offload_batch_bytes and writes them
// with WriteBatch on a writer thread straight from this node's segment at
// each task's buffer_address (the MEMORY replica the master pinned; no
// copy; a range outside the segment is a failure; a replica removed by
// force while being written makes the master refuse its report, and the
// node drops that copy from its store), pipelined: batch N+1 is gathered
// and batch N-1 reported while batch N is written; batch N is reported
// (NotifyOffloadSuccess) once written; copies the store could not make are
// reported too (NotifyOffloadFailure), so eviction at the master stops
// waiting for them. What the store loses reaches the master through a
// DiskReporter (node/disk_reporter.h) on a thread of its own: keys its evict
// callback names, sent at once (each after the key's own offload report),
// and records a LOCAL_DISK read found missing or corrupt, sent before that
// read's OBJECT_NOT_FOUND reply.
//
// Promotion on hit (promote_after_hits > 0, with `disk`): every OK LOCAL_DISK
// read the LocalDiskService serves is counted by a PromotionTracker
// (node/promotion_tracker.h); a key read promote_after_hits times within
// promote_window_ms is queued (at most kPromoteQueue; more are dropped and
// retried once the tracker's window passes) and wakes the offload thread.
// Each round of that thread first takes up to kPromoteBatch queued keys
// (PromoteStart), then one OffloadHeartbeat, so neither starves the other.
// For each OK grant it reads the object from the SSD store and copies it
// into its own segment at the granted buffer_address (a range outside the
// segment, a failed read, or a remount since PromoteStart: not copied; a
// record that did not read back intact is reported lost, never copied),
// then ends them all in one PromoteEnd (copied or not): the master attaches
// the copies as COMPLETE MEMORY replicas. Grants not OK (no DRAM room under
// the eviction watermark, already in DRAM or in flight, gone) are counted
// and left to the tracker's window; granted keys are Done() in the tracker.
//
// The segment mounted is Segment{id, name, base = the memory's address, size,
// endpoint = engine.endpoint(), protocol = engine.protocol(), rkey = the
// registered region's rkey}; the same id is used for every (re)mount.
//
// Thread safety: Run() is called once, from one thread (it owns the master
// connection; the offload thread and its writer are joined before it
// returns); Stop(), the counters, disk_stats() and segment() may be called
// from any thread. `on_mounted` runs on Run()'s thread after each
// successful mount (after the disk report), `on_ping` after each ping round.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/types.h"
#include "node/disk_reporter.h"
#include "node/local_disk_service.h"
#include "node/promotion_tracker.h"
#include "ssdstore/storage_backend.h"
#include "transport/transport.h"

namespace shelfmark {

struct NodeOptions {
  // host:port of shelfmark-master, or etcd://H:P[;H:P...] (follow the
  // leader published there; MasterClientOptions::address).
  std::string master = "127.0.0.1:50051";
  // With an etcd:// master: the cluster whose leader to follow ("" :
  // $SHELFMARK_CLUSTER_ID, $MC_STORE_CLUSTER_ID, then "shelfmark").
  std::string cluster_id;
  bool follow_leader_hints = false;  // MasterClientOptions::follow_leader_hints
  // Proven to the master on each connection (docs/security.md; a token with
  // the node role); empty: no handshake.
  std::string master_token;
  UUID client_id = UUID::Generate();
  uint64_t segment_size = 0;  // bytes, > 0
  std::string segment_name;   // "" : "node-<client id>"
  UUID segment_id;            // nil: a fresh one
  // Offer the segment's memfd to clients on this host (ShareLocally), which
  // then read it without the transport. An engine shares one segment at
  // most: further segments on it set false (their same-host readers use the
  // transport).
  bool share_locally = true;
  // -1: the segment is fresh memory (a memfd of the node's own). Otherwise
  // segment_size bytes of this open file at memory_offset (a multiple of
  // the page size) are mapped shared and served (Mooncake's mount_segment
  // of a caller's file): the caller keeps the file at least that long while
  // the node lives (a shorter file faults on access), and may close the
  // descriptor once Create returned. Such a segment is never shared locally.
  int memory_fd = -1;
  uint64_t memory_offset = 0;
  int64_t ping_interval_ms = 3'000;
  int64_t retry_interval_ms = 500;
  int64_t rpc_timeout_ms = 5'000;
  // Called after each successful mount (first mount and remounts).
  std::function<void(const Segment&)> on_mounted;
  // Called on Run()'s thread after each answered ping's round (evictions
  // included; offloading runs on a thread of its own).
  std::function<void()> on_ping;
  // Called on Run()'s thread when a ping answers NEED_REMOUNT (the master
  // forgot this client id), before the remount. Nodes sharing a client id
  // (embedded/embedded_client.h) tell each other with Remount(): the first
  // remount makes the master know the id again, so the others' pings would
  // answer OK while their segments stay forgotten.
  std::function<void()> on_need_remount;
  // The SSD store: all three set, or `disk` null (no SSD store). `disk` and
  // `disk_am` must outlive the node; disk_endpoint is where clients reach
  // disk_am (the UCX engine's endpoint).
  StorageBackend* disk = nullptr;
  AmTransport* disk_am = nullptr;
  std::string disk_endpoint;
  // With `disk`: the wait before asking the master for offload tasks again
  // after it had none (never while it has some), > 0.
  int64_t offload_poll_interval_ms = 100;
  // With `disk`: the most bytes one WriteBatch of offloaded objects holds
  // (an object larger than that is a batch of its own), > 0.
  uint64_t offload_batch_bytes = 64ull << 20;
  // With `disk`: promotion on hit (above). A key served from the SSD store
  // this many times within promote_window_ms (> 0) is promoted back into
  // this node's DRAM; 0 turns promotion off.
  uint32_t promote_after_hits = 3;
  int64_t promote_window_ms = 10'000;
};

struct NodeCounters {
  uint64_t pings = 0;          // Ping calls answered
  uint64_t ping_failures = 0;  // Ping calls that failed (RPC_FAIL, ...)
  uint64_t mounts = 0;         // successful MountSegment calls
  uint64_t remounts = 0;       // NEED_REMOUNT answers seen
  uint64_t disk_mounts = 0;    // successful MountLocalDisk calls
  uint64_t disk_reported = 0;  // objects re-reported from the SSD store
  uint64_t offloaded = 0;      // offload tasks written to SSD and reported
  uint64_t offload_failures = 0;
  uint64_t offload_inflight = 0;  // gauge: tasks taken, not yet reported or failed
  uint64_t offloaded_bytes = 0;   // bytes of the `offloaded` objects
  uint64_t offload_batches = 0;   // offload batches written to the SSD store
  // Time the offload thread spent with work: from taking tasks while idle
  // until every batch is written and reported and the master has no more.
  // offloaded_bytes / offload_busy_ns is its throughput while it has work.
  uint64_t offload_busy_ns = 0;
  // Objects written to the SSD store whose report the master refused
  // (OBJECT_NOT_FOUND: removed, or removed and written again, while being
  // copied), removed from the store again so no re-report brings them back.
  uint64_t offload_stale = 0;
  uint64_t disk_evictions = 0;    // EvictDiskReplica calls answered for SSD evictions
  // EvictDiskReplica calls answered for records a read (LOCAL_DISK or a
  // promotion's) found missing or corrupt.
  uint64_t disk_lost_reported = 0;
  // Gauge: SSD evictions and lost records not answered by the master yet.
  uint64_t disk_reports_pending = 0;
  // Offload tasks reported failed (NotifyOffloadFailure answered).
  uint64_t offload_failures_reported = 0;
  uint64_t promotions_requested = 0;  // keys sent in PromoteStart
  uint64_t promoted = 0;              // copied and attached as MEMORY replicas (PromoteEnd OK)
  uint64_t promotions_refused = 0;    // grants not OK (no room, already in DRAM, gone)
  // Granted but not promoted: read or copy failed, address outside the
  // segment, or PromoteEnd not OK for a copied one.
  uint64_t promotion_failures = 0;
};

// The offset in `segment` of the `size` bytes at absolute `address` (an
// offload task's source, a promotion's destination); nullopt when the
// address is 0 or the range does not lie inside the segment.
std::optional<uint64_t> SegmentOffset(const Segment& segment, uint64_t address, uint64_t size);

class MasterClient;
struct MasterClientOptions;

class Node {
 public:
  static constexpr uint64_t kOffloadTasks = 64;  // tasks per OffloadHeartbeat
  static constexpr size_t kPromoteBatch = 64;     // keys per PromoteStart
  static constexpr size_t kPromoteQueue = 1024;   // keys queued for promotion at most

  // Maps and populates the segment and registers it with `engine` (which
  // must outlive the node), and starts the LOCAL_DISK service when `disk` is
  // set. INVALID_PARAMS for a zero size or bad options (a partial disk set);
  // NO_AVAILABLE_HANDLE when the memory cannot be mapped; the engine's code
  // when registration fails.
  static Result<std::unique_ptr<Node>> Create(NodeOptions options, TransportEngine* engine);
  // Unregisters the segment and gives its pages back to the OS (Run() must
  // have returned). The address range stays mapped, to fresh zero pages,
  // until the process exits: UCX over tcp emulates RMA, and a put already on
  // its way is written by the engine's progress thread after unregistration
  // with no check (ucp_put_handler); an unmapped range crashed the node on
  // SIGTERM under load (cluster_model_test).
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The mount/ping loop; returns after Stop(), with the segment unmounted
  // (best effort: the master may be gone). Returns the unmount's code (OK
  // when it was never mounted).
  ErrorCode Run();
  void Stop();
  // Makes Run() mount the segment again at its next round (another node of
  // the same client id saw NEED_REMOUNT); a mount the master already holds
  // is answered OK, so a spare one is harmless. Any thread.
  void Remount();

  const Segment& segment() const { return segment_; }
  uint8_t* memory() const { return memory_; }
  const MemoryRegion& region() const { return region_; }
  bool mounted() const { return mounted_.load(); }
  NodeCounters counters() const;
  // The LOCAL_DISK service's counters (requests served from the SSD store);
  // all zero without an SSD store.
  LocalDiskStats disk_stats() const;

 private:
  Node(NodeOptions options, TransportEngine* engine);
  struct OffloadBatch;
  class BatchWriter;

  MasterClientOptions MasterOptions() const;
  // Sleeps up to `ms` or until Stop() (or, with `until_promotions`, until
  // promotions are queued: the offload thread's idle wait); true when
  // stopping.
  bool SleepOrStop(int64_t ms, bool until_promotions = false);
  // Lets the offload thread run (the node is mounted, its disk reported) or
  // pauses it.
  void SetOffloadReady(bool ready);
  // Waits until offloading may run; false when stopping.
  bool WaitOffloadReady();
  // The destructor's release of the segment's memory (see ~Node).
  void RetireMemory();
  // MountLocalDisk + re-report of every stored object; the master's code.
  ErrorCode ReportDisk(MasterClient& master);
  // The offload thread: its own MasterClient, tasks -> batches -> writer.
  void OffloadLoop();
  // Writes `batch` (on the writer thread); sets its result.
  void WriteOffloadBatch(OffloadBatch& batch);
  // Reports a written batch (NotifyOffloadSuccess; its tasks the store did
  // not take: NotifyOffloadFailure) and settles its counters.
  void ReportOffloadBatch(MasterClient& master, OffloadBatch& batch);
  // NotifyOffloadFailure of `failed` (none: nothing sent).
  void ReportOffloadFailures(MasterClient& master, const std::vector<OffloadFailure>& failed);
  // Removes from the SSD store the reported keys the master refused, but
  // those a later batch holds. On the offload thread only.
  void DropStale(const std::vector<std::pair<std::string, std::string>>& stale);
  // LocalDiskService's on_served: counts the hit, queues a promotion.
  void OnServed(std::string_view tenant, std::string_view key, uint64_t size);
  // One promotion round on the offload thread: up to kPromoteBatch queued
  // keys, PromoteStart, copies, PromoteEnd.
  void PromoteRound(MasterClient& master);
  // Copies a granted object from the SSD store into the segment at
  // `address`; false when it cannot (counted in promotion_failures).
  bool CopyPromoted(const PromoteRequest& item, uint64_t address, uint64_t mount_epoch);
  // PromoteEnd for the granted items; counts promoted and failures.
  void EndPromotions(MasterClient& master, const std::vector<PromoteResult>& results);
  // WriteBatch; a batch the store refuses as a whole (INVALID_PARAMS or
  // BUFFER_OVERFLOW: more than it may hold at once) is written one object
  // at a time. Counts failed objects in offload_failures_.
  Result<std::vector<StoredLocation>> WriteToDisk(const std::vector<StoredObject>& batch);
  OffloadedObject Reported(const StoredLocation& location) const;
  // Holds back (true) or releases the evictions of a batch's keys: a key is
  // evicted at the master only after its offload was reported.
  void HoldEvictions(const OffloadBatch& batch, bool hold);

  const NodeOptions options_;
  TransportEngine* const engine_;
  uint8_t* memory_ = nullptr;
  MemoryRegion region_;
  Segment segment_;

  std::atomic<bool> mounted_{false};
  std::atomic<bool> remount_{false};  // Remount() asked
  std::atomic<uint64_t> pings_{0}, ping_failures_{0}, mounts_{0}, remounts_{0};
  std::atomic<uint64_t> disk_mounts_{0}, disk_reported_{0}, offloaded_{0}, offload_failures_{0},
      offload_inflight_{0}, offloaded_bytes_{0}, offload_batches_{0},
      offload_busy_ns_{0}, offload_stale_{0}, offload_failures_reported_{0};
  std::atomic<uint64_t> promotions_requested_{0}, promoted_{0}, promotions_refused_{0},
      promotion_failures_{0};
  // Promotion on hit: null when off. Declared before disk_service_, whose
  // on_served uses it, so that it outlives the service.
  std::unique_ptr<PromotionTracker> tracker_;
  // With `disk`: tells the master what the store lost. Declared before
  // disk_service_, whose on_missing uses it.
  std::unique_ptr<DiskReporter> reporter_;
  std::unique_ptr<LocalDiskService> disk_service_;
  Mutex stop_mu_;
  std::condition_variable_any stop_cv_;
  bool stop_ GUARDED_BY(stop_mu_) = false;
  bool offload_ready_ GUARDED_BY(stop_mu_) = false;
  // Keys to promote, for the offload thread (under stop_mu_ so that queuing
  // one wakes the thread's idle wait).
  std::deque<PromoteRequest> promote_queue_ GUARDED_BY(stop_mu_);
};

}  // namespace shelfmark
