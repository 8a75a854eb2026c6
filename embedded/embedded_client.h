// EmbeddedClient: a Client that also contributes DRAM to the cluster, as
// Mooncake's MooncakeDistributedStore does after setup(): the process hosts
// a segment of its own memory, mounted at the master under the client's own
// id, and reads or writes replicas inside it with memcpy.
//
//   Create: Client::Create (the engines, the staging buffer); then, when
//           segment_size > 0, a HostedSegment (embedded/hosted_segment.h:
//           a Node on the Client's engine for the chosen protocol, attached
//           to the Client, mounted, pinged and remounted on a thread of its
//           own). Create returns once the first mount succeeded, or fails
//           with RPC_FAIL after mount_timeout_ms.
//   MountSegment / UnmountSegments: more segments of this process, each a
//           HostedSegment of its own on the same engine and client id
//           (Mooncake's allocate_and_mount_segment /
//           unmount_and_free_segment); the engines then listen even when
//           segment_size is 0 (`listen`). An added segment is not offered
//           to same-host clients' mappings (NodeOptions::share_locally: an
//           engine shares one segment, and a share would keep the memory
//           after the unmount): they read it over the transport. All
//           segments share one client id, so a NEED_REMOUNT one of them
//           sees makes every one remount (NodeOptions::on_need_remount).
//   SSD tier (enable_ssd_offload, with a hosted segment): an SsdTier
//           (embedded/ssd_tier.h) opened before the hosted segment's node,
//           which then offloads into it, serves LOCAL_DISK reads from it on
//           the client's UCX engine and, after each (re)mount, re-reports
//           what it holds (an earlier run's objects too), as shelfmark-node
//           does with its disk store (node/node.h). The master copies an
//           object to the tier when it runs with --enable_offload, and then
//           evicts its DRAM replica only once the copy exists.
//   Close:  stops every segment (each unmounts: the master drops every
//           replica in it, and objects left without one), closes the SSD
//           tier (its objects stay on disk for the next run), then destroys
//           the Client: node -> SSD store -> client. The destructor closes.
//           After Close, client() is nullptr.
//
// The segments' memory stays mapped (to fresh pages) until the process exits
// (node/node.h, ~Node), so a transfer in flight at Close cannot fault.
//
// Thread safety: client(), MountSegment and UnmountSegments may be used from
// any thread until Close; Close (or the destructor) runs once, when no call
// on client() is in flight.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/client.h"
#include "common/mutex.h"
#include "common/reply_poll.h"
#include "common/result.h"
#include "embedded/hosted_segment.h"
#include "embedded/ssd_tier.h"
#include "node/node.h"

namespace shelfmark {

// Mooncake's setup() arguments, by their Shelfmark names.
struct EmbeddedOptions {
  std::string master = "127.0.0.1:50051";  // master_server_addr (host:port or etcd://...)
  // With an etcd:// master: the cluster whose leader to follow ("" :
  // $SHELFMARK_CLUSTER_ID, $MC_STORE_CLUSTER_ID, then "shelfmark";
  // MasterClientOptions::cluster_id).
  std::string cluster_id;
  bool follow_leader_hints = false;  // ClientOptions::follow_leader_hints
  // Proven to the master by the client's calls; empty: cluster_token.
  std::string master_token;
  // Proven by the node's mount and pings (a token with the node role);
  // empty: master_token (then cluster_token).
  std::string node_token;
  std::string cluster_token;     // transport connections (docs/transport.md)
  std::string protocol = "auto";  // "ucx", "rdma", "auto": rdma when rdma_factory is set and a device is present
  std::string device;            // rdma device ("": the first one)
  // Where other clients reach this process's segment (Mooncake's
  // local_hostname); the engines listen there when segment_size > 0.
  std::string listen_ip = "127.0.0.1";
  // The engines listen at listen_ip even with segment_size 0, so that
  // MountSegment can host segments later.
  bool listen = false;
  uint64_t segment_size = 0;            // global_segment_size; 0: no segment
  std::string segment_name;             // "": "node-<client id>"
  uint64_t staging_bytes = 16ull << 20;  // local_buffer_size; 0: no staging (client.h)
  bool stream_local_reads = false;       // ClientOptions::stream_local_reads
  int64_t reply_poll_us = DefaultReplyPollMicros();  // ClientOptions::reply_poll_us
  int64_t rpc_timeout_ms = 10'000;
  int64_t transfer_timeout_ms = 5'000;
  int64_t ping_interval_ms = 3'000;   // keep well under the master's client TTL
  int64_t mount_timeout_ms = 10'000;  // Create's wait for the first mount
  UUID client_id;                     // nil: a fresh one
  LocationCacheOptions location_cache;
  // The hosted segment's SSD tier (Mooncake's enable_ssd_offload and
  // ssd_offload_path; "" : $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH); its other
  // settings are the MOONCAKE_OFFLOAD_* variables (embedded/ssd_tier.h).
  bool enable_ssd_offload = false;
  std::string ssd_offload_path;
  TransportFactory rdma_factory;  // the binary's rdma plugin (client/data_client.h)
  bool rdma_device_present = false;
  EngineCountersReader engine_counters;
};

class EmbeddedClient {
 public:
  // The Client's codes (INVALID_PARAMS for bad options, an engine's code);
  // INVALID_PARAMS for a protocol other than ucx/rdma/auto with a segment;
  // with enable_ssd_offload, INVALID_PARAMS without a segment, for bad SSD
  // settings or without a UCX engine (protocol rdma: LOCAL_DISK reads travel
  // on UCX, which the verbs engine does not carry), else the store's Open
  // codes (each failure of the tier is also printed on stderr);
  // Node::Create's codes; RPC_FAIL when the master did not accept the
  // segment within mount_timeout_ms.
  static Result<std::unique_ptr<EmbeddedClient>> Create(EmbeddedOptions options);
  ~EmbeddedClient();
  EmbeddedClient(const EmbeddedClient&) = delete;
  EmbeddedClient& operator=(const EmbeddedClient&) = delete;

  // The Client (nullptr after Close).
  Client* client() const { return client_.get(); }
  // The hosted segment as mounted (nullopt without one, or after Close).
  std::optional<Segment> segment() const;
  // The node's counters (all zero without a segment).
  NodeCounters node_counters() const;
  // The SSD tier's contents and the LOCAL_DISK reads it served; nullopt
  // without one, or after Close.
  std::optional<SsdTierStats> disk_stats() const;

  // One more segment of `size` bytes, on the engine of `protocol` (ucx,
  // rdma, auto), with this id (nil: a fresh one) and name ("" : its id),
  // mounted under the client's id; the segment as mounted. INVALID_PARAMS
  // for size 0, an id in use, or an engine this client lacks or that does
  // not listen; HostedSegment::Start's codes.
  Result<Segment> MountSegment(uint64_t size, std::string_view protocol, const UUID& id = {},
                               std::string name = "");
  // The same over `size` bytes of the open file `fd` at `offset` (a
  // multiple of the page size), mapped shared: the caller's memory
  // (Mooncake's mount_segment; NodeOptions::memory_fd). The caller keeps the
  // file at least offset + size long until the segment is unmounted and may
  // close `fd` when this returns. INVALID_PARAMS too when it cannot be mapped.
  Result<Segment> MountFileSegment(int fd, uint64_t offset, uint64_t size,
                                   std::string_view protocol);
  // Stops and unmounts the named segments added by MountFileSegment
  // (`file_backed`) or by MountSegment (not), all or none: INVALID_PARAMS
  // (nothing done) when one is not such a segment of this client, or is
  // named twice; else the first unmount's code that is not OK (the segments
  // are gone either way).
  // grace_ms > 0 (Mooncake's graceful unmount): the segments leave
  // added_segments() at once and the master drains them (no new
  // allocations, their objects still read); this returns then, and the
  // client's one grace thread unmounts them after grace_ms (Close: at once).
  // A segment the master would not drain is unmounted at once, and that
  // code returned.
  ErrorCode UnmountSegments(const std::vector<UUID>& ids, bool file_backed = false,
                            int64_t grace_ms = 0);
  // Whether a graceful unmount's segments are still mounted (draining).
  bool draining() const;
  // Threads this client holds for graceful unmounts: 0 before the first,
  // then 1 until Close (one thread serves them all).
  size_t grace_threads() const;
  // The segments added and not yet unmounted.
  std::vector<Segment> added_segments() const;

  // See above; the hosted segment's unmount's code (OK without a segment, or
  // when already closed).
  ErrorCode Close();

 private:
  EmbeddedClient(std::unique_ptr<Client> client, EmbeddedOptions options);
  // Node options of a segment of this client.
  NodeOptions SegmentOptions(uint64_t size) const;
  // Gives `n` a segment id (a fresh one when nil) and wires its
  // on_need_remount to RemountSiblings.
  void JoinSiblings(NodeOptions& n);
  // Remount() of every segment of this client but `except` (its node saw
  // NEED_REMOUNT: the master forgot the client id, so all its segments).
  void RemountSiblings(const UUID& except);
  Result<TransportEngine*> Engine(std::string_view protocol) const;
  // MountSegment's and MountFileSegment's common part: `n` with its id and
  // name chosen.
  Result<Segment> Add(NodeOptions n, std::string_view protocol, bool file_backed);
  // Opens the SSD tier (enable_ssd_offload) and wires it into `n`.
  ErrorCode OpenSsdTier(NodeOptions& n);

  struct Added {
    std::unique_ptr<HostedSegment> segment;  // null while it starts
    bool file_backed = false;
  };

  // Takes the named added segments out of added_, all or none (see
  // UnmountSegments): INVALID_PARAMS.
  Result<std::vector<std::unique_ptr<HostedSegment>>> TakeAdded(const std::vector<UUID>& ids,
                                                                bool file_backed);
  // Drains `segments` at the master and queues them on grace_queue_ to
  // unmount after grace_ms (starting grace_thread_ with the first); those
  // the master refused, now.
  ErrorCode UnmountGracefully(std::vector<std::unique_ptr<HostedSegment>> segments,
                              int64_t grace_ms);
  // grace_thread_: unmounts each queued graceful unmount at its deadline,
  // every one at once after closing_; returns once closing_ and none is left.
  void RunGraceTimer();
  // Stops every graceful unmount's wait: their segments unmount now.
  void EndGracePeriods();

  const EmbeddedOptions options_;
  std::unique_ptr<Client> client_;
  mutable Mutex added_mu_;
  std::unique_ptr<SsdTier> ssd_ GUARDED_BY(added_mu_);  // before hosted_: outlives its node
  std::unique_ptr<HostedSegment> hosted_ GUARDED_BY(added_mu_);
  std::map<UUID, Added> added_ GUARDED_BY(added_mu_);
  // Graceful unmounts: their segments by deadline, waiting for grace_thread_
  // (woken on grace_cv_ by a new one and by closing_) to unmount them.
  using GraceDeadline = std::chrono::steady_clock::time_point;
  mutable Mutex grace_mu_;
  std::condition_variable_any grace_cv_;
  bool closing_ GUARDED_BY(grace_mu_) = false;
  size_t draining_ GUARDED_BY(grace_mu_) = 0;  // graceful unmounts not yet done
  std::multimap<GraceDeadline, std::vector<std::unique_ptr<HostedSegment>>> grace_queue_
      GUARDED_BY(grace_mu_);
  std::thread grace_thread_ GUARDED_BY(grace_mu_);
};

}  // namespace shelfmark
