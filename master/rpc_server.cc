#include "master/rpc_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/debug.h>

#include "common/mutex.h"
#include "master/connection_auth.h"
#include "master/guarded_stream.h"
#include "master/lookup_connection.h"
#include "master/master_service.h"
#include "service/metrics.h"
#include "replication/replication_wire.h"
#include "rpc/lookup_wire.h"
#include "rpc/rpc_convert.h"

namespace shelfmark {
namespace {

// One accepted Cap'n Proto connection: the stream (under the server's
// request limits), its two-party network and the RPC system serving the
// connection's own service object (it knows who is calling:
// master/connection_auth.h).
struct Connection {
  Connection(kj::Own<GuardedStream>&& s, const MasterServiceFactory& services,
             capnp::ReaderOptions options)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::SERVER, options),
        rpc(capnp::makeRpcServer(
            network, services.NewService({stream->PeerAddress(), [this] {
                                            stream->AbortAfterNextWrite();
                                          }}))) {}
  kj::Own<GuardedStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
};

// A loop's live connections' streams, for the sweep and for eviction (loop
// thread only), whichever protocol they speak.
using LiveConnections = std::vector<GuardedStream*>;

// The stream whose last byte in or out is oldest; null when none.
GuardedStream* Idlest(const LiveConnections& live) {
  GuardedStream* idlest = nullptr;
  for (GuardedStream* s : live) {
    if (s->aborted()) continue;
    if (idlest == nullptr || s->last_active_ms() < idlest->last_active_ms()) idlest = s;
  }
  return idlest;
}

// Bytes read from a new connection to tell its protocol: the first u32 of a
// Cap'n Proto stream (segment count minus one) or the lookup tag.
constexpr size_t kSniffBytes = 4;

class IgnoreErrors final : public kj::TaskSet::ErrorHandler {
 public:
  // A connection that ends with an error (garbage, reset) only ends itself.
  void taskFailed(kj::Exception&&) override {}
};

// Creates a bound, listening, non-blocking TCP socket. Returns the fd or -1.
// No SO_REUSEPORT: a second master on the same port must fail to bind, not
// silently share the port.
int MakeListenSocket(const sockaddr* addr, socklen_t len) {
  int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
      ::bind(fd, addr, len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Initialises KJ's process-wide network state once, on a thread of its own
// that has finished before any loop thread starts. Every loop's
// kj::setupAsyncIo() builds a network filter that copies a function-local
// static table of CidrRanges (kj::_::reservedCidrs(), parsed with
// inet_pton); libkj is not built with ThreadSanitizer, so two loops starting
// at once show up as a race on that table (its guard's fast path is
// invisible to TSan). Done first here, the table is complete before the loop
// threads exist (thread creation orders it), and the loops only read it. A
// thread, not the caller: the caller may already run a KJ event loop, and a
// thread has only one.
void InitKjOnce() {
  static const bool done = [] {
    std::thread([] {
      try {
        kj::setupAsyncIo();
      } catch (const kj::Exception&) {
        // The loops set it up again and report what fails.
      }
    }).join();
    return true;
  }();
  (void)done;
}

// How often a loop that is ahead of the others looks again whether it may
// accept.
constexpr auto kBalanceRecheck = 2 * kj::MILLISECONDS;
// How often a loop sweeps its connections for slow requests and idleness.
constexpr auto kSweepPeriod = 200 * kj::MILLISECONDS;
// Descriptors kept free below RLIMIT_NOFILE when max_connections is derived
// from it (snapshots, the HTTP server, files, the loops' own).
constexpr uint64_t kReservedFds = 256;

// max_connections when the options leave it 0: the descriptor limit less a
// reserve, so accept() does not run out of descriptors first.
uint64_t DefaultMaxConnections() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 65536;
  uint64_t fds = limit.rlim_cur;
  return std::max<uint64_t>(16, fds - std::min(kReservedFds, fds / 4));
}

}  // namespace

struct RpcServer::Impl {
  Impl(Directory& directory, MetricsRegistry* metrics, RpcServerOptions opts)
      : options(std::move(opts)),
        services(directory, metrics, options.max_batch, options.tokens, options.handshake_limits,
                 options.gate),
        limits(options.max_request_bytes, options.max_buffered_request_bytes) {
    services.SetReplication(options.replication);
  }

  int TotalOpen() const {
    int total = 0;
    for (size_t i = 0; i < loop_count; ++i) total += open_connections[i].load();
    return total;
  }

  // At max_connections: the new connection takes the place of this loop's
  // idlest one (a flood of idle connections cannot lock clients out), or is
  // closed when this loop has none. False when it must be closed.
  bool MakeRoom(LiveConnections& live) {
    if (TotalOpen() < static_cast<int>(max_connections)) return true;
    GuardedStream* idlest = Idlest(live);
    if (idlest == nullptr) {
      stats.rejected.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    idlest->Abort();
    stats.evicted.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // Ends connections whose request arrives too slowly or that sat idle too long.
  void Sweep(LiveConnections& live) {
    int64_t now = GuardedStream::NowMs();
    for (GuardedStream* stream : live) {
      GuardedStream& s = *stream;
      if (s.aborted()) continue;
      int64_t started = s.request_started_ms();
      if (started >= 0 && now - started > options.request_timeout_ms) {
        s.Abort();
        stats.slow_requests.fetch_add(1, std::memory_order_relaxed);
      } else if (started < 0 && options.idle_timeout_ms > 0 &&
                 now - s.last_active_ms() > options.idle_timeout_ms) {
        s.Abort();
        stats.idle_closed.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  // True while loop `index` serves more connections than the least loaded
  // loop: it then leaves the next accept to that one, so connections spread
  // evenly over the cores (all loops accept from one listening socket).
  bool AheadOfOthers(size_t index) const {
    int mine = open_connections[index].load(std::memory_order_relaxed);
    for (size_t i = 0; i < loop_count; ++i) {
      if (open_connections[i].load(std::memory_order_relaxed) < mine) return true;
    }
    return false;
  }

  // Serves one accepted connection until it ends: reads its first bytes,
  // then speaks the lookup channel (master/lookup_connection.h) or, with
  // those bytes given back to the stream, Cap'n Proto RPC.
  kj::Promise<void> Serve(kj::Own<GuardedStream> stream, capnp::ReaderOptions reader_options) {
    auto first = kj::heap<std::array<char, kSniffBytes>>();
    auto read = stream->tryRead(first->data(), kSniffBytes, kSniffBytes);
    return read.then([this, stream = kj::mv(stream), first = kj::mv(first),
                      reader_options](size_t n) mutable -> kj::Promise<void> {
      if (n < kSniffBytes) return kj::READY_NOW;  // closed before a whole word
      const std::string_view head(first->data(), kSniffBytes);
      uint32_t tag = 0;
      std::memcpy(&tag, head.data(), sizeof(tag));
      if (tag == kReplicationFrameTag) {
        HandOverStandby(*stream, head);
        return kj::READY_NOW;  // the stream closes; the standby keeps its dup
      }
      if (tag == kLookupFrameTag) {
        auto session = services.NewLookupSession(stream->PeerAddress());
        auto conn = kj::heap<LookupConnection>(kj::mv(stream), kj::mv(session), head);
        auto done = conn->Run();
        return done.attach(kj::mv(conn));
      }
      stream->Unread(head);
      auto conn = kj::heap<Connection>(kj::mv(stream), services, reader_options);
      auto done = conn->network.onDisconnect();
      return done.attach(kj::mv(conn));
    });
  }

  // Gives a standby's connection to options.on_standby as a descriptor of
  // its own, unless its address has no handshake failures left.
  void HandOverStandby(GuardedStream& stream, std::string_view head) {
    if (!options.on_standby) return;
    std::shared_ptr<AuthPolicy> auth = services.auth_policy();
    std::string peer = stream.PeerAddress();
    if (auth->required() && !auth->AdmitHandshake(peer)) return;
    KJ_IF_MAYBE(fd, stream.getFd()) {
      const int own = ::fcntl(*fd, F_DUPFD_CLOEXEC, 0);
      if (own < 0) return;
      options.on_standby(own, std::string(head),
                         [auth = std::move(auth), peer = std::move(peer)](bool proven) {
                           auth->HandshakeDone(peer, proven);
                         });
    }
  }

  // Body of loop thread `index`: serves `fd` until its stop promise resolves.
  void Loop(size_t index, int fd) {
    bool published = false;
    try {
      auto io = kj::setupAsyncIo();
      auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
      auto listener = io.lowLevelProvider->wrapListenSocketFd(
          fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                  kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC |
                  kj::LowLevelAsyncIoProvider::ALREADY_NONBLOCK);
      fd = -1;  // owned by the listener now
      capnp::ReaderOptions reader_options;
      reader_options.traversalLimitInWords = rpcconv::kTraversalLimitWords;
      reader_options.nestingLimit = rpcconv::kNestingLimit;
      IgnoreErrors error_handler;
      // Before `connections`: a connection destroyed with the task set
      // removes itself from it.
      LiveConnections live;
      kj::TaskSet connections(error_handler);
      kj::Timer& timer = io.provider->getTimer();
      {
        MutexLock lock(&mu);
        stoppers.push_back(kj::mv(stop.fulfiller));
        ++ready;
        published = true;
      }
      cv.notify_all();

      kj::Function<kj::Promise<void>()> accept_loop;
      accept_loop = [&]() -> kj::Promise<void> {
        if (AheadOfOthers(index)) {
          return timer.afterDelay(kBalanceRecheck).then([&]() { return accept_loop(); });
        }
        // evalNow: accept() may also throw before it returns a promise.
        return kj::evalNow([&]() { return listener->accept(); })
            .then(
                [&](kj::Own<kj::AsyncIoStream>&& stream) -> kj::Promise<void> {
                  if (!MakeRoom(live)) return accept_loop();  // `stream` closes
                  try {
                    int one = 1;
                    stream->setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                  } catch (const kj::Exception&) {
                  }
                  auto guarded = kj::heap<GuardedStream>(kj::mv(stream), &limits);
                  std::atomic<int>& open = open_connections[index];
                  open.fetch_add(1, std::memory_order_relaxed);
                  GuardedStream* raw = guarded.get();
                  live.push_back(raw);
                  // The defer runs as the connection is destroyed, in the same
                  // turn: no sweep sees it half gone.
                  connections.add(Serve(kj::mv(guarded), reader_options)
                                      .attach(kj::defer([&open, &live, raw]() {
                                        open.fetch_sub(1);
                                        live.erase(std::find(live.begin(), live.end(), raw));
                                      })));
                  return accept_loop();
                },
                [&](kj::Exception&&) -> kj::Promise<void> {
                  // accept() failed (e.g. out of fds): back off, keep serving.
                  stats.accept_errors.fetch_add(1, std::memory_order_relaxed);
                  return timer.afterDelay(10 * kj::MILLISECONDS).then([&]() {
                    return accept_loop();
                  });
                });
      };
      kj::Function<kj::Promise<void>()> sweep_loop;
      sweep_loop = [&]() -> kj::Promise<void> {
        return timer.afterDelay(kSweepPeriod).then([&]() {
          Sweep(live);
          return sweep_loop();
        });
      };
      stop.promise.exclusiveJoin(accept_loop().exclusiveJoin(sweep_loop())).wait(io.waitScope);
      // Leaving the scope drops every connection, then the listener.
    } catch (const kj::Exception& e) {
      KJ_LOG(ERROR, "rpc server loop failed", e);
    } catch (const std::exception& e) {
      KJ_LOG(ERROR, "rpc server loop failed", e.what());
    }
    if (fd >= 0) ::close(fd);
    if (!published) {
      {
        MutexLock lock(&mu);
        ++ready;
      }
      cv.notify_all();
    }
  }

  Result<uint16_t> Start() {
    if (running) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    if (options.threads < 1 || options.max_batch == 0 || options.max_request_bytes == 0 ||
        options.max_buffered_request_bytes < options.max_request_bytes ||
        options.request_timeout_ms <= 0 || options.idle_timeout_ms < 0) {
      return ErrorCode::INVALID_PARAMS;
    }
    max_connections = options.max_connections > 0 ? options.max_connections
                                                   : DefaultMaxConnections();

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port_text = std::to_string(options.port);
    if (::getaddrinfo(options.bind_address.empty() ? nullptr : options.bind_address.c_str(),
                      port_text.c_str(), &hints, &found) != 0 ||
        found == nullptr) {
      return ErrorCode::INVALID_PARAMS;
    }
    sockaddr_storage addr{};
    const socklen_t addr_len = found->ai_addrlen;
    std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
    ::freeaddrinfo(found);

    // One listening socket, one dup of it per loop thread: every loop accepts
    // from the same queue, so an idle loop takes the next connection.
    int listen_fd = MakeListenSocket(reinterpret_cast<sockaddr*>(&addr), addr_len);
    if (listen_fd < 0) return ErrorCode::INVALID_PARAMS;
    sockaddr_storage bound{};
    socklen_t bound_len = sizeof(bound);
    if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
      ::close(listen_fd);
      return ErrorCode::INVALID_PARAMS;
    }
    const uint16_t port = ntohs(bound.ss_family == AF_INET
                                    ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    std::vector<int> fds = {listen_fd};
    for (int i = 1; i < options.threads; ++i) {
      int fd = ::fcntl(listen_fd, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) {
        for (int f : fds) ::close(f);
        return ErrorCode::INVALID_PARAMS;
      }
      fds.push_back(fd);
    }

    {
      MutexLock lock(&mu);
      ready = 0;
      stoppers.clear();
    }
    InitKjOnce();
    loop_count = fds.size();
    open_connections = std::make_unique<std::atomic<int>[]>(loop_count);
    for (size_t i = 0; i < fds.size(); ++i) {
      threads.emplace_back([this, i, fd = fds[i]]() { Loop(i, fd); });
    }
    bool all_started = false;
    {
      MutexLock lock(&mu);
      // Not cv.wait(lock, pred): the analysis cannot see the predicate
      // lambda runs with mu held.
      while (ready != static_cast<int>(threads.size())) cv.wait(lock);
      all_started = stoppers.size() == threads.size();
    }
    running = true;
    if (!all_started) {  // a loop failed to start
      Stop();
      return ErrorCode::INTERNAL_ERROR;
    }
    return port;
  }

  void Stop() {
    if (!running) return;
    {
      MutexLock lock(&mu);
      for (auto& stopper : stoppers) stopper->fulfill();
    }
    for (auto& t : threads) t.join();
    threads.clear();
    {
      MutexLock lock(&mu);
      stoppers.clear();
    }
    running = false;
  }

  RpcServerOptions options;
  MasterServiceFactory services;
  RequestLimits limits;
  struct {
    std::atomic<uint64_t> accept_errors{0}, rejected{0}, evicted{0}, slow_requests{0},
        idle_closed{0};
  } stats;
  uint64_t max_connections = 0;  // set before the loop threads start
  bool running = false;
  std::vector<std::thread> threads;
  size_t loop_count = 0;  // set before the loop threads start
  std::unique_ptr<std::atomic<int>[]> open_connections;  // per loop thread
  Mutex mu;
  std::condition_variable_any cv;
  int ready GUARDED_BY(mu) = 0;  // loop threads that finished starting
  std::vector<kj::Own<kj::CrossThreadPromiseFulfiller<void>>> stoppers GUARDED_BY(mu);
};

void AddRpcServerMetrics(MetricsRegistry& registry, const RpcServer& server) {
  const RpcServer* s = &server;
  auto read = [s](uint64_t RpcServerStats::*field) {
    return [s, field] { return static_cast<double>(s->stats().*field); };
  };
  registry.AddGauge("shelfmark_master_rpc_open_connections", "Open RPC connections.", [s] {
    double n = 0;
    for (int c : s->OpenConnections()) n += c;
    return n;
  });
  registry.AddGauge("shelfmark_master_rpc_max_connections",
                    "RPC connections allowed at once (--rpc_max_connections, or derived).",
                    read(&RpcServerStats::max_connections));
  registry.AddGauge("shelfmark_master_rpc_buffered_request_bytes",
                    "Bytes of RPC requests being received now, all connections together.",
                    read(&RpcServerStats::buffered_request_bytes));
  registry.AddCounterFunc("shelfmark_master_rpc_accept_errors_total",
                          "accept() failures on the RPC port (e.g. out of descriptors).",
                          read(&RpcServerStats::accept_errors));
  registry.AddCounterFunc("shelfmark_master_rpc_rejected_connections_total",
                          "RPC connections closed at once: at the limit, none to replace.",
                          read(&RpcServerStats::rejected_connections));
  registry.AddCounterFunc("shelfmark_master_rpc_evicted_connections_total",
                          "Idlest RPC connections closed to make room for a new one.",
                          read(&RpcServerStats::evicted_connections));
  registry.AddCounterFunc("shelfmark_master_rpc_idle_closed_connections_total",
                          "RPC connections closed after --rpc_idle_timeout_sec of silence.",
                          read(&RpcServerStats::idle_closed));
  registry.AddCounterFunc("shelfmark_master_rpc_slow_requests_total",
                          "RPC connections closed: a request took longer than "
                          "--rpc_request_timeout_sec to arrive.",
                          read(&RpcServerStats::slow_requests));
  registry.AddCounterFunc("shelfmark_master_rpc_refused_requests_total",
                          "RPC requests refused (their connection closed), by reason.",
                          read(&RpcServerStats::requests_too_large), "reason=\"too_large\"");
  registry.AddCounterFunc("shelfmark_master_rpc_refused_requests_total",
                          "RPC requests refused (their connection closed), by reason.",
                          read(&RpcServerStats::requests_over_budget), "reason=\"over_budget\"");
}

RpcServerStats RpcServer::stats() const {
  const Impl& i = *impl_;
  RpcServerStats s;
  s.accept_errors = i.stats.accept_errors.load();
  s.rejected_connections = i.stats.rejected.load();
  s.evicted_connections = i.stats.evicted.load();
  s.slow_requests = i.stats.slow_requests.load();
  s.idle_closed = i.stats.idle_closed.load();
  s.requests_too_large = i.limits.too_large.load();
  s.requests_over_budget = i.limits.over_budget.load();
  s.buffered_request_bytes = i.limits.budget.used();
  s.max_connections = i.max_connections;
  return s;
}

RpcServer::RpcServer(Directory& directory, MetricsRegistry* metrics, RpcServerOptions options)
    : impl_(std::make_unique<Impl>(directory, metrics, std::move(options))) {}

RpcServer::~RpcServer() { Stop(); }

Result<uint16_t> RpcServer::Start() { return impl_->Start(); }

void RpcServer::Stop() { impl_->Stop(); }

std::vector<int> RpcServer::OpenConnections() const {
  std::vector<int> out;
  if (!impl_->running) return out;
  for (size_t i = 0; i < impl_->loop_count; ++i) {
    out.push_back(impl_->open_connections[i].load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace shelfmark
