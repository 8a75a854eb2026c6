#include "transport/verbs_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/host_port.h"
#include "transport/proof_parts.h"

namespace shelfmark {

// What the connecting side needs from one rdma_cm event (copied before ack).
struct VerbsCmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  std::string data;  // the private data (a reject's or an accept's)
  std::optional<VerbsRejectReason> reject_reason;
};

namespace {

constexpr uint8_t kMagic[4] = {'S', 'H', 'M', 'K'};
constexpr uint8_t kVersion = 2;  // 2: challenge-response instead of a token digest
constexpr uint8_t kKindHello = 1, kKindProof = 2;
constexpr uint32_t kClientInitiatorDepth = 64;  // outstanding READs per QP we ask for
constexpr int kIbRejectNoListener = 8;          // IB_CM_REJ_INVALID_SERVICE_ID

using Steady = std::chrono::steady_clock;

void SetError(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
}

std::string Errno(std::string_view call) {
  return std::string(call) + ": " + std::strerror(errno);
}

void PutLe64(uint8_t* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe64(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | in[i];
  return v;
}

bool SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// Numeric or named host + port -> socket address (IPv4 preferred).
bool ResolveSockaddr(const std::string& host, uint16_t port, sockaddr_storage* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0 || list == nullptr) return false;
  const addrinfo* pick = list;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out, pick->ai_addr, pick->ai_addrlen);
  if (out->ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(out)->sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6*>(out)->sin6_port = htons(port);
  }
  freeaddrinfo(list);
  return true;
}

int64_t RemainingMs(Steady::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
  return std::max<int64_t>(0, left.count());
}

// Waits for the next event on a client's channel until `deadline`.
bool NextEvent(rdma_event_channel* channel, Steady::time_point deadline, VerbsCmEvent* out) {
  for (;;) {
    rdma_cm_event* event = nullptr;
    if (rdma_get_cm_event(channel, &event) == 0) {
      out->type = event->event;
      out->status = event->status;
      const auto& conn = event->param.conn;
      out->data.assign(static_cast<const char*>(conn.private_data),
                       conn.private_data != nullptr ? conn.private_data_len : 0);
      if (event->event == RDMA_CM_EVENT_REJECTED && out->data.size() >= 5 &&
          std::memcmp(out->data.data(), kMagic, 4) == 0) {
        out->reject_reason = static_cast<VerbsRejectReason>(out->data[4]);
      }
      rdma_ack_cm_event(event);
      return true;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    int64_t left = RemainingMs(deadline);
    if (left == 0) return false;
    pollfd pfd{channel->fd, POLLIN, 0};
    poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
  }
}

// Says in *error why `event` is not the `wanted` that was awaited.
void DescribeUnexpected(const VerbsCmEvent& event, std::string_view wanted,
                        const std::string& endpoint, std::string* error) {
  if (event.type == RDMA_CM_EVENT_REJECTED && event.reject_reason.has_value()) {
    switch (*event.reject_reason) {
      case VerbsRejectReason::kWrongToken:
        return SetError(error, "cluster token rejected by " + endpoint);
      case VerbsRejectReason::kStaleChallenge:
        return SetError(error, "connect request rejected by " + endpoint +
                                   " (stale challenge: replayed, expired or never issued)");
      default:
        return SetError(error, "connect request rejected by " + endpoint + " (bad request)");
    }
  }
  if (event.type == RDMA_CM_EVENT_REJECTED && event.status == kIbRejectNoListener) {
    return SetError(error, "connection refused by " + endpoint + " (no RDMA listener)");
  }
  SetError(error, "rdma_cm: " + std::string(rdma_event_str(event.type)) + " (status " +
                      std::to_string(event.status) + ") instead of " + std::string(wanted) +
                      " from " + endpoint);
}

// Waits for `want`; anything else (or the deadline) is a failure described in *error.
bool AwaitEvent(rdma_event_channel* channel, rdma_cm_event_type want, Steady::time_point deadline,
                const std::string& endpoint, std::string* error) {
  VerbsCmEvent event;
  if (!NextEvent(channel, deadline, &event)) {
    SetError(error, "rdma_cm: timed out waiting for " + std::string(rdma_event_str(want)) +
                        " from " + endpoint);
    return false;
  }
  if (event.type == want) return true;
  DescribeUnexpected(event, rdma_event_str(want), endpoint, error);
  return false;
}

bool HasMagic(const uint8_t* in) { return std::memcmp(in, kMagic, 4) == 0; }

}  // namespace

// --- private data -----------------------------------------------------------

VerbsConnectData EncodeConnectRequest(const VerbsConnectRequest& request) {
  VerbsConnectData out{};
  std::memcpy(out.data(), kMagic, 4);
  out[4] = kVersion;
  if (const auto* hello = std::get_if<VerbsConnectHello>(&request)) {
    out[5] = kKindHello;
    PutLe64(out.data() + 8, hello->client_id.hi);
    PutLe64(out.data() + 16, hello->client_id.lo);
    std::memcpy(out.data() + 24, hello->client_nonce.data(), auth::kNonceBytes);
  } else {
    const auto& proof = std::get<VerbsConnectProof>(request);
    out[5] = kKindProof;
    PutLe64(out.data() + 8, proof.ticket);
    std::memcpy(out.data() + 16, proof.proof.data(), auth::kProofBytes);
  }
  return out;
}

std::optional<VerbsConnectRequest> DecodeConnectRequest(const void* data, size_t size) {
  static_assert(24 + auth::kNonceBytes <= kVerbsConnectDataSize);
  static_assert(16 + auth::kProofBytes <= kVerbsConnectDataSize);
  if (data == nullptr || size < kVerbsConnectDataSize) return std::nullopt;
  const auto* in = static_cast<const uint8_t*>(data);
  if (!HasMagic(in) || in[4] != kVersion) return std::nullopt;
  if (in[5] == kKindHello) {
    VerbsConnectHello hello;
    hello.client_id.hi = GetLe64(in + 8);
    hello.client_id.lo = GetLe64(in + 16);
    std::memcpy(hello.client_nonce.data(), in + 24, auth::kNonceBytes);
    return hello;
  }
  if (in[5] == kKindProof && GetLe64(in + 8) != 0) {
    VerbsConnectProof proof;
    proof.ticket = GetLe64(in + 8);
    std::memcpy(proof.proof.data(), in + 16, auth::kProofBytes);
    return proof;
  }
  return std::nullopt;
}

std::array<uint8_t, kVerbsChallengeSize> EncodeChallenge(const VerbsChallenge& challenge) {
  std::array<uint8_t, kVerbsChallengeSize> out{};
  std::memcpy(out.data(), kMagic, 4);
  out[4] = static_cast<uint8_t>(VerbsRejectReason::kChallenge);
  PutLe64(out.data() + 8, challenge.ticket);
  std::memcpy(out.data() + 16, challenge.node_nonce.data(), auth::kNonceBytes);
  return out;
}

std::optional<VerbsChallenge> DecodeChallenge(const void* data, size_t size) {
  if (data == nullptr || size < kVerbsChallengeSize) return std::nullopt;
  const auto* in = static_cast<const uint8_t*>(data);
  if (!HasMagic(in) || in[4] != static_cast<uint8_t>(VerbsRejectReason::kChallenge) ||
      GetLe64(in + 8) == 0) {
    return std::nullopt;
  }
  VerbsChallenge challenge;
  challenge.ticket = GetLe64(in + 8);
  std::memcpy(challenge.node_nonce.data(), in + 16, auth::kNonceBytes);
  return challenge;
}

std::array<uint8_t, kVerbsAcceptSize> EncodeAcceptProof(const auth::Proof& proof) {
  std::array<uint8_t, kVerbsAcceptSize> out{};
  std::memcpy(out.data(), kMagic, 4);
  out[4] = kVersion;
  std::memcpy(out.data() + 8, proof.data(), auth::kProofBytes);
  return out;
}

std::optional<auth::Proof> DecodeAcceptProof(const void* data, size_t size) {
  if (data == nullptr || size < kVerbsAcceptSize) return std::nullopt;
  const auto* in = static_cast<const uint8_t*>(data);
  if (!HasMagic(in) || in[4] != kVersion) return std::nullopt;
  auth::Proof proof;
  std::memcpy(proof.data(), in + 8, auth::kProofBytes);
  return proof;
}

auth::Proof VerbsClientProof(std::string_view token, const VerbsChallenge& challenge,
                             const VerbsConnectHello& hello) {
  return auth::Prove(token, "verbs/client",
                     {auth::Bytes(challenge.node_nonce), auth::Bytes(hello.client_nonce),
                      Le64Part(challenge.ticket), UuidPart(hello.client_id)});
}

auth::Proof VerbsNodeProof(std::string_view token, const VerbsChallenge& challenge,
                           const VerbsConnectHello& hello) {
  return auth::Prove(token, "verbs/node",
                     {auth::Bytes(challenge.node_nonce), auth::Bytes(hello.client_nonce),
                      Le64Part(challenge.ticket), UuidPart(hello.client_id)});
}

// --- node side ------------------------------------------------------------------

Result<std::unique_ptr<VerbsListener>> VerbsListener::Start(VerbsDevice* device,
                                                            const std::string& ip, uint16_t port,
                                                            std::string_view cluster_token,
                                                            std::string* error) {
  std::unique_ptr<VerbsListener> self(new VerbsListener());
  self->device_ = device;
  self->token_ = std::string(cluster_token);
  sockaddr_storage addr{};
  if (!ResolveSockaddr(ip, port, &addr)) {
    SetError(error, "bad RDMA listen address '" + ip + "'");
    return ErrorCode::INVALID_PARAMS;
  }
  self->channel_ = rdma_create_event_channel();
  self->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (self->channel_ == nullptr || self->wake_fd_ < 0 || !SetNonBlocking(self->channel_->fd)) {
    SetError(error, Errno("rdma_create_event_channel"));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (rdma_create_id(self->channel_, &self->listen_id_, nullptr, RDMA_PS_TCP) != 0) {
    SetError(error, Errno("rdma_create_id"));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (rdma_bind_addr(self->listen_id_, reinterpret_cast<sockaddr*>(&addr)) != 0) {
    SetError(error, Errno("rdma_bind_addr " + ip + ":" + std::to_string(port)));
    return ErrorCode::INVALID_PARAMS;
  }
  if (self->listen_id_->verbs != nullptr && self->listen_id_->verbs != device->context()) {
    SetError(error, ip + " belongs to RDMA device " +
                        ibv_get_device_name(self->listen_id_->verbs->device) + ", not " +
                        device->name());
    return ErrorCode::INVALID_PARAMS;
  }
  if (rdma_listen(self->listen_id_, 64) != 0) {
    SetError(error, Errno("rdma_listen"));
    return ErrorCode::TRANSFER_FAIL;
  }
  self->port_ = ntohs(rdma_get_src_port(self->listen_id_));
  self->cq_ = ibv_create_cq(device->context(), 16, nullptr, nullptr, 0);
  if (self->cq_ == nullptr) {
    SetError(error, Errno("ibv_create_cq"));
    return ErrorCode::TRANSFER_FAIL;
  }
  self->thread_ = std::thread([raw = self.get()] { raw->Run(); });
  return self;
}

VerbsListener::~VerbsListener() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  std::map<rdma_cm_id*, bool> peers;
  {
    MutexLock lock(&mu_);
    peers.swap(peers_);
  }
  for (auto& [id, has_qp] : peers) {
    rdma_disconnect(id);  // the client sees DISCONNECTED (or its next op fails)
    if (has_qp) rdma_destroy_qp(id);
    rdma_destroy_id(id);
  }
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

size_t VerbsListener::live_peers() const {
  MutexLock lock(&mu_);
  return peers_.size();
}

void VerbsListener::Run() {
  for (;;) {
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    rdma_cm_event* event = nullptr;
    while (rdma_get_cm_event(channel_, &event) == 0) OnEvent(event);
  }
}

void VerbsListener::OnEvent(rdma_cm_event* event) {
  rdma_cm_id* id = event->id;
  rdma_cm_event_type type = event->event;
  if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
    OnConnectRequest(id, event->param.conn);
    rdma_ack_cm_event(event);
    bool kept;
    {
      MutexLock lock(&mu_);
      kept = peers_.count(id) != 0;
    }
    if (!kept) rdma_destroy_id(id);  // rejected: the id is ours to free, after the ack
    return;
  }
  rdma_ack_cm_event(event);
  switch (type) {
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      if (id != listen_id_) Release(id);
      break;
    default:
      break;  // ESTABLISHED, TIMEWAIT_EXIT: nothing to do
  }
}

void VerbsListener::OnConnectRequest(rdma_cm_id* id, const rdma_conn_param& param) {
  std::optional<VerbsConnectRequest> request =
      DecodeConnectRequest(param.private_data, param.private_data_len);
  if (!request.has_value()) return Reject(id, VerbsRejectReason::kBadRequest);
  if (const auto* hello = std::get_if<VerbsConnectHello>(&*request)) {
    // Step 1: a challenge (not counted as a rejection), remembering the hello.
    const VerbsConnectData bytes = EncodeConnectRequest(*hello);
    const ChallengeBook::Challenge issued =
        challenges_.Issue(std::string(bytes.begin(), bytes.end()));
    const auto data = EncodeChallenge({issued.ticket, issued.nonce});
    rdma_reject(id, data.data(), static_cast<uint8_t>(data.size()));
    return;
  }
  // Step 2: the ticket is forgotten here whatever follows.
  const auto& answer = std::get<VerbsConnectProof>(*request);
  std::optional<ChallengeBook::Issued> issued = challenges_.Take(answer.ticket);
  if (!issued.has_value()) {
    stale_.fetch_add(1);
    return Reject(id, VerbsRejectReason::kStaleChallenge);
  }
  std::optional<VerbsConnectRequest> remembered =
      DecodeConnectRequest(issued->context.data(), issued->context.size());
  if (!remembered.has_value() || !std::holds_alternative<VerbsConnectHello>(*remembered)) {
    return Reject(id, VerbsRejectReason::kBadRequest);  // never: the book holds what we put
  }
  const auto& hello = std::get<VerbsConnectHello>(*remembered);
  const VerbsChallenge challenge{answer.ticket, issued->nonce};
  if (!accept_any_proof_.load() &&
      !auth::ProofMatches(VerbsClientProof(token_, challenge, hello), auth::BytesOf(answer.proof))) {
    return Reject(id, VerbsRejectReason::kWrongToken);
  }
  Accept(id, param, VerbsNodeProof(token_, challenge, hello));
}

void VerbsListener::Accept(rdma_cm_id* id, const rdma_conn_param& param,
                           const auth::Proof& proof) {
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_;
  attr.recv_cq = cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = 1;  // the node never posts: clients read and write its segment
  attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  if (id->verbs != device_->context() || rdma_create_qp(id, device_->pd(), &attr) != 0) {
    rejected_.fetch_add(1);
    rdma_reject(id, nullptr, 0);
    return;
  }
  const auto data = EncodeAcceptProof(proof);
  rdma_conn_param accept{};
  accept.private_data = data.data();
  accept.private_data_len = static_cast<uint8_t>(data.size());
  const VerbsPortInfo& port = device_->port();
  accept.responder_resources = static_cast<uint8_t>(
      std::min<uint32_t>({param.responder_resources, port.max_qp_rd_atom, 255}));
  accept.initiator_depth = static_cast<uint8_t>(
      std::min<uint32_t>({param.initiator_depth, port.max_qp_init_rd_atom, 255}));
  accept.rnr_retry_count = 7;
  // Counted before rdma_accept: the client may finish its first transfer
  // before this thread runs again, and counters() must already show it.
  accepted_.fetch_add(1);
  if (rdma_accept(id, &accept) != 0) {
    accepted_.fetch_sub(1);
    rejected_.fetch_add(1);
    rdma_destroy_qp(id);
    return;
  }
  MutexLock lock(&mu_);
  peers_[id] = true;
}

void VerbsListener::Reject(rdma_cm_id* id, VerbsRejectReason reason) {
  rejected_.fetch_add(1);
  uint8_t data[5] = {kMagic[0], kMagic[1], kMagic[2], kMagic[3], static_cast<uint8_t>(reason)};
  rdma_reject(id, data, sizeof(data));
}

void VerbsListener::Release(rdma_cm_id* id) {
  bool has_qp;
  {
    MutexLock lock(&mu_);
    auto it = peers_.find(id);
    if (it == peers_.end()) return;
    has_qp = it->second;
    peers_.erase(it);
  }
  if (has_qp) rdma_destroy_qp(id);
  rdma_destroy_id(id);
}

// --- client side -------------------------------------------------------------------

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::Connect(
    const VerbsDevice& device, const VerbsConnectParams& params, std::string* error) {
  const auto deadline = Steady::now() + std::chrono::milliseconds(params.timeout_ms);
  // Step 1: a hello, answered by the node's challenge (in a reject).
  const VerbsConnectHello hello{params.client_id, auth::NewNonce()};
  VerbsChallenge challenge;
  {
    std::unique_ptr<VerbsConnection> first(new VerbsConnection());
    VerbsCmEvent answer;
    Result<bool> sent =
        first->Request(device, params, EncodeConnectRequest(hello), deadline, &answer, error);
    if (!sent.ok()) return sent.error();
    std::optional<VerbsChallenge> got =
        answer.type == RDMA_CM_EVENT_REJECTED
            ? DecodeChallenge(answer.data.data(), answer.data.size())
            : std::nullopt;
    if (!got.has_value()) {
      DescribeUnexpected(answer, "a challenge", params.endpoint, error);
      return ErrorCode::TRANSFER_FAIL;
    }
    challenge = *got;
  }
  // Step 2: the proof, on a new id; the accept carries the node's proof.
  VerbsConnectData proof = EncodeConnectRequest(
      VerbsConnectProof{challenge.ticket, VerbsClientProof(params.cluster_token, challenge, hello)});
  if (params.testing_sent_proof != nullptr) *params.testing_sent_proof = proof;
  if (params.testing_replay_proof.has_value()) proof = *params.testing_replay_proof;
  std::unique_ptr<VerbsConnection> self(new VerbsConnection());
  VerbsCmEvent answer;
  Result<bool> sent = self->Request(device, params, proof, deadline, &answer, error);
  if (!sent.ok()) return sent.error();
  if (answer.type != RDMA_CM_EVENT_ESTABLISHED) {
    DescribeUnexpected(answer, rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), params.endpoint, error);
    return ErrorCode::TRANSFER_FAIL;
  }
  self->established_ = true;  // from here the destructor disconnects
  std::optional<auth::Proof> node_proof = DecodeAcceptProof(answer.data.data(), answer.data.size());
  if (!node_proof.has_value() ||
      !auth::ProofMatches(VerbsNodeProof(params.cluster_token, challenge, hello),
                          auth::BytesOf(*node_proof))) {
    SetError(error, params.endpoint + " did not prove the cluster token");
    return ErrorCode::UNAUTHENTICATED;  // dropped unused: nothing was posted
  }
  return self;
}

Result<bool> VerbsConnection::Request(const VerbsDevice& device, const VerbsConnectParams& params,
                                      std::span<const uint8_t> data, Steady::time_point deadline,
                                      VerbsCmEvent* answer, std::string* error) {
  std::optional<HostPort> hp = ParseHostPort(params.endpoint);
  sockaddr_storage dst{};
  sockaddr_storage src{};
  if (!hp.has_value() || !ResolveSockaddr(hp->host, hp->port, &dst)) {
    SetError(error, "bad RDMA endpoint '" + params.endpoint + "'");
    return ErrorCode::INVALID_PARAMS;
  }
  bool bind_source = !params.source_ip.empty();
  if (bind_source && !ResolveSockaddr(params.source_ip, 0, &src)) {
    SetError(error, "bad RDMA source address '" + params.source_ip + "'");
    return ErrorCode::INVALID_PARAMS;
  }

  endpoint_ = params.endpoint;
  channel_ = rdma_create_event_channel();
  if (channel_ == nullptr || !SetNonBlocking(channel_->fd)) {
    SetError(error, Errno("rdma_create_event_channel"));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (rdma_create_id(channel_, &id_, nullptr, RDMA_PS_TCP) != 0) {
    id_ = nullptr;
    SetError(error, Errno("rdma_create_id"));
    return ErrorCode::TRANSFER_FAIL;
  }
  int step_ms = static_cast<int>(std::max<int64_t>(1, RemainingMs(deadline)));
  if (rdma_resolve_addr(id_, bind_source ? reinterpret_cast<sockaddr*>(&src) : nullptr,
                        reinterpret_cast<sockaddr*>(&dst), step_ms) != 0) {
    SetError(error, Errno("rdma_resolve_addr " + params.endpoint));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (!AwaitEvent(channel_, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, params.endpoint, error)) {
    return ErrorCode::TRANSFER_FAIL;
  }
  if (id_->verbs != device.context()) {
    SetError(error, "the route to " + params.endpoint + " leaves through RDMA device " +
                        (id_->verbs ? ibv_get_device_name(id_->verbs->device) : "?") +
                        ", not " + device.name());
    return ErrorCode::TRANSFER_FAIL;
  }
  step_ms = static_cast<int>(std::max<int64_t>(1, RemainingMs(deadline)));
  if (rdma_resolve_route(id_, step_ms) != 0) {
    SetError(error, Errno("rdma_resolve_route " + params.endpoint));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (!AwaitEvent(channel_, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, params.endpoint, error)) {
    return ErrorCode::TRANSFER_FAIL;
  }

  const VerbsPortInfo& port = device.port();
  send_depth_ = std::max<uint32_t>(1, std::min(params.send_depth, port.max_qp_wr));
  comp_channel_ = ibv_create_comp_channel(device.context());
  if (comp_channel_ == nullptr || !SetNonBlocking(comp_channel_->fd)) {
    SetError(error, Errno("ibv_create_comp_channel"));
    return ErrorCode::TRANSFER_FAIL;
  }
  cq_ = ibv_create_cq(device.context(), static_cast<int>(send_depth_ + 1), nullptr, comp_channel_,
                      0);
  if (cq_ == nullptr) {
    SetError(error, Errno("ibv_create_cq"));
    return ErrorCode::TRANSFER_FAIL;
  }
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_;
  attr.recv_cq = cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = send_depth_;
  attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id_, device.pd(), &attr) != 0) {
    SetError(error, Errno("rdma_create_qp"));
    return ErrorCode::TRANSFER_FAIL;
  }

  rdma_conn_param conn{};
  conn.private_data = data.data();
  conn.private_data_len = static_cast<uint8_t>(data.size());
  conn.initiator_depth =
      static_cast<uint8_t>(std::min<uint32_t>({kClientInitiatorDepth, port.max_qp_init_rd_atom, 255}));
  conn.responder_resources = 1;
  conn.retry_count = 7;
  conn.rnr_retry_count = 7;
  if (rdma_connect(id_, &conn) != 0) {
    SetError(error, Errno("rdma_connect " + params.endpoint));
    return ErrorCode::TRANSFER_FAIL;
  }
  if (!NextEvent(channel_, deadline, answer)) {
    SetError(error, "rdma_cm: timed out waiting for an answer from " + params.endpoint);
    return ErrorCode::TRANSFER_FAIL;
  }
  return true;
}

VerbsConnection::~VerbsConnection() {
  if (id_ != nullptr) {
    if (established_) rdma_disconnect(id_);
    if (id_->qp != nullptr) rdma_destroy_qp(id_);
  }
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (comp_channel_ != nullptr) ibv_destroy_comp_channel(comp_channel_);
  if (id_ != nullptr) rdma_destroy_id(id_);
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

bool VerbsConnection::Healthy() {
  rdma_cm_event* event = nullptr;
  while (!broken_ && rdma_get_cm_event(channel_, &event) == 0) {
    switch (event->event) {
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED:
        broken_ = true;
        break;
      default:
        break;
    }
    rdma_ack_cm_event(event);
  }
  return !broken_;
}

// --- per-peer slots ------------------------------------------------------------

Result<VerbsConnection*> VerbsPeer::Acquire(std::string* error) {
  if (connection_ != nullptr && connection_->Healthy()) return connection_.get();
  connection_.reset();
  Result<std::unique_ptr<VerbsConnection>> made = VerbsConnection::Connect(*device_, params_, error);
  if (!made.ok()) return made.error();
  connects_.fetch_add(1);
  connection_ = std::move(made).value();
  return connection_.get();
}

void VerbsPeer::Drop() { connection_.reset(); }

std::shared_ptr<VerbsPeer> VerbsConnectionCache::Peer(const std::string& endpoint) {
  MutexLock lock(&mu_);
  std::shared_ptr<VerbsPeer>& slot = peers_[endpoint];
  if (slot == nullptr) {
    VerbsConnectParams params = base_;
    params.endpoint = endpoint;
    slot = std::make_shared<VerbsPeer>(device_, std::move(params));
  }
  return slot;
}

uint64_t VerbsConnectionCache::connects() const {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const auto& [endpoint, peer] : peers_) total += peer->connects();
  return total;
}

}  // namespace shelfmark
