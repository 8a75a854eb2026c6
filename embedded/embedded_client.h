// EmbeddedClient: a Client that also contributes DRAM to the cluster, as
// Mooncake's MooncakeDistributedStore does after setup(): the process hosts
// a segment of its own memory, mounted at the master under the client's own
// id, and reads or writes replicas inside it with memcpy.
//
//   Create: Client::Create (the engines, the staging buffer); then, when
//           segment_size > 0, a Node (node/node.h, no SSD store) whose
//           segment is registered with the Client's engine for the chosen
//           protocol (Client::engine), so other clients reach it at that
//           engine's endpoint; the segment is attached to the Client
//           (Client::AttachLocalSegment: same-process replicas are copied,
//           not transferred) and Node::Run mounts, pings and remounts it on
//           a thread of its own. Create returns once the first mount
//           succeeded, or fails with RPC_FAIL after mount_timeout_ms.
//   Close:  detaches the segment, stops the node (which unmounts: the master
//           drops every replica in the segment, and objects left without
//           one), joins its thread, then destroys the node and the Client.
//           The destructor closes. After Close, client() is nullptr.
//
// The node's memory stays mapped (to fresh pages) until the process exits
// (node/node.h, ~Node), so a transfer in flight at Close cannot fault.
//
// Thread safety: client() may be used from any thread until Close; Close
// (or the destructor) runs once, when no call on client() is in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "client/client.h"
#include "common/result.h"
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
  uint64_t segment_size = 0;            // global_segment_size; 0: no segment
  std::string segment_name;             // "": "node-<client id>"
  uint64_t staging_bytes = 16ull << 20;  // local_buffer_size; 0: no staging (client.h)
  int64_t rpc_timeout_ms = 10'000;
  int64_t transfer_timeout_ms = 5'000;
  int64_t ping_interval_ms = 3'000;   // keep well under the master's client TTL
  int64_t mount_timeout_ms = 10'000;  // Create's wait for the first mount
  UUID client_id;                     // nil: a fresh one
  LocationCacheOptions location_cache;
  TransportFactory rdma_factory;  // the binary's rdma plugin (client/data_client.h)
  bool rdma_device_present = false;
  EngineCountersReader engine_counters;
};

class EmbeddedClient {
 public:
  // The Client's codes (INVALID_PARAMS for bad options, an engine's code);
  // INVALID_PARAMS for a protocol other than ucx/rdma/auto with a segment;
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
  // See above; the unmount's code (OK without a segment, or when already
  // closed).
  ErrorCode Close();

 private:
  explicit EmbeddedClient(std::unique_ptr<Client> client);
  // Creates, attaches and runs the node; waits for its first mount.
  ErrorCode HostSegment(const EmbeddedOptions& options);

  std::unique_ptr<Client> client_;
  std::unique_ptr<Node> node_;
  std::thread node_thread_;
  ErrorCode unmounted_ = ErrorCode::OK;  // Run()'s answer
};

}  // namespace shelfmark
