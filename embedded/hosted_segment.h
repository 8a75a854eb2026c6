// HostedSegment: one DRAM segment of this process served to the cluster
// under a Client's identity. A Node (node/node.h; with the SSD store its
// options name, embedded/ssd_tier.h) maps the memory and registers it with
// one of the Client's engines, so other clients reach it at that engine's
// endpoint; the segment is attached to the Client
// (Client::AttachLocalSegment: replicas in it are copied, not transferred);
// Node::Run mounts, pings and remounts it on a thread of its own.
//
// Several segments of one Client share its engine, hence its endpoint, and
// its client id (the segments' owner at the master): the master's supersede
// rule drops only segments of *another* owner at a mount's endpoint
// (docs/directory.md, MountSegment), so siblings never drop each other, and
// each has its own segment id and memory.
//
//   Start: creates the node, attaches it, starts its thread and waits for
//          the first mount (RPC_FAIL after mount_timeout_ms).
//   Stop:  detaches, stops the node (which unmounts: the master drops every
//          replica in the segment, and objects left without one), joins its
//          thread and destroys the node (unregistering from the engine, whose
//          memory stays mapped to fresh pages: ~Node). Returns the unmount's
//          code; idempotent. The destructor stops.
//
// Thread safety: segment(), counters() and disk_stats() from any thread
// until Stop; Stop once, when no other call on this object is in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>

#include "client/client.h"
#include "common/result.h"
#include "node/node.h"

namespace shelfmark {

class HostedSegment {
 public:
  // `node.client_id` should be the Client's id (the owner of its other
  // segments); `node.on_mounted` is replaced. `engine` and `client` must
  // outlive the segment. Node::Create's and AttachLocalSegment's codes;
  // RPC_FAIL when the master did not accept the mount in time.
  static Result<std::unique_ptr<HostedSegment>> Start(NodeOptions node, TransportEngine* engine,
                                                      Client* client, int64_t mount_timeout_ms);
  ~HostedSegment();
  HostedSegment(const HostedSegment&) = delete;
  HostedSegment& operator=(const HostedSegment&) = delete;

  ErrorCode Stop();
  // Node::Remount (a sibling saw NEED_REMOUNT); any thread until Stop.
  void Remount();
  const Segment& segment() const { return segment_; }
  NodeCounters counters() const;
  // The node's LOCAL_DISK service's counters (zeros without an SSD store).
  LocalDiskStats disk_stats() const;

 private:
  explicit HostedSegment(Client* client) : client_(client) {}

  Client* const client_;
  Segment segment_;
  std::unique_ptr<Node> node_;
  bool attached_ = false;
  std::thread thread_;
  ErrorCode unmounted_ = ErrorCode::OK;  // Run()'s answer
};

}  // namespace shelfmark
