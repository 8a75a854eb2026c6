// UcxEngine: the "ucx" protocol. Reads and writes of MEMORY replicas for
// hosts without an RDMA device, as checked active messages on the
// authenticated session (ucx_memory_access.h: no UCX RMA, which UCX over tcp
// performs for any peer at any address), and the carrier of the UCX active
// messages (ucx_am.h) that serve LOCAL_DISK reads.
//
// Setup (context, worker, progress thread, address server, connections) lives in
// UcxContext (ucx_context.h); this file is the TransportEngine and its hot
// path. One engine = one ucp context (AM + WAKEUP) and one worker.
//
// Node side (listen_ip set): a TCP address server on listen_ip:listen_port
// hands out the worker's address (ucx_address_server.h; port 0 picks a free
// one; endpoint() reports "ip:port" with the actual port). There is no UCX
// listener: UCX 1.13's sockaddr listener aborted on garbage.
// RegisterMemory(remote_access=true) mints the region's key (random, per
// registration: its incarnation); MemoryRegion.rkey carries it. The engine
// serves reads and writes of its live remote regions to authenticated
// sessions only, inside their bounds (else refused and counted:
// transfer_counters().refused_*); UnregisterMemory refuses the region from
// then on and waits for copies in flight.
//
// Client side: the first Transfer() to an endpoint connects (fetches the
// node's worker address and a challenge from the endpoint, ucp_ep_create
// from it), sends a hello {client id, own worker address, a proof of the
// cluster token over the node's and its own nonce} and waits up to
// connect_timeout_ms for the node's verdict and the node's own proof; the
// connection is cached per endpoint.
//
// Transfer(): descriptor bounds and the local buffer (inside a region this
// engine registered) are checked before anything is sent (INVALID_PARAMS);
// same-host reads and writes are copies from and into the node's mapped
// segment (local_share.h; SHELFMARK_UCX_SAME_HOST=0 turns them off);
// the others are one request per op, all in flight together, answered once
// the bytes are in the local buffer (read) or in the owner's segment
// (write). On timeout or error the result is TRANSFER_FAIL naming the cause
// (a refusal by the owner: "no live segment" for a descriptor of another
// process or an unregistered region, "outside its segment"); no local
// buffer is touched after Transfer() returns. A connection whose peer failed
// (node restarted, killed) is marked broken by UCX's error callback; the next
// Transfer() reconnects.
//
// The cluster token is proven both ways in the hello (ucx_wire.h): a node
// answers a wrong proof or a replayed hello with a rejection (Transfer:
// TRANSFER_FAIL "... rejected the cluster token"; UcxAm::Call:
// ILLEGAL_CLIENT) and serves requests only with the session it issued on
// acceptance; a client never sends object bytes to a node that did not prove
// the token (Transfer: TRANSFER_FAIL "... did not prove the cluster token";
// UcxAm::Call: UNAUTHENTICATED).
//
// Progress: a dedicated thread per engine sleeps on the worker's event fd and
// progresses the worker whenever it has work, so RMA emulated over tcp, which
// needs the owner's CPU, completes while the owner's own threads do other
// things. Callers of Transfer()/CallInto() also progress the worker while
// they wait (lower latency), yielding the CPU between idle polls (a peer on
// the same host may need this CPU to answer; see UcxContext::WaitLocked),
// then sleep until the progress thread reports progress. Every worker call is
// made under one mutex (UCS_THREAD_MODE_SERIALIZED).
//
// Transports: UCX's defaults (UCX_TLS unset). Endpoints use the
// peer-failure error mode, under which UCX 1.13 picks tcp even between two
// processes of one host (docs/transport.md).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"
#include "transport/transport.h"
#include "transport/ucx_am.h"

namespace shelfmark {

class UcxContext;
struct UcxRegions;

// Same-host copies served from a node's mapped segment (local_share.h).
struct LocalCopyCounters {
  std::atomic<uint64_t> reads{0}, bytes_read{0}, writes{0}, bytes_written{0};
};

class UcxEngine final : public TransportEngine {
 public:
  static constexpr std::string_view kProtocol = "ucx";

  // Creates the context, the worker, its progress thread and (listen_ip set)
  // the address server. A bad listen address or a port in use -> INVALID_PARAMS;
  // UCX failing to start -> TRANSFER_FAIL.
  static Result<std::unique_ptr<UcxEngine>> Create(const TransportOptions& options);
  ~UcxEngine() override;
  UcxEngine(const UcxEngine&) = delete;
  UcxEngine& operator=(const UcxEngine&) = delete;

  std::string_view protocol() const override { return kProtocol; }
  std::string endpoint() const override;
  Result<MemoryRegion> RegisterMemory(void* addr, uint64_t size, bool remote_access) override;
  void UnregisterMemory(const MemoryRegion& region) override;
  ErrorCode ShareLocally(const MemoryRegion& region, int memfd) override;
  // reads_posted / writes_posted (UCX RMA ops), local_reads,
  // local_bytes_read, local_writes, local_bytes_written (same-host copies)
  // and local_maps;
  // node side: hellos accepted, rejected and stale_challenges.
  std::optional<EngineCounters> transfer_counters() const override;
  TransferStatus Transfer(TransferKind kind, std::span<const TransferOp> ops,
                          int64_t timeout_ms) override;

  AmTransport* messages() override;
  // Active messages on this engine's worker and connections.
  UcxAm& am();
  UcxContext& context();

 private:
  explicit UcxEngine(std::unique_ptr<UcxContext> context);

  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxAm> am_;
  std::unique_ptr<UcxRegions> regions_;
  std::atomic<uint64_t> reads_posted_{0}, writes_posted_{0};
  LocalCopyCounters local_;
};

// The raw-UCX baseline for perf: one read request of `length` bytes from
// descriptor offset `remote_offset` into `local` (inside a region registered
// with `engine`), on the engine's own connection and worker, with none of
// Transfer()'s checks, same-host copies or batching. Same results as
// Transfer().
TransferStatus RawUcxGet(UcxEngine& engine, const MemoryDescriptor& remote,
                         uint64_t remote_offset, void* local, uint64_t length,
                         int64_t timeout_ms);

}  // namespace shelfmark
