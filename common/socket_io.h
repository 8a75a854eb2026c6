// Small blocking-with-deadline TCP helpers over non-blocking sockets, shared
// by the HTTP client and server (service/) and the UCX worker-address
// exchange (transport/ucx_address_server.h): no extra libraries.
//
// Contracts: every function is reentrant and keeps no state; sockets are
// made SOCK_NONBLOCK | SOCK_CLOEXEC; timeouts are in milliseconds and apply
// to each wait (connect, each send or receive), never a sleep.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/host_port.h"

namespace shelfmark {

// Owns a file descriptor; closes it once.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Closes `fd` when open and sets it to -1.
void CloseFd(int& fd);

// Polls `fd` for `events` (POLLIN, POLLOUT) up to `timeout_ms` (retrying on
// EINTR); true when an event (or an error condition) is pending.
bool WaitFd(int fd, short events, int timeout_ms);

// A connected socket to `where` (each resolved address tried in turn), or an
// invalid UniqueFd when none answers within `timeout_ms` each. `refused`
// (when not null): true only when every address answered ECONNREFUSED, i.e.
// each host is up and nothing listens on the port.
UniqueFd ConnectTcp(const HostPort& where, int timeout_ms, bool* refused = nullptr);

// Writes all of `data`; false on an error or when the socket stays full for
// `timeout_ms`.
bool SendAll(int fd, std::string_view data, int timeout_ms);

// Appends what arrives until the peer closes; false on an error, on a wait
// longer than `timeout_ms`, or past `max_bytes`.
bool ReceiveAll(int fd, std::string* out, size_t max_bytes, int timeout_ms);

// A listening socket on numeric `host` (IPv4 or IPv6; "0.0.0.0" for all)
// and `port` (0: any free one), SO_REUSEADDR set; -1 with errno on failure.
int ListenTcp(const std::string& host, uint16_t port, int backlog);

// The port a bound socket has (0 when it cannot be read).
uint16_t BoundPort(int fd);

}  // namespace shelfmark
