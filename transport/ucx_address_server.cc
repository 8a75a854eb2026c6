#include "transport/ucx_address_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "common/host_port.h"
#include "common/socket_io.h"
#include "transport/ucx_wire.h"

namespace shelfmark {
namespace {

constexpr int kBacklog = 512;
constexpr int kAcceptBackoffMs = 100;  // after EMFILE/ENFILE/ENOBUFS

int64_t NowMs() { return SteadyClock().NowMs(); }

}  // namespace

Result<std::unique_ptr<UcxAddressServer>> UcxAddressServer::Start(const std::string& ip,
                                                                   uint16_t port,
                                                                   const ucx_wire::NodeAddress& address,
                                                                   ChallengeBook* challenges) {
  std::unique_ptr<UcxAddressServer> server(new UcxAddressServer());
  server->challenges_ = challenges;
  server->Update(address);
  server->listen_fd_ = ListenTcp(ip, port, kBacklog);
  if (server->listen_fd_ < 0) return ErrorCode::INVALID_PARAMS;
  server->port_ = BoundPort(server->listen_fd_);
  if (server->port_ == 0 || !server->loop_.Start([raw = server.get()] { raw->Serve(); })) {
    return ErrorCode::INTERNAL_ERROR;
  }
  return server;
}

UcxAddressServer::~UcxAddressServer() {
  loop_.Stop();
  CloseFd(listen_fd_);
}

void UcxAddressServer::Update(const ucx_wire::NodeAddress& address) {
  MutexLock lock(&mu_);
  address_ = address;
}

void UcxAddressServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{loop_.wake_fd(), POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    int timeout_ms = -1;
    const int64_t wait = backoff_until_ms_ - NowMs();
    if (wait > 0) {
      fds[1].events = 0;  // out of descriptors a moment ago: retry later
      timeout_ms = static_cast<int>(wait);
    }
    const int n = poll(fds, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[0].revents != 0) return;
    if ((fds[1].revents & POLLIN) != 0) AcceptAll();
  }
}

// Each connection gets the whole message, with a challenge of its own, in
// one non-blocking send (it fits any socket buffer) and is closed; a peer
// that cannot take it reads a short message and fails to decode it.
void UcxAddressServer::AcceptAll() {
  for (;;) {
    UniqueFd fd(accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) backoff_until_ms_ = NowMs() + kAcceptBackoffMs;
      return;
    }
    const ChallengeBook::Challenge challenge = challenges_->Issue();
    std::string message;
    {
      MutexLock lock(&mu_);
      address_.ticket = challenge.ticket;
      address_.nonce = challenge.nonce;
      message = ucx_wire::EncodeNodeAddress(address_);
    }
    if (send(fd.get(), message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
        static_cast<ssize_t>(message.size())) {
      served_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

std::optional<ucx_wire::NodeAddress> FetchUcxNodeAddress(std::string_view endpoint,
                                                         int timeout_ms, std::string* error) {
  std::optional<HostPort> where = ParseHostPort(endpoint);
  if (!where) {
    *error = "ucx: bad endpoint '" + std::string(endpoint) + "'";
    return std::nullopt;
  }
  UniqueFd fd = ConnectTcp(*where, timeout_ms);
  if (!fd.valid()) {
    *error = "ucx: cannot reach " + std::string(endpoint) + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string bytes;
  // The message's own framing bounds it: a little over the largest address.
  if (!ReceiveAll(fd.get(), &bytes, ucx_wire::kMaxWorkerAddress + 1024, timeout_ms)) {
    *error = "ucx: no worker address from " + std::string(endpoint);
    return std::nullopt;
  }
  std::optional<ucx_wire::NodeAddress> address =
      ucx_wire::DecodeNodeAddress(bytes.data(), bytes.size());
  if (!address) *error = "ucx: " + std::string(endpoint) + " sent no worker address";
  return address;
}

}  // namespace shelfmark
