// StoreService: the host's store service (Mooncake's standalone store, its
// "real client"): serves the engine processes of its host, light clients
// with no transport of their own, over a unix socket
// (storeservice/service_wire.h), on the Client of the process that hosts
// the DRAM segment (embedded/embedded_client.h), so a replica in that
// segment is written and read with memcpy and a remote one with the
// Client's one-sided transfers.
//
// Each connection: the mutual token handshake (service_wire.h), then
// requests in turn, served on a thread of its own, every call in the
// service's tenant. A client's buffers are its shared memory: a memfd it
// sends (Op::kRegister) that the service maps read-write and registers
// with the Client; the addresses of the client's calls are translated into
// that mapping, and an address outside every registration answers
// INVALID_PARAMS without being touched. The memfd must be sealed against
// shrinking (F_SEAL_SHRINK), so the client cannot make the service's
// mapping fault. When the connection ends (the engine closed, exited, or
// was killed), its registrations are unregistered and unmapped after the
// call in flight (if any) completed: the shared memory is freed with the
// client's last reference, and every object it put stays.
//
// Hostile peers: a frame longer than kMaxFrameBytes, a frame cut short
// (or not finished within io_timeout_ms), or a failed handshake ends the
// connection; malformed requests and descriptors that are not a sealed
// memfd of the right size answer INVALID_PARAMS; descriptors sent with any
// other request are closed. Nothing a peer sends stops the service.
//
// Thread safety: Start and Stop (or the destructor) on one thread; the
// counters from any thread. The Client must outlive the service.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "client/client.h"
#include "common/mutex.h"
#include "common/reply_poll.h"
#include "common/result.h"
#include "common/socket_io.h"

namespace shelfmark::storeservice {

struct StoreServiceOptions {
  std::string socket;         // "@name" or a path (service_wire.h, ListenUnix)
  std::string cluster_token;  // proven both ways at each connection
  std::string tenant;         // every call's tenant; a client naming another is refused
  int max_clients = 64;       // connections served at once (--threads)
  int io_timeout_ms = 5'000;  // a started frame's rest, a handshake's answer, a send
  // After an answer, a connection's thread polls this long for the
  // client's next request before it blocks (common/reply_poll.h: an engine
  // sends its calls back to back, and a blocked thread's wake-up on a VM
  // costs as much as the call); 0: never. Polls that keep missing (a
  // client that pauses between calls) stop, as a ReplyPoller's do.
  int64_t next_request_poll_us = DefaultReplyPollMicros();
};

struct StoreServiceCounters {
  uint64_t clients = 0;           // connected now (handshake done)
  uint64_t mapped_bytes = 0;      // client shared memory mapped now
  uint64_t refused = 0;           // failed handshakes
  uint64_t dropped = 0;           // connections ended by a protocol error
  uint64_t requests = 0;          // requests answered
  uint64_t polled_requests = 0;   // of those, found by the poll after an answer
};

class StoreService {
 public:
  // INVALID_PARAMS when the socket cannot be bound (taken, bad name).
  static Result<std::unique_ptr<StoreService>> Start(StoreServiceOptions options, Client* client);
  ~StoreService();
  StoreService(const StoreService&) = delete;
  StoreService& operator=(const StoreService&) = delete;

  // Stops accepting, ends every connection (calls in flight finish first)
  // and joins their threads. Idempotent.
  void Stop();
  StoreServiceCounters counters() const;
  const std::string& socket() const { return options_.socket; }

 private:
  struct Connection;
  StoreService(StoreServiceOptions options, Client* client);
  void Accept();
  void Serve(Connection* c);
  // Joins the threads of connections that ended.
  void Reap() REQUIRES(mu_);

  const StoreServiceOptions options_;
  Client* const client_;
  int listen_fd_ = -1;
  UniqueFd wake_;  // eventfd: Stop wakes the accept loop
  std::thread acceptor_;
  mutable Mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> clients_{0}, mapped_bytes_{0}, refused_{0}, dropped_{0}, requests_{0},
      polled_{0};
};

}  // namespace shelfmark::storeservice
