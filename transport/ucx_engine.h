// UcxEngine: the "ucx" protocol. One-sided reads and writes of MEMORY
// replicas with UCX RMA (ucp_get_nbx / ucp_put_nbx against the owner's packed
// rkey), for hosts without an RDMA device, and the carrier of the UCX active
// messages (ucx_am.h) that serve LOCAL_DISK reads.
//
// Setup (context, worker, progress thread, address server, connections) lives in
// UcxContext (ucx_context.h); this file is the TransportEngine and its hot
// path. One engine = one ucp context (RMA + AM + WAKEUP) and one worker.
//
// Node side (listen_ip set): a TCP address server on listen_ip:listen_port
// hands out the worker's address (ucx_address_server.h; port 0 picks a free
// one; endpoint() reports "ip:port" with the actual port). There is no UCX
// listener: UCX 1.13's sockaddr listener aborted on garbage.
// RegisterMemory(remote_access=true) maps the range (ucp_mem_map) and packs
// its rkey (ucp_rkey_pack): MemoryRegion.rkey is the packed rkey's bytes.
//
// Client side: the first Transfer() to an endpoint connects (fetches the
// node's worker address and a challenge from the endpoint, ucp_ep_create
// from it), sends a hello {client id, own worker address, a proof of the
// cluster token over the node's and its own nonce} and waits up to
// connect_timeout_ms for the node's verdict and the node's own proof; the
// connection is cached per endpoint. Unpacked rkeys are cached per
// (connection, rkey bytes).
//
// Transfer(): descriptor bounds and the local buffer (inside a region this
// engine registered) are checked before anything is posted (INVALID_PARAMS);
// then one ucp_get_nbx / ucp_put_nbx per op (writes are followed by an
// endpoint flush, so OK means the bytes are at the owner) and a wait for all
// of them until the deadline. On timeout or error the connection is closed
// (force), every posted op is completed or cancelled before Transfer()
// returns (the local buffers are not touched afterwards), and the result is
// TRANSFER_FAIL with the UCX status string. A connection whose peer failed
// (node restarted, killed) is marked broken by UCX's error callback; the next
// Transfer() reconnects.
//
// Owner-side checks and their limits (measured on UCX 1.13.1, Debian 12,
// default transports and UCX_TLS=tcp):
//  - UCX does NOT check an access against the rkey's registered range: a
//    descriptor forged with a valid rkey and any other address of the
//    owner reads (or writes) that address, and an unmapped address would
//    fault the owner's process (software-emulated RMA runs in the owner).
//    So, unlike verbs and loopback, there is no owner-side bounds check
//    for "ucx": the rkey is the secret. Nodes publish rkeys only through
//    the master, which hands descriptors only to clients that passed its
//    checks. Bytes that are not a packed rkey (too short, truncated, no
//    memory domain) are refused before ucp_ep_rkey_unpack() (which takes
//    no length) and yield TRANSFER_FAIL; well-formed garbage may be
//    accepted by UCX.
//  - The cluster token is proven both ways in the hello (ucx_wire.h): a
//    node answers a wrong proof or a replayed hello with a rejection
//    (Transfer: TRANSFER_FAIL "... rejected the cluster token"; UcxAm::Call:
//    ILLEGAL_CLIENT) and serves active messages only with the session it
//    issued on acceptance; a client never posts to a node that did not
//    prove the token (Transfer: TRANSFER_FAIL "... did not prove the
//    cluster token"; UcxAm::Call: UNAUTHENTICATED). RMA cannot be refused
//    per connection once a client holds a valid rkey (see above).
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
  // local_bytes_read (same-host reads served by memcpy) and local_maps;
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
  std::atomic<uint64_t> local_reads_{0}, local_bytes_read_{0};
};

// The raw-UCX baseline for perf: one ucp_get_nbx of `length` bytes from
// descriptor offset `remote_offset` into `local` (inside a region registered
// with `engine`), on the engine's own connection, worker and rkey cache, with
// none of Transfer()'s checks or batching. Same results as Transfer().
TransferStatus RawUcxGet(UcxEngine& engine, const MemoryDescriptor& remote,
                         uint64_t remote_offset, void* local, uint64_t length,
                         int64_t timeout_ms);

}  // namespace shelfmark
