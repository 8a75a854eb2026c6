// RpcServer: serves the Directory over Cap'n Proto RPC (schemas/master.capnp,
// interface MasterService).
//
// `threads` event-loop threads each own a kj::AsyncIoContext and a dup of one
// listening socket (an idle loop accepts the next connection; a second
// server on the same port fails to bind). Every thread serves capnp
// two-party connections with its own service object from
// MasterServiceFactory (master/master_service.h: request handling, bad-input
// answers and per-method metrics). Garbage on the wire drops only that
// connection; a client disconnecting mid-call affects no other connection.
// Every connection's stream is a GuardedStream (master/guarded_stream.h):
// the limits of RpcServerOptions hold whatever clients send, and accept()
// failing (out of descriptors) backs off and goes on.
//
// Thread safety: Start and Stop are called from one owner thread. The
// Directory and the MetricsRegistry must outlive the server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "auth/handshake_limiter.h"
#include "auth/token_table.h"
#include "common/result.h"

namespace shelfmark {

class Directory;
class LeadershipGate;
class MetricsRegistry;
class ReplicationLeader;

struct RpcServerOptions {
  std::string bind_address = "0.0.0.0";  // IPv4/IPv6 literal (or a host name)
  uint16_t port = 50051;                  // 0: any free port (see Start)
  int threads = 2;                        // event-loop threads (>= 1)
  size_t max_batch = 65536;               // longer batches answer INVALID_PARAMS
  // Limits on hostile or broken clients (docs/limits.md):
  // open connections (0: RLIMIT_NOFILE less a reserve); at the limit a new
  // connection replaces the idlest one of the loop that accepts it;
  uint64_t max_connections = 0;
  // one request's bytes, and all requests being received at once (server-wide);
  // a request over either ends its connection;
  uint64_t max_request_bytes = 64ull << 20;
  uint64_t max_buffered_request_bytes = 256ull << 20;
  // a request must arrive whole within this long of its first byte;
  int64_t request_timeout_ms = 30'000;
  // a connection with no byte in or out this long is closed (0: never).
  int64_t idle_timeout_ms = 0;
  // Takes a hot standby's connection (replication/replication_wire.h: one
  // that starts with the replication tag): a descriptor of its own (a
  // dup, non-blocking), the bytes already read, and where the outcome of
  // its token handshake goes (ReplicationLeader::Adopt's handshake_done:
  // counted with the port's other handshakes, a failure charged to the
  // peer's address). With tokens, a peer whose failures are spent
  // (auth::HandshakeLimiter) is closed first, counted rate_limited. Unset:
  // such connections are closed. Called on a loop thread; must not block.
  std::function<void(int fd, std::string first_bytes,
                     std::function<void(bool proven)> handshake_done)>
      on_standby;
  // With hot standbys: mutations are answered once replicated
  // (MasterServiceFactory::SetReplication). Null: no wait.
  ReplicationLeader* replication = nullptr;
  // Who may call (docs/security.md); empty: everyone, no handshake.
  auth::TokenTable tokens;
  auth::HandshakeLimits handshake_limits;
  // Master HA (master/leadership_gate.h): who may be answered now; null:
  // everyone (no HA). Must outlive the server.
  LeadershipGate* gate = nullptr;
};

// What the limits did, since Start (counters), and their state now.
struct RpcServerStats {
  uint64_t accept_errors = 0;         // accept() failures (out of descriptors, ...)
  uint64_t rejected_connections = 0;  // closed at once: at max_connections, nothing to evict
  uint64_t evicted_connections = 0;   // the idlest, closed for a new one
  uint64_t slow_requests = 0;         // connections closed at request_timeout_ms
  uint64_t idle_closed = 0;           // connections closed at idle_timeout_ms
  uint64_t requests_too_large = 0;    // over max_request_bytes
  uint64_t requests_over_budget = 0;  // no room in max_buffered_request_bytes
  uint64_t buffered_request_bytes = 0;  // now
  uint64_t max_connections = 0;         // in force (derived when the option is 0)
};

class RpcServer;

// Registers the server's connection gauges and the counters of its limits
// (docs/metrics.md: shelfmark_master_rpc_open_connections, ..._max_connections,
// ..._buffered_request_bytes, ..._accept_errors_total,
// ..._{rejected,evicted,idle_closed}_connections_total,
// ..._slow_requests_total, ..._refused_requests_total{reason}). `server`
// must outlive the registry's use.
void AddRpcServerMetrics(MetricsRegistry& registry, const RpcServer& server);

class RpcServer {
 public:
  RpcServer(Directory& directory, MetricsRegistry* metrics /*nullable*/, RpcServerOptions options);
  ~RpcServer();  // Stop()s
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Binds and starts serving; returns the bound port (the chosen one when
  // options.port is 0). INVALID_PARAMS when the address cannot be parsed or
  // bound (or the options are bad); UNAVAILABLE_IN_CURRENT_STATUS when
  // already started. May be called again after Stop().
  Result<uint16_t> Start();
  // Stops accepting, drops every connection and joins the threads.
  // Idempotent; a no-op before Start().
  void Stop();
  // Open connections per event-loop thread (empty when stopped). Thread-safe.
  std::vector<int> OpenConnections() const;
  // Thread-safe.
  RpcServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shelfmark
