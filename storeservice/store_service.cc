#include "storeservice/store_service.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "storeservice/service_session.h"
#include "storeservice/service_wire.h"

namespace shelfmark::storeservice {

struct StoreService::Connection {
  UniqueFd fd;
  std::thread thread;
  std::atomic<bool> done{false};
};

StoreService::StoreService(StoreServiceOptions options, Client* client)
    : options_(std::move(options)), client_(client) {}

Result<std::unique_ptr<StoreService>> StoreService::Start(StoreServiceOptions options,
                                                          Client* client) {
  if (client == nullptr || options.max_clients < 1) return ErrorCode::INVALID_PARAMS;
  std::unique_ptr<StoreService> service(new StoreService(std::move(options), client));
  service->listen_fd_ = ListenUnix(service->options_.socket);
  if (service->listen_fd_ < 0) return ErrorCode::INVALID_PARAMS;
  service->wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!service->wake_.valid()) return ErrorCode::INTERNAL_ERROR;
  service->acceptor_ = std::thread([raw = service.get()] { raw->Accept(); });
  return service;
}

StoreService::~StoreService() {
  Stop();
  CloseFd(listen_fd_);
}

void StoreService::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    // Wakes every connection's read; a call in flight finishes first.
    for (auto& c : connections_) shutdown(c->fd.get(), SHUT_RDWR);
  }
  const uint64_t one = 1;
  if (write(wake_.get(), &one, sizeof(one)) < 0) {
    // The eventfd cannot be full after one write; nothing to recover.
  }
  if (acceptor_.joinable()) acceptor_.join();
  MutexLock lock(&mu_);
  for (auto& c : connections_) c->thread.join();
  connections_.clear();
}

void StoreService::Reap() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void StoreService::Accept() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    MutexLock lock(&mu_);
    if (stopping_) {
      close(fd);
      return;
    }
    Reap();
    auto c = std::make_unique<Connection>();
    c->fd.Reset(fd);
    Connection* raw = c.get();
    connections_.push_back(std::move(c));
    raw->thread = std::thread([this, raw] {
      Serve(raw);
      // The peer sees the end now; the descriptor closes when reaped.
      shutdown(raw->fd.get(), SHUT_RDWR);
      raw->done.store(true);
    });
  }
}

void StoreService::Serve(Connection* c) {
  const int fd = c->fd.get();
  const int timeout = options_.io_timeout_ms;
  const auth::Nonce service_nonce = auth::NewNonce();
  std::string body;
  std::vector<UniqueFd> fds;
  Hello hello;
  if (!SendFrame(fd, EncodeChallenge(service_nonce), timeout) ||
      ReadFrame(fd, &body, &fds, timeout, timeout, kMaxHandshakeBytes) != ReadStatus::kOk ||
      !DecodeHello(body, &hello) || !fds.empty()) {
    refused_.fetch_add(1);
    return;
  }
  const auth::Proof expected =
      ClientProof(options_.cluster_token, service_nonce, hello.client_nonce, hello.tenant);
  Welcome welcome;
  if (!auth::ProofMatches(expected, hello.proof)) {
    welcome.code = static_cast<int32_t>(ErrorCode::UNAUTHENTICATED);
    welcome.proof.assign(auth::kProofBytes, '\0');  // nothing proven to an unproven peer
    refused_.fetch_add(1);
    SendFrame(fd, EncodeWelcome(welcome), timeout);
    return;
  }
  // Counted before the check, so two connections never both take the last place.
  const uint64_t place = clients_.fetch_add(1);
  ErrorCode code = ErrorCode::OK;
  if (hello.tenant != options_.tenant) code = ErrorCode::PERMISSION_DENIED;
  if (place >= static_cast<uint64_t>(options_.max_clients)) code = ErrorCode::NO_AVAILABLE_HANDLE;
  welcome.code = static_cast<int32_t>(code);
  welcome.proof = std::string(auth::BytesOf(ServerProof(
      options_.cluster_token, service_nonce, hello.client_nonce, hello.tenant, welcome.code)));
  if (!SendFrame(fd, EncodeWelcome(welcome), timeout) || code != ErrorCode::OK) {
    clients_.fetch_sub(1);
    return;
  }
  {
    ServiceSession session(client_, options_.tenant, &mapped_bytes_);
    FrameReader requests(fd);
    ReplyPoller next_request(options_.next_request_poll_us);
    for (;;) {
      fds.clear();
      if (!requests.buffered()) {
        ReplyWait wait;  // (a poller only while it polls: blocked threads are not)
        if (next_request.Await(wait, fd)) polled_.fetch_add(1);
      }
      const ReadStatus s = requests.Read(&body, &fds, -1, timeout);
      if (s != ReadStatus::kOk) {
        if (s == ReadStatus::kBad) dropped_.fetch_add(1);
        break;
      }
      const std::string answer = session.Handle(body, std::move(fds));
      requests_.fetch_add(1);
      if (!SendFrame(fd, answer, timeout)) break;
    }
  }  // the session's memory is unmapped here
  clients_.fetch_sub(1);
}

StoreServiceCounters StoreService::counters() const {
  StoreServiceCounters c;
  c.clients = clients_.load();
  c.mapped_bytes = mapped_bytes_.load();
  c.refused = refused_.load();
  c.dropped = dropped_.load();
  c.requests = requests_.load();
  c.polled_requests = polled_.load();
  return c;
}

}  // namespace shelfmark::storeservice
