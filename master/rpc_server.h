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
//
// Thread safety: Start and Stop are called from one owner thread. The
// Directory and the MetricsRegistry must outlive the server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace shelfmark {

class Directory;
class MetricsRegistry;

struct RpcServerOptions {
  std::string bind_address = "0.0.0.0";  // IPv4/IPv6 literal (or a host name)
  uint16_t port = 50051;                  // 0: any free port (see Start)
  int threads = 2;                        // event-loop threads (>= 1)
  size_t max_batch = 65536;               // longer batches answer INVALID_PARAMS
};

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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shelfmark
