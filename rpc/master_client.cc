#include "rpc/master_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>

#include <capnp/message.h>
#include <capnp/rpc-twoparty.h>
#include <capnp/rpc.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <kj/timer.h>

#include "auth/proof.h"
#include "rpc/leader_retry.h"
#include "rpc/lookup_client.h"
#include "rpc/master_target.h"
#include "rpc/rpc_convert.h"
#include "rpc/task_convert.h"
#include "schemas/master.capnp.h"

namespace shelfmark {
namespace {

using rpcconv::CodeFromWire;
using rpcconv::CopyText;

// One KJ event loop per thread, shared by the thread's MasterClients (a
// thread can hold only one kj::EventLoop).
struct ThreadIo {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  int refs = 0;
};
thread_local ThreadIo* t_io = nullptr;

ThreadIo* AcquireThreadIo() {
  if (t_io == nullptr) t_io = new ThreadIo();
  ++t_io->refs;
  return t_io;
}

void ReleaseThreadIo(ThreadIo* io) {
  if (--io->refs == 0) {
    if (t_io == io) t_io = nullptr;
    delete io;
  }
}

// An established connection: stream, two-party network, RPC system and the
// master's bootstrap capability. `broken` turns true when the network
// reports the disconnect (observed whenever the event loop runs).
struct Connection {
  explicit Connection(kj::Own<kj::AsyncIoStream>&& s)
      : stream(kj::mv(s)),
        network(*stream, capnp::rpc::twoparty::Side::CLIENT, ReaderOptions()),
        rpc(capnp::makeRpcClient(network)) {
    capnp::word scratch[4];
    std::memset(scratch, 0, sizeof(scratch));
    capnp::MallocMessageBuilder message(scratch);
    auto vat_id = message.getRoot<capnp::rpc::twoparty::VatId>();
    vat_id.setSide(capnp::rpc::twoparty::Side::SERVER);
    master = rpc.bootstrap(vat_id).castAs<wire::MasterService>();
    watch = network.onDisconnect()
                .then([this]() { broken = true; }, [this](kj::Exception&&) { broken = true; })
                .eagerlyEvaluate(nullptr);
  }

  static capnp::ReaderOptions ReaderOptions() {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = rpcconv::kTraversalLimitWords;
    options.nestingLimit = rpcconv::kNestingLimit;
    return options;
  }

  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
  wire::MasterService::Client master = nullptr;
  bool broken = false;
  kj::Promise<void> watch = nullptr;
};

// The whole-call code of a call's answer.
ErrorCode CodeOf(ErrorCode code) { return code; }
template <typename T>
ErrorCode CodeOf(const Result<T>& r) {
  return r.ok() ? ErrorCode::OK : r.error();
}

// The retry budget of a call following the leader when call_timeout_ms
// does not bound it (<= 0).
constexpr int64_t kUnboundedCallRetryMs = 10'000;

// A batch request's per-key checksums (none when empty).
template <typename Request>
void SetChecksums(Request& req, const std::vector<uint64_t>& checksums) {
  if (checksums.empty()) return;
  auto c = req.initChecksums(checksums.size());
  for (size_t i = 0; i < checksums.size(); ++i) c.set(i, checksums[i]);
}

// Size hint (words) for a request carrying `keys`.
size_t KeysWords(const std::vector<std::string>& keys) {
  size_t words = 16;
  for (const auto& k : keys) words += 2 + k.size() / 8;
  return words;
}

}  // namespace

struct MasterClient::Impl {
  using Clock = std::chrono::steady_clock;

  explicit Impl(MasterClientOptions opts)
      : options(std::move(opts)),
        target(options.address, options.cluster_id, options.follow_leader_hints),
        tio(AcquireThreadIo()) {}
  ~Impl() {
    conn = nullptr;
    address = nullptr;
    ReleaseThreadIo(tio);
  }

  kj::AsyncIoContext& io() { return tio->io; }

  // The deadline of one call (a lookup's Cap'n Proto fallback included):
  // set while the call runs, by the outermost CallScope.
  class CallScope {
   public:
    explicit CallScope(Impl& impl) : impl_(impl), outer_(impl.deadline.has_value()) {
      if (!outer_) impl_.deadline = impl_.CallDeadline();
    }
    ~CallScope() {
      if (!outer_) impl_.deadline.reset();
    }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    Impl& impl_;
    const bool outer_;  // a call already in progress owns the deadline
  };

  // call_timeout_ms from now; when that is <= 0, kUnboundedCallRetryMs for
  // a client that may retry elsewhere (it follows the leader or hints), and
  // no deadline (every wait unbounded, as before HA) otherwise.
  std::optional<Clock::time_point> CallDeadline() const {
    int64_t ms = options.call_timeout_ms;
    if (ms <= 0) {
      if (!target.follows_hints()) return std::nullopt;
      ms = kUnboundedCallRetryMs;
    }
    return Clock::now() + std::chrono::milliseconds(ms);
  }
  bool Expired() const { return deadline && Clock::now() >= *deadline; }

  // How long one wait may take: what is left of the call's deadline (>= 1),
  // or, without one, call_timeout_ms (<= 0: unbounded).
  int64_t WaitMs() const {
    if (!deadline) return options.call_timeout_ms;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
    return std::max<int64_t>(1, left.count());
  }

  // The thread's timer, its clock brought up to now. kj's timer reads the
  // clock only when the event loop turns: on a thread whose loop sat idle
  // (a client between calls), a time-out counted from that stale time fires
  // at once, and the first call after call_timeout_ms of quiet failed
  // RPC_FAIL ("operation timed out") without waiting at all.
  kj::Timer& Timer() {
    io().waitScope.poll();
    return io().provider->getTimer();
  }

  template <typename T>
  T WaitWithTimeout(kj::Promise<T>&& promise) {
    if (const int64_t ms = WaitMs(); ms > 0) {
      return Timer()
          .timeoutAfter(ms * kj::MILLISECONDS, kj::mv(promise))
          .wait(io().waitScope);
    }
    return promise.wait(io().waitScope);
  }

  template <typename T>
  capnp::Response<T> WaitReply(capnp::RemotePromise<T>&& remote) {
    kj::Promise<capnp::Response<T>> promise = kj::mv(remote);
    return WaitWithTimeout(kj::mv(promise));
  }

  template <typename T>
  static typename T::Reader AsReader(capnp::Response<T>& response) {
    return response;
  }

  void Drop() { conn = nullptr; }

  // The target's address changed: the connection, the parsed address and
  // the lookup channel belong to the old one.
  void Forget() {
    Drop();
    address = nullptr;
    lookup.reset();
    lookup_unsupported = false;
  }

  // Following the leader: asks etcd when the leader is unknown or suspect.
  // Codes: MasterTarget::Refresh.
  ErrorCode RefreshTarget() {
    bool changed = false;
    ErrorCode code = target.Refresh(WaitMs(), &changed);
    if (changed) Forget();
    return code;
  }

  // OK when a live connection exists (or was just made); RPC_FAIL otherwise
  // (and, following the leader, when none is published in etcd).
  ErrorCode EnsureConnected() {
    if (ErrorCode code = RefreshTarget(); code != ErrorCode::OK) return code;
    if (conn) {
      // Let the loop notice a peer that went away since the last call, so a
      // stale connection is replaced before a request is sent on it.
      io().waitScope.poll();
      if (!conn->broken) return ErrorCode::OK;
      Drop();
    }
    try {
      if (!address) {
        address = WaitWithTimeout(io().provider->getNetwork().parseAddress(target.address()));
      }
      auto stream = WaitWithTimeout(address->connect());
      try {
        int one = 1;
        stream->setsockopt(IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      } catch (const kj::Exception&) {
      }
      conn = kj::heap<Connection>(kj::mv(stream));
      ErrorCode code = options.token.empty() ? ErrorCode::OK : Handshake();
      if (code != ErrorCode::OK) Drop();
      return code;
    } catch (const kj::Exception&) {
      Drop();
      return ErrorCode::RPC_FAIL;
    }
  }

  // Proves options.token to the master on the new connection and checks the
  // master's proof in turn (schemas/master.capnp, authChallenge and
  // authenticate). OK also when the master does not ask for tokens.
  // UNAUTHENTICATED when either side's proof fails, RATE_LIMITED, or
  // RPC_FAIL (thrown: transport).
  ErrorCode Handshake() {
    auto challenge = WaitReply(conn->master.authChallengeRequest(capnp::MessageSize{4, 0}).send());
    if (ErrorCode code = CodeFromWire(challenge.getCode()); code != ErrorCode::OK) return code;
    if (!challenge.getRequired()) return ErrorCode::OK;
    const std::string server_nonce(rpcconv::View(challenge.getServerNonce()));
    if (server_nonce.size() != auth::kNonceBytes) return ErrorCode::RPC_FAIL;
    const auth::Nonce client_nonce = auth::NewNonce();
    const auth::Proof proof = auth::Prove(options.token, auth::kMasterClientLabel,
                                          {server_nonce, auth::Bytes(client_nonce)});
    auto request = conn->master.authenticateRequest(capnp::MessageSize{16, 0});
    request.setClientNonce(capnp::Data::Reader(client_nonce.data(), client_nonce.size()));
    request.setProof(capnp::Data::Reader(proof.data(), proof.size()));
    auto reply = WaitReply(request.send());
    if (ErrorCode code = CodeFromWire(reply.getCode()); code != ErrorCode::OK) return code;
    const auth::Proof expected = auth::Prove(options.token, auth::kMasterServerLabel,
                                             {server_nonce, auth::Bytes(client_nonce)});
    if (!auth::ProofMatches(expected, rpcconv::View(reply.getServerProof()))) {
      return ErrorCode::UNAUTHENTICATED;  // the master does not know our token
    }
    return ErrorCode::OK;
  }

  // One attempt: connects if needed, sends the request built by
  // make(master) and decodes the reply with on_reply(response) -> Ret.
  // Transport failures give RPC_FAIL (the connection is dropped; the next
  // attempt reconnects). *sent: the request left (its effect is unknown
  // after a failure); *disconnected: the failure was the connection's end.
  // A NOT_LEADER answer's `leader` is kept in `hint`.
  template <typename Ret, typename Make, typename OnReply>
  Ret Attempt(Make& make, OnReply& on_reply, bool* sent, bool* disconnected) {
    *sent = false;
    *disconnected = false;
    hint.clear();
    if (ErrorCode code = EnsureConnected(); code != ErrorCode::OK) return code;
    try {
      auto request = make(conn->master);
      *sent = true;
      auto response = WaitReply(request.send());
      try {
        auto reader = AsReader(response);
        if (CodeFromWire(reader.getCode()) == ErrorCode::NOT_LEADER) {
          hint = std::string(rpcconv::View(reader.getLeader()));
        }
        return on_reply(reader);
      } catch (const kj::Exception&) {
        return ErrorCode::RPC_FAIL;  // malformed reply
      }
    } catch (const kj::Exception& e) {
      *disconnected = e.getType() == kj::Exception::Type::DISCONNECTED;
      Drop();
      return ErrorCode::RPC_FAIL;
    }
  }

  // A call: attempts until NextAfter says its answer is final
  // (rpc/leader_retry.h): a fixed address's read-only call once more after
  // a dropped connection; following the leader, after NOT_LEADER and
  // transport failures, re-resolving it; following a NOT_LEADER answer's
  // hint at once. All of it within the call's deadline (CallScope).
  template <typename Ret, typename Make, typename OnReply>
  Ret Call(bool read_only, Make&& make, OnReply&& on_reply) {
    return Retrying<Ret>(read_only, [&](bool* sent, bool* disconnected) {
      return Attempt<Ret>(make, on_reply, sent, disconnected);
    });
  }

  // Runs attempt(&sent, &disconnected) until its answer is final, steering
  // the target after each (Steer) and pausing (RetryBackoff) where
  // NextAfter says so.
  template <typename Ret, typename AttemptFn>
  Ret Retrying(bool read_only, AttemptFn&& attempt) {
    CallScope scope(*this);
    // A lookup's channel spent the whole deadline: nothing is tried, and
    // nothing about the target is learned.
    if (Expired()) return ErrorCode::RPC_FAIL;
    RetryBackoff backoff(deadline.value_or(Clock::time_point::max()));
    bool dropped_before = false;
    while (true) {
      bool sent = false;
      bool disconnected = false;
      Ret r = attempt(&sent, &disconnected);
      AttemptReport report{CodeOf(r), sent, read_only, target.follows_leader()};
      Steer(&report);
      report.first_drop = disconnected && !std::exchange(dropped_before, true);
      const NextStep next = NextAfter(report);
      if (next == NextStep::kReturn) return r;
      if (next == NextStep::kRetryAfterPause && !Pause(backoff)) return r;
      if (next == NextStep::kRetryNow && Expired()) return r;
    }
  }

  // Where the next attempt goes after `report`'s: the leader a NOT_LEADER
  // answer named (one hop, MasterTarget::FollowHint); back from a hinted
  // address that failed (LeaveHint); or, following the leader, to etcd
  // after NOT_LEADER or a transport failure (Suspect).
  void Steer(AttemptReport* report) {
    const ErrorCode code = report->code;
    if (code == ErrorCode::NOT_LEADER && target.FollowHint(hint)) {
      Forget();
      report->followed_hint = true;
    } else if (target.hinted() && AbandonsHint(code)) {
      if (target.LeaveHint()) Forget();
      report->left_hint = true;
    } else if (ShouldReResolve(code)) {
      target.Suspect();
    }
  }

  // Waits the backoff's next pause on the thread's event loop (a timer,
  // bounded by the deadline); false when no time is left for an attempt.
  bool Pause(RetryBackoff& backoff) {
    if (backoff.Expired(Clock::now())) return false;
    const int64_t ms = backoff.Next(Clock::now()).count();
    Timer().afterDelay(ms * kj::MILLISECONDS).wait(io().waitScope);
    return !backoff.Expired(Clock::now());
  }

  // The lookup channel, while it is usable (null: off, or the master does
  // not speak it).
  // Following the leader, the channel goes to the resolved leader, and is
  // not used while none is resolved or it is suspect (the Cap'n Proto call
  // resolves it).
  LookupClient* Lookup() {
    if (!options.lookup_channel || lookup_unsupported || target.needs_refresh()) return nullptr;
    if (!lookup) {
      lookup = std::make_unique<LookupClient>(LookupClientOptions{
          target.address(), options.token, options.call_timeout_ms, options.reply_poll_us});
    }
    return lookup.get();
  }

  // Runs `call(channel, deadline)` over the lookup channel; on a transport
  // failure there (the leader is then suspect), or a NOT_LEADER answer
  // while following hints (the channel's answer names no leader; the Cap'n
  // Proto call asks the same master, whose answer does), `fallback()` (the
  // Cap'n Proto call, which re-resolves and retries) answers instead. Both
  // share one deadline: a call takes at most call_timeout_ms in all. A
  // channel that never answered means the master does not speak it: not
  // tried again (until the leader changes). A call that changes state
  // (`read_only` false) whose request may have reached the master
  // (LookupClient::request_sent) is not repeated after a transport failure,
  // as Cap'n Proto does not repeat it (rpc/leader_retry.h): RPC_FAIL.
  template <typename Ret, typename ChannelCall, typename Fallback>
  Ret Framed(bool read_only, ChannelCall&& call, Fallback&& fallback) {
    CallScope scope(*this);
    if (LookupClient* channel = Lookup()) {
      Ret r = call(*channel, deadline);
      const ErrorCode code = CodeOf(r);
      if (code == ErrorCode::OK) return r;
      if (code == ErrorCode::NOT_LEADER && target.follows_hints()) return fallback();
      if (code != ErrorCode::RPC_FAIL) return r;
      if (target.follows_leader()) target.Suspect();
      if (!channel->ever_answered()) lookup_unsupported = true;
      if (!read_only && channel->request_sent()) return r;
    }
    return fallback();
  }

  MasterClientOptions options;
  MasterTarget target;
  // The deadline of the call in progress (CallScope).
  std::optional<Clock::time_point> deadline;
  // The leader the last attempt's NOT_LEADER answer named ("" : none).
  std::string hint;
  std::unique_ptr<LookupClient> lookup;
  bool lookup_unsupported = false;
  ThreadIo* tio;
  kj::Own<kj::NetworkAddress> address;
  kj::Own<Connection> conn;
};

namespace {

// Whole-call code of a reply: OK, the master's error, or RPC_FAIL is never
// produced here (transport errors are handled by Call()).
template <typename Reader>
ErrorCode ReplyCode(Reader r) {
  return CodeFromWire(r.getCode());
}

template <typename Params>
void SetTenantKey(Params& p, std::string_view tenant, std::string_view key) {
  CopyText(p.initTenant(tenant.size()), tenant);
  CopyText(p.initKey(key.size()), key);
}

Result<std::vector<ErrorCode>> DecodeCodes(capnp::List<int32_t>::Reader codes, size_t expected) {
  if (codes.size() != expected) return ErrorCode::RPC_FAIL;
  std::vector<ErrorCode> out;
  out.reserve(codes.size());
  for (int32_t c : codes) out.push_back(CodeFromWire(c));
  return out;
}

// One Result<T> per reply item, in request order: the item's own code, or
// the value `decode(item, &value)` fills in. RPC_FAIL for a reply with the
// wrong number of items or an item that does not decode.
template <typename T, typename List, typename Decode>
Result<std::vector<Result<T>>> DecodeItems(List items, size_t expected, Decode decode) {
  if (items.size() != expected) return ErrorCode::RPC_FAIL;
  std::vector<Result<T>> out;
  out.reserve(items.size());
  for (auto item : items) {
    ErrorCode code = CodeFromWire(item.getCode());
    if (code != ErrorCode::OK) {
      out.emplace_back(code);
      continue;
    }
    T value{};
    if (decode(item, &value) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
    out.emplace_back(std::move(value));
  }
  return out;
}

Result<std::vector<std::string>> DecodeKeys(capnp::List<capnp::Text>::Reader keys) {
  std::vector<std::string> out;
  if (rpcconv::DecodeTexts(keys, keys.size(), &out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  return out;
}

}  // namespace

MasterClient::MasterClient(MasterClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

MasterClient::~MasterClient() = default;

const UUID& MasterClient::client_id() const { return impl_->options.client_id; }

ErrorCode MasterClient::Connect() {
  return impl_->Retrying<ErrorCode>(true, [&](bool* sent, bool* disconnected) {
    *sent = false;
    *disconnected = false;
    return impl_->EnsureConnected();
  });
}

std::string MasterClient::master_address() const { return impl_->target.address(); }

const std::string& MasterClient::cluster_id() const { return impl_->target.cluster_id(); }

// --- segments and clients -----------------------------------------------------

ErrorCode MasterClient::MountSegment(const Segment& segment) {
  return impl_->Call<ErrorCode>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.mountSegmentRequest(
            capnp::MessageSize{32 + (segment.name.size() + segment.endpoint.size() +
                                     segment.protocol.size() + segment.rkey.size()) / 8,
                               0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        rpcconv::Encode(segment, req.initSegment());
        return req;
      },
      [](auto r) { return ReplyCode(r); });
}

namespace {
// A (clientId, segmentId) request: unmountSegment's and drainSegment's.
template <typename Request>
Request WithSegment(Request req, const UUID& client_id, const UUID& segment_id) {
  rpcconv::Encode(client_id, req.initClientId());
  rpcconv::Encode(segment_id, req.initSegmentId());
  return req;
}
}  // namespace

ErrorCode MasterClient::UnmountSegment(const UUID& segment_id) {
  return impl_->Call<ErrorCode>(
      false,
      [&](wire::MasterService::Client& m) {
        return WithSegment(m.unmountSegmentRequest(capnp::MessageSize{16, 0}),
                           impl_->options.client_id, segment_id);
      },
      [](auto r) { return ReplyCode(r); });
}

ErrorCode MasterClient::DrainSegment(const UUID& segment_id) {
  return impl_->Call<ErrorCode>(
      false,
      [&](wire::MasterService::Client& m) {
        return WithSegment(m.drainSegmentRequest(capnp::MessageSize{16, 0}),
                           impl_->options.client_id, segment_id);
      },
      [](auto r) { return ReplyCode(r); });
}

Result<PingResponse> MasterClient::Ping() {
  using Ret = Result<PingResponse>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.pingRequest(capnp::MessageSize{8, 0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        PingResponse out;
        out.view_version = r.getViewVersion();
        if (rpcconv::DecodeEnum(r.getStatus(), &out.status) != ErrorCode::OK) {
          return ErrorCode::RPC_FAIL;
        }
        return out;
      });
}

ErrorCode MasterClient::MountLocalDisk(bool enable_offloading, std::string_view endpoint) {
  return impl_->Call<ErrorCode>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.mountLocalDiskRequest(capnp::MessageSize{16 + endpoint.size() / 8, 0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        req.setEnableOffloading(enable_offloading);
        CopyText(req.initEndpoint(endpoint.size()), endpoint);
        return req;
      },
      [](auto r) { return ReplyCode(r); });
}

// --- puts ---------------------------------------------------------------------

Result<std::vector<ReplicaDescriptor>> MasterClient::PutStart(std::string_view tenant,
                                                              std::string_view key, uint64_t size,
                                                              const PutConfig& config) {
  using Ret = Result<std::vector<ReplicaDescriptor>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.PutStart(impl_->options.client_id, tenant, key, size, config, deadline);
      },
      [&] {
        return impl_->Call<Ret>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req =
                  m.putStartRequest(capnp::MessageSize{32 + (tenant.size() + key.size()) / 8, 0});
              rpcconv::Encode(impl_->options.client_id, req.initClientId());
              SetTenantKey(req, tenant, key);
              req.setSize(size);
              rpcconv::Encode(config, req.initConfig());
              return req;
            },
            [](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              std::vector<ReplicaDescriptor> out;
              if (rpcconv::DecodeReplicas(r.getReplicas(), &out) != ErrorCode::OK) {
                return ErrorCode::RPC_FAIL;
              }
              return out;
            });
      });
}

ErrorCode MasterClient::PutEnd(std::string_view tenant, std::string_view key, ReplicaType type,
                               std::optional<uint64_t> checksum) {
  return impl_->Framed<ErrorCode>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.PutFinish(true, impl_->options.client_id, tenant, key, type, deadline, checksum);
      },
      [&] {
        return impl_->Call<ErrorCode>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req =
                  m.putEndRequest(capnp::MessageSize{16 + (tenant.size() + key.size()) / 8, 0});
              rpcconv::Encode(impl_->options.client_id, req.initClientId());
              SetTenantKey(req, tenant, key);
              req.setType(rpcconv::EncodeEnum(type));
              req.setHasChecksum(checksum.has_value());
              req.setChecksum(checksum.value_or(0));
              return req;
            },
            [](auto r) { return ReplyCode(r); });
      });
}

Result<PutReservationGrant> MasterClient::ReservePut(std::string_view tenant, uint64_t size,
                                                     const PutConfig& config) {
  using Ret = Result<PutReservationGrant>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.ReservePut(impl_->options.client_id, tenant, size, config, deadline);
      },
      []() -> Ret { return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS; });
}

uint64_t MasterClient::ChannelConnection() {
  return impl_->lookup ? impl_->lookup->IntactConnection() : 0;
}

Result<std::optional<PutReservationGrant>> MasterClient::CommitPut(std::string_view tenant,
                                                                   std::string_view key,
                                                                   uint64_t reservation,
                                                                   const PutConfig& config,
                                                                   bool renew) {
  using Ret = Result<std::optional<PutReservationGrant>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.CommitPut(impl_->options.client_id, tenant, key, reservation, renew, config,
                           deadline);
      },
      []() -> Ret { return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS; });
}

Result<std::vector<PutReservationGrant>> MasterClient::BatchReservePut(
    std::string_view tenant, const std::vector<uint64_t>& sizes, const PutConfig& config) {
  using Ret = Result<std::vector<PutReservationGrant>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.BatchReservePut(impl_->options.client_id, tenant, sizes, config, deadline);
      },
      []() -> Ret { return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS; });
}

Result<std::vector<Result<std::optional<PutReservationGrant>>>> MasterClient::BatchCommitPut(
    std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& reservations, const std::vector<uint64_t>& checksums,
    const PutConfig& config, bool renew) {
  using Ret = Result<std::vector<Result<std::optional<PutReservationGrant>>>>;
  if (reservations.size() != keys.size() ||
      (!checksums.empty() && checksums.size() != keys.size())) {
    return ErrorCode::INVALID_PARAMS;
  }
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.BatchCommitPut(impl_->options.client_id, tenant, keys, reservations, checksums,
                                renew, config, deadline);
      },
      []() -> Ret { return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS; });
}

ErrorCode MasterClient::PutRevoke(std::string_view tenant, std::string_view key,
                                  ReplicaType type) {
  return impl_->Framed<ErrorCode>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.PutFinish(false, impl_->options.client_id, tenant, key, type, deadline);
      },
      [&] {
        return impl_->Call<ErrorCode>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req =
                  m.putRevokeRequest(capnp::MessageSize{16 + (tenant.size() + key.size()) / 8, 0});
              rpcconv::Encode(impl_->options.client_id, req.initClientId());
              SetTenantKey(req, tenant, key);
              req.setType(rpcconv::EncodeEnum(type));
              return req;
            },
            [](auto r) { return ReplyCode(r); });
      });
}

// --- reads --------------------------------------------------------------------

Result<GetReplicaListResponse> MasterClient::GetReplicaList(std::string_view tenant,
                                                            std::string_view key) {
  using Ret = Result<GetReplicaListResponse>;
  return impl_->Framed<Ret>(
      true, [&](LookupClient& c, auto deadline) { return c.GetReplicaList(tenant, key, deadline); },
      [&] { return CapnpGetReplicaList(tenant, key); });
}

Result<GetReplicaListResponse> MasterClient::CapnpGetReplicaList(std::string_view tenant,
                                                                 std::string_view key) {
  using Ret = Result<GetReplicaListResponse>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.getReplicaListRequest(
            capnp::MessageSize{8 + (tenant.size() + key.size()) / 8, 0});
        SetTenantKey(req, tenant, key);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        GetReplicaListResponse out;
        if (rpcconv::Decode(r.getResponse(), &out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
        return out;
      });
}

Result<bool> MasterClient::ExistKey(std::string_view tenant, std::string_view key) {
  using Ret = Result<bool>;
  return impl_->Framed<Ret>(
      true, [&](LookupClient& c, auto deadline) { return c.ExistKey(tenant, key, deadline); },
      [&] {
        return impl_->Call<Ret>(
            true,
            [&](wire::MasterService::Client& m) {
              auto req =
                  m.existKeyRequest(capnp::MessageSize{8 + (tenant.size() + key.size()) / 8, 0});
              SetTenantKey(req, tenant, key);
              return req;
            },
            [](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              return static_cast<bool>(r.getExists());
            });
      });
}

Result<ObjectInfo> MasterClient::Stat(std::string_view tenant, std::string_view key) {
  using Ret = Result<ObjectInfo>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.statRequest(capnp::MessageSize{8 + (tenant.size() + key.size()) / 8, 0});
        SetTenantKey(req, tenant, key);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        ObjectInfo out;
        if (rpcconv::Decode(r.getInfo(), &out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
        return out;
      });
}

Result<std::vector<std::string>> MasterClient::ListKeys(std::string_view tenant,
                                                        std::string_view prefix, uint64_t limit) {
  using Ret = Result<std::vector<std::string>>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req =
            m.listKeysRequest(capnp::MessageSize{8 + (tenant.size() + prefix.size()) / 8, 0});
        CopyText(req.initTenant(tenant.size()), tenant);
        CopyText(req.initPrefix(prefix.size()), prefix);
        req.setLimit(limit);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return DecodeKeys(r.getKeys());
      });
}

Result<uint64_t> MasterClient::CountKeys(std::string_view tenant, bool all_tenants) {
  using Ret = Result<uint64_t>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.countKeysRequest(capnp::MessageSize{8 + tenant.size() / 8, 0});
        CopyText(req.initTenant(tenant.size()), tenant);
        req.setAllTenants(all_tenants);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return static_cast<uint64_t>(r.getCount());
      });
}

Result<std::vector<std::string>> MasterClient::GroupMembers(std::string_view tenant,
                                                            std::string_view group_id) {
  using Ret = Result<std::vector<std::string>>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.groupMembersRequest(
            capnp::MessageSize{8 + (tenant.size() + group_id.size()) / 8, 0});
        CopyText(req.initTenant(tenant.size()), tenant);
        CopyText(req.initGroupId(group_id.size()), group_id);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return DecodeKeys(r.getKeys());
      });
}

// --- removal ------------------------------------------------------------------

ErrorCode MasterClient::Remove(std::string_view tenant, std::string_view key, bool force) {
  return impl_->Framed<ErrorCode>(
      false, [&](LookupClient& c, auto deadline) { return c.Remove(tenant, key, force, deadline); },
      [&] {
        return impl_->Call<ErrorCode>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req =
                  m.removeRequest(capnp::MessageSize{8 + (tenant.size() + key.size()) / 8, 0});
              SetTenantKey(req, tenant, key);
              req.setForce(force);
              return req;
            },
            [](auto r) { return ReplyCode(r); });
      });
}

Result<uint64_t> MasterClient::RemoveAll(std::string_view tenant, bool all_tenants, bool force) {
  using Ret = Result<uint64_t>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.removeAllRequest(capnp::MessageSize{8 + tenant.size() / 8, 0});
        CopyText(req.initTenant(tenant.size()), tenant);
        req.setAllTenants(all_tenants);
        req.setForce(force);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return static_cast<uint64_t>(r.getRemoved());
      });
}

Result<uint64_t> MasterClient::RemoveByRegex(std::string_view tenant, std::string_view pattern,
                                             bool force) {
  using Ret = Result<uint64_t>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.removeByRegexRequest(
            capnp::MessageSize{8 + (tenant.size() + pattern.size()) / 8, 0});
        CopyText(req.initTenant(tenant.size()), tenant);
        CopyText(req.initPattern(pattern.size()), pattern);
        req.setForce(force);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return static_cast<uint64_t>(r.getRemoved());
      });
}

// --- batches ------------------------------------------------------------------

Result<std::vector<Result<std::vector<ReplicaDescriptor>>>> MasterClient::BatchPutStart(
    std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const PutConfig& config,
    const std::vector<uint64_t>& checksums) {
  using Item = Result<std::vector<ReplicaDescriptor>>;
  using Ret = Result<std::vector<Item>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.BatchPutStart(impl_->options.client_id, tenant, keys, sizes, config, checksums,
                               deadline);
      },
      [&] {
        return impl_->Call<Ret>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req = m.batchPutStartRequest(capnp::MessageSize{
                  KeysWords(keys) + sizes.size() + checksums.size() + 32 + tenant.size() / 8, 0});
              rpcconv::Encode(impl_->options.client_id, req.initClientId());
              CopyText(req.initTenant(tenant.size()), tenant);
              rpcconv::EncodeTexts(keys, req.initKeys(keys.size()));
              auto s = req.initSizes(sizes.size());
              for (size_t i = 0; i < sizes.size(); ++i) s.set(i, sizes[i]);
              rpcconv::Encode(config, req.initConfig());
              SetChecksums(req, checksums);
              return req;
            },
            [&](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              return DecodeItems<std::vector<ReplicaDescriptor>>(
                  r.getResults(), keys.size(), [](auto item, std::vector<ReplicaDescriptor>* out) {
                    return rpcconv::DecodeReplicas(item.getReplicas(), out);
                  });
            });
      });
}

Result<std::vector<ErrorCode>> MasterClient::BatchPutEnd(std::string_view tenant,
                                                         const std::vector<std::string>& keys,
                                                         const std::vector<uint64_t>& checksums) {
  using Ret = Result<std::vector<ErrorCode>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.BatchPutFinish(true, impl_->options.client_id, tenant, keys, deadline, checksums);
      },
      [&] {
        return impl_->Call<Ret>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req = m.batchPutEndRequest(
                  capnp::MessageSize{KeysWords(keys) + tenant.size() / 8 + checksums.size(), 0});
              rpcconv::Encode(impl_->options.client_id, req.initClientId());
              CopyText(req.initTenant(tenant.size()), tenant);
              rpcconv::EncodeTexts(keys, req.initKeys(keys.size()));
              SetChecksums(req, checksums);
              return req;
            },
            [&](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              return DecodeCodes(r.getCodes(), keys.size());
            });
      });
}

Result<std::vector<ErrorCode>> MasterClient::BatchPutRevoke(
    std::string_view tenant, const std::vector<std::string>& keys) {
  using Ret = Result<std::vector<ErrorCode>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) {
        return c.BatchPutFinish(false, impl_->options.client_id, tenant, keys, deadline);
      },
      [&] {
        return impl_->Call<Ret>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req = m.batchPutRevokeRequest(
                  capnp::MessageSize{KeysWords(keys) + tenant.size() / 8, 0});
              rpcconv::Encode(impl_->options.client_id, req.initClientId());
              CopyText(req.initTenant(tenant.size()), tenant);
              rpcconv::EncodeTexts(keys, req.initKeys(keys.size()));
              return req;
            },
            [&](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              return DecodeCodes(r.getCodes(), keys.size());
            });
      });
}

Result<std::vector<Result<GetReplicaListResponse>>> MasterClient::BatchGetReplicaList(
    std::string_view tenant, const std::vector<std::string>& keys) {
  using Ret = Result<std::vector<Result<GetReplicaListResponse>>>;
  return impl_->Framed<Ret>(
      true,
      [&](LookupClient& c, auto deadline) { return c.BatchGetReplicaList(tenant, keys, deadline); },
      [&] { return CapnpBatchGetReplicaList(tenant, keys); });
}

Result<std::vector<Result<GetReplicaListResponse>>> MasterClient::CapnpBatchGetReplicaList(
    std::string_view tenant, const std::vector<std::string>& keys) {
  using Item = Result<GetReplicaListResponse>;
  using Ret = Result<std::vector<Item>>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.batchGetReplicaListRequest(
            capnp::MessageSize{KeysWords(keys) + tenant.size() / 8, 0});
        CopyText(req.initTenant(tenant.size()), tenant);
        rpcconv::EncodeTexts(keys, req.initKeys(keys.size()));
        return req;
      },
      [&](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return DecodeItems<GetReplicaListResponse>(
            r.getResults(), keys.size(), [](auto item, GetReplicaListResponse* out) {
              return rpcconv::Decode(item.getResponse(), out);
            });
      });
}

Result<std::vector<Result<bool>>> MasterClient::BatchExistKey(
    std::string_view tenant, const std::vector<std::string>& keys) {
  using Ret = Result<std::vector<Result<bool>>>;
  return impl_->Framed<Ret>(
      true, [&](LookupClient& c, auto deadline) { return c.BatchExistKey(tenant, keys, deadline); },
      [&] {
        return impl_->Call<Ret>(
            true,
            [&](wire::MasterService::Client& m) {
              auto req = m.batchExistKeyRequest(
                  capnp::MessageSize{KeysWords(keys) + tenant.size() / 8, 0});
              CopyText(req.initTenant(tenant.size()), tenant);
              rpcconv::EncodeTexts(keys, req.initKeys(keys.size()));
              return req;
            },
            [&](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              return DecodeItems<bool>(r.getResults(), keys.size(), [](auto item, bool* out) {
                *out = item.getExists();
                return ErrorCode::OK;
              });
            });
      });
}

Result<std::vector<ErrorCode>> MasterClient::BatchRemove(std::string_view tenant,
                                                         const std::vector<std::string>& keys,
                                                         bool force) {
  using Ret = Result<std::vector<ErrorCode>>;
  return impl_->Framed<Ret>(
      false,
      [&](LookupClient& c, auto deadline) { return c.BatchRemove(tenant, keys, force, deadline); },
      [&] {
        return impl_->Call<Ret>(
            false,
            [&](wire::MasterService::Client& m) {
              auto req =
                  m.batchRemoveRequest(capnp::MessageSize{KeysWords(keys) + tenant.size() / 8, 0});
              CopyText(req.initTenant(tenant.size()), tenant);
              rpcconv::EncodeTexts(keys, req.initKeys(keys.size()));
              req.setForce(force);
              return req;
            },
            [&](auto r) -> Ret {
              ErrorCode code = ReplyCode(r);
              if (code != ErrorCode::OK) return code;
              return DecodeCodes(r.getCodes(), keys.size());
            });
      });
}

// --- offload ------------------------------------------------------------------

Result<std::vector<OffloadTask>> MasterClient::OffloadHeartbeat(uint64_t max_tasks) {
  using Ret = Result<std::vector<OffloadTask>>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.offloadHeartbeatRequest(capnp::MessageSize{8, 0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        req.setMaxTasks(max_tasks);
        return req;
      },
      [&](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        auto tasks = r.getTasks();
        if (tasks.size() > max_tasks) return ErrorCode::RPC_FAIL;
        std::vector<OffloadTask> out(tasks.size());
        for (unsigned i = 0; i < tasks.size(); ++i) {
          if (rpcconv::Decode(tasks[i], &out[i]) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
        }
        return out;
      });
}

Result<std::vector<ErrorCode>> MasterClient::NotifyOffloadSuccess(
    const std::vector<OffloadedObject>& items) {
  using Ret = Result<std::vector<ErrorCode>>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        size_t words = 16;
        for (const auto& item : items) {
          words += 12 + (item.tenant.size() + item.key.size() +
                         item.location.transport_endpoint.size()) / 8;
        }
        auto req = m.notifyOffloadSuccessRequest(capnp::MessageSize{words, 0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        auto list = req.initItems(items.size());
        for (size_t i = 0; i < items.size(); ++i) rpcconv::Encode(items[i], list[i]);
        return req;
      },
      [&](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return DecodeCodes(r.getCodes(), items.size());
      });
}

// Words for a list of (tenant, key) items with `fixed` words each.
template <typename T>
static size_t ItemWords(const std::vector<T>& items, size_t fixed) {
  size_t words = 16;
  for (const T& item : items) words += fixed + (item.tenant.size() + item.key.size()) / 8;
  return words;
}

// A node's list call: its client id and the items.
template <typename Request, typename T>
static Request WithItems(Request req, const UUID& client_id, const std::vector<T>& items) {
  rpcconv::Encode(client_id, req.initClientId());
  rpcconv::EncodeList(items, req.initItems(items.size()));
  return req;
}

Result<std::vector<PromoteGrant>> MasterClient::PromoteStart(
    const std::vector<PromoteRequest>& items) {
  using Ret = Result<std::vector<PromoteGrant>>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        return WithItems(m.promoteStartRequest(capnp::MessageSize{ItemWords(items, 6), 0}),
                         impl_->options.client_id, items);
      },
      [&](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        std::vector<PromoteGrant> out;
        if (r.getGrants().size() != items.size() ||
            rpcconv::DecodeList(r.getGrants(), items.size(), &out) != ErrorCode::OK) {
          return ErrorCode::RPC_FAIL;
        }
        return out;
      });
}

Result<std::vector<ErrorCode>> MasterClient::PromoteEnd(const std::vector<PromoteResult>& items) {
  using Ret = Result<std::vector<ErrorCode>>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        return WithItems(m.promoteEndRequest(capnp::MessageSize{ItemWords(items, 6), 0}),
                         impl_->options.client_id, items);
      },
      [&](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return DecodeCodes(r.getCodes(), items.size());
      });
}

Result<std::vector<ErrorCode>> MasterClient::NotifyOffloadFailure(
    const std::vector<OffloadFailure>& items) {
  using Ret = Result<std::vector<ErrorCode>>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        return WithItems(m.notifyOffloadFailureRequest(capnp::MessageSize{ItemWords(items, 6), 0}),
                         impl_->options.client_id, items);
      },
      [&](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return DecodeCodes(r.getCodes(), items.size());
      });
}

ErrorCode MasterClient::EvictDiskReplica(std::string_view tenant, std::string_view key) {
  return impl_->Call<ErrorCode>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.evictDiskReplicaRequest(
            capnp::MessageSize{16 + (tenant.size() + key.size()) / 8, 0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        SetTenantKey(req, tenant, key);
        return req;
      },
      [](auto r) { return ReplyCode(r); });
}

// --- copy and move tasks -------------------------------------------------------

namespace {

// The tenant and task id of a task call; `client` too for the executor's
// calls (TaskStart, TaskEnd).
template <typename Params>
void SetTask(Params& p, const UUID* client, std::string_view tenant, const UUID& id) {
  if constexpr (requires { p.initClientId(); }) {
    if (client != nullptr) rpcconv::Encode(*client, p.initClientId());
  }
  CopyText(p.initTenant(tenant.size()), tenant);
  rpcconv::Encode(id, p.initTaskId());
}

}  // namespace

Result<UUID> MasterClient::CreateTask(std::string_view tenant, const TaskSpec& spec) {
  using Ret = Result<UUID>;
  size_t words = 24 + (tenant.size() + spec.key.size() + spec.source.size()) / 8;
  for (const std::string& t : spec.targets) words += 2 + t.size() / 8;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.createTaskRequest(capnp::MessageSize{words, 0});
        rpcconv::Encode(impl_->options.client_id, req.initClientId());
        SetTenantKey(req, tenant, spec.key);
        req.setType(rpcconv::EncodeEnum(spec.type));
        CopyText(req.initSource(spec.source.size()), spec.source);
        rpcconv::EncodeTexts(spec.targets, req.initTargets(spec.targets.size()));
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        return rpcconv::Decode(r.getTaskId());
      });
}

Result<TaskInfo> MasterClient::QueryTask(std::string_view tenant, const UUID& id) {
  using Ret = Result<TaskInfo>;
  return impl_->Call<Ret>(
      true,
      [&](wire::MasterService::Client& m) {
        auto req = m.queryTaskRequest(capnp::MessageSize{16 + tenant.size() / 8, 0});
        SetTask(req, nullptr, tenant, id);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        TaskInfo info;
        if (rpcconv::Decode(r.getTask(), &info) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
        return info;
      });
}

Result<TaskGrant> MasterClient::TaskStart(std::string_view tenant, const UUID& id) {
  using Ret = Result<TaskGrant>;
  return impl_->Call<Ret>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.taskStartRequest(capnp::MessageSize{24 + tenant.size() / 8, 0});
        SetTask(req, &impl_->options.client_id, tenant, id);
        return req;
      },
      [](auto r) -> Ret {
        ErrorCode code = ReplyCode(r);
        if (code != ErrorCode::OK) return code;
        TaskGrant grant;
        grant.key.assign(r.getKey().cStr(), r.getKey().size());
        grant.size = r.getSize();
        if (rpcconv::DecodeReplicas(r.getReplicas(), &grant.targets) != ErrorCode::OK) {
          return ErrorCode::RPC_FAIL;
        }
        return grant;
      });
}

ErrorCode MasterClient::TaskEnd(std::string_view tenant, const UUID& id, ErrorCode copied) {
  return impl_->Call<ErrorCode>(
      false,
      [&](wire::MasterService::Client& m) {
        auto req = m.taskEndRequest(capnp::MessageSize{24 + tenant.size() / 8, 0});
        SetTask(req, &impl_->options.client_id, tenant, id);
        req.setCopied(static_cast<int32_t>(copied));
        return req;
      },
      [](auto r) { return ReplyCode(r); });
}

}  // namespace shelfmark
