// TransportEngine: one-sided reads and writes of MEMORY replicas. A node
// registers its DRAM segment for remote access and publishes the region's
// `rkey` and its engine's `endpoint()` in the Segment it mounts; a client
// registers its own buffers (local access only) and moves bytes between them
// and a MemoryDescriptor with Transfer() (one-sided on rdma; on ucx the
// owner's CPU checks and serves each request).
//
// Engines: "rdma" (libibverbs + librdmacm, verbs_engine.h), "ucx" (UCX RMA,
// ucx_engine.h) and "loopback" (in-process memcpy with the same checks, for
// unit tests of the layers above). TransportSet picks one per descriptor.
//
// Contracts:
//  - Transfer() ops all have one kind; each op's remote range
//    [remote_offset, remote_offset + length) lies inside the descriptor's
//    [0, size) and `local` lies inside a region this engine registered,
//    otherwise INVALID_PARAMS before anything is posted; the owner's side
//    enforces its registration too, "rdma" by the NIC's rkey bounds,
//    "loopback" by its registry, "ucx" by its own checks of every request
//    (ucx_memory_access.h), so a forged or stale descriptor fails with
//    TRANSFER_FAIL and never touches memory outside a live segment;
//  - Transfer() returns within `timeout_ms` (plus connection setup, itself
//    bounded): OK when every op completed, else TRANSFER_FAIL with a message
//    naming the cause (work-completion status, UCX status, peer gone); after
//    a failure the next Transfer() to the same peer reconnects;
//  - connections are made on first use, cached per peer endpoint and carry
//    the client id and the cluster token; a node rejects a wrong token;
//  - the hot path (post and poll) is separate from setup (devices, memory
//    registration, connections).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/uuid.h"
#include "common/types.h"

namespace shelfmark {

class AmTransport;

struct MemoryRegion {
  void* addr = nullptr;
  uint64_t size = 0;
  std::string rkey;     // what peers need (remote regions only; opaque bytes)
  uint64_t handle = 0;  // engine-private
};

enum class TransferKind : uint8_t { READ, WRITE };

struct TransferOp {
  const MemoryDescriptor* remote = nullptr;
  uint64_t remote_offset = 0;  // from remote->buffer_address
  void* local = nullptr;       // inside a region registered with the engine
  uint64_t length = 0;
  // A READ or WRITE that a memcpy serves (an attached own segment, a
  // segment mapped on this host: transport/local_share.h, CopyLocal) sets
  // *checksum to Checksum64 of the bytes copied, computed in the same pass
  // (common/checksum.h); bytes moved otherwise leave it. nullptr: none wanted.
  std::optional<uint64_t>* checksum = nullptr;
};

struct TransferStatus {
  ErrorCode code = ErrorCode::OK;
  std::string message;  // empty when OK
  bool ok() const { return code == ErrorCode::OK; }
};

struct TransportOptions {
  UUID client_id;             // sent with every connection
  // Proven by both sides of every connection, never sent (docs/transport.md);
  // "" proves "".
  std::string cluster_token;
  std::string listen_ip;      // node side: address to listen on ("" : no listener)
  uint16_t listen_port = 0;   // 0: any free port (endpoint() tells which)
  std::string device;         // rdma: device name ("" : first device)
  int64_t connect_timeout_ms = 2000;
};

// An engine's transfer counters since it opened (engines that keep them:
// verbs; see VerbsEngine::counters and Client::TransferCounters).
struct EngineCounters {
  uint64_t reads_posted = 0;   // READ work requests posted
  uint64_t writes_posted = 0;  // WRITE work requests posted
  uint64_t bytes_read = 0;     // by completed READs
  uint64_t bytes_written = 0;  // by completed WRITEs
  uint64_t connects = 0;       // client connections made (first connects and reconnects)
  uint64_t failed_transfers = 0;
  uint64_t accepted = 0;  // listening side: connections accepted
  uint64_t rejected = 0;  // listening side: connect requests rejected (e.g. a wrong token)
  // Listening side: of the rejected, handshakes naming a challenge that was
  // not outstanding (a replay, an expired or never issued one).
  uint64_t stale_challenges = 0;
  // Same-host reads and writes served by memcpy from and into a node's
  // segment mapped into this process (ucx: transport/local_share.h): no
  // transport, no work by the node.
  uint64_t local_reads = 0;
  uint64_t local_bytes_read = 0;
  uint64_t local_writes = 0;
  uint64_t local_bytes_written = 0;
  uint64_t local_maps = 0;  // node segments mapped for such copies
  // Listening side (ucx: ucx_memory_access.h): accesses to this engine's
  // remote regions refused before any byte was touched, by reason: no live
  // region with that rkey (a previous process's or an unregistered
  // region's), outside the region, or not an access at all.
  uint64_t refused_stale = 0;
  uint64_t refused_out_of_range = 0;
  uint64_t refused_malformed = 0;
  // Listening side: messages dropped unserved (no authenticated session,
  // malformed, unmatched).
  uint64_t dropped_messages = 0;
};

class TransportEngine;

// Reads an engine's counters; nullopt when it keeps none (the verbs engine
// keeps them: transport/rdma_plugin.h supplies the reader to binaries).
using EngineCountersReader = std::function<std::optional<EngineCounters>(const TransportEngine&)>;

class TransportEngine {
 public:
  virtual ~TransportEngine() = default;
  virtual std::string_view protocol() const = 0;
  // "ip:port" that peers connect to ("" when not listening).
  virtual std::string endpoint() const = 0;
  // Registers [addr, addr + size). remote_access: peers may read and write it.
  virtual Result<MemoryRegion> RegisterMemory(void* addr, uint64_t size, bool remote_access) = 0;
  virtual void UnregisterMemory(const MemoryRegion& region) = 0;
  // Offers a remote_access region, whose memory is `memfd` mapped at
  // region.addr from offset 0, to clients on this host, which then read and
  // write it without the transport (ucx: local_share.h). Engines that cannot share
  // ignore it and answer OK.
  virtual ErrorCode ShareLocally(const MemoryRegion& /*region*/, int /*memfd*/) {
    return ErrorCode::OK;
  }
  // This engine's own counters; nullopt when it keeps none here (verbs'
  // come through an EngineCountersReader).
  virtual std::optional<EngineCounters> transfer_counters() const { return std::nullopt; }
  virtual TransferStatus Transfer(TransferKind kind, std::span<const TransferOp> ops,
                                  int64_t timeout_ms) = 0;
  // The request/response messages this engine carries on its own endpoint
  // and connections (am_transport.h: LOCAL_DISK reads), nullptr when it
  // carries none (rdma). Owned by the engine.
  virtual AmTransport* messages() { return nullptr; }
};

}  // namespace shelfmark
