#include "transport/ucx_context.h"

#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/host_port.h"
#include "transport/local_share.h"
#include "transport/ucx_log_filter.h"
#include "transport/ucx_address_server.h"
#include "transport/ucx_wire.h"

namespace shelfmark {
namespace {

constexpr int kPollSafetyNetMs = 20;   // progress-thread wake-up even without events
constexpr int kSpinsBeforeWait = 256;  // idle progress calls before a waiter sleeps

// SHELFMARK_UCX_SAME_HOST=0 turns same-host reads and writes off
// (benchmarks of the network path between two processes of one host).
bool SameHostCopiesWanted() {
  const char* value = std::getenv("SHELFMARK_UCX_SAME_HOST");
  return value == nullptr || std::string_view(value) != "0";
}

// 64 random bits for a session secret, never 0.
uint64_t RandomSecret() {
  uint64_t secret = 0;
  while (secret == 0) auth::RandomBytes(&secret, sizeof(secret));
  return secret;
}

}  // namespace

int64_t UcxNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

UcxContext::UcxContext(const TransportOptions& options) : options_(options) {}

Result<std::unique_ptr<UcxContext>> UcxContext::Create(const TransportOptions& options) {
  std::unique_ptr<UcxContext> context(new UcxContext(options));
  auto init = context->Init();
  if (!init.ok()) return init.error();
  context->thread_ = std::thread([raw = context.get()] { raw->ProgressThread(); });
  return context;
}

Result<bool> UcxContext::Init() {
  // Before any worker exists: a stranger's RMA messages must not reach
  // UCX's log (ucx_log_filter.h).
  InstallUcxStrayMessageFilter();
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  // tcp unless the environment says otherwise: the RDMA path is the verbs
  // engine, same-host reads and writes are the local share (local_share.h), and the
  // peer-failure error mode excludes shared memory anyway. With endpoints
  // made from worker addresses UCX 1.13 would also pick ud/rc over any
  // RDMA device (soft-RoCE included), whose wireup did not complete there
  // and whose close then aborted the process (ucp_request.c:684, "got REQ
  // message"). An explicit UCX_TLS wins.
  if (std::getenv("UCX_TLS") == nullptr) ucp_config_modify(config, "TLS", "tcp");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  // No UCP_FEATURE_RMA: with it UCX installs, on every tcp (or other
  // emulated) interface, handlers that read and write any address a peer
  // names, for any peer, before any hello; MEMORY bytes travel as checked
  // active messages instead (ucx_memory_access.h).
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "shelfmark";
  ucs_status_t status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (status != UCS_OK) return ErrorCode::TRANSFER_FAIL;

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  if (ucp_worker_create(context_, &worker_params, &worker_) != UCS_OK) {
    return ErrorCode::TRANSFER_FAIL;
  }
  if (ucp_worker_get_efd(worker_, &efd_) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
  if (ucp_worker_query(worker_, &attr) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  max_am_header_ = attr.max_am_header;
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  if (ucp_worker_get_address(worker_, &address, &address_length) != UCS_OK) {
    return ErrorCode::TRANSFER_FAIL;
  }
  worker_address_.assign(reinterpret_cast<const char*>(address), address_length);
  ucp_worker_release_address(worker_, address);
  boot_id_ = HostBootId();

  ucp_am_handler_param_t hello{};
  hello.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  hello.id = kUcxAmHello;
  hello.cb = &UcxContext::OnHello;
  hello.arg = this;
  if (ucp_worker_set_am_recv_handler(worker_, &hello) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  hello.id = kUcxAmHelloReply;
  hello.cb = &UcxContext::OnHelloReply;
  if (ucp_worker_set_am_recv_handler(worker_, &hello) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  if (options_.listen_ip.empty()) return true;
  // Node side: the endpoints back to clients live on a worker of their own
  // (below, AnswerHelloLocked).
  if (ucp_worker_create(context_, &worker_params, &reply_worker_) != UCS_OK ||
      ucp_worker_get_efd(reply_worker_, &reply_efd_) != UCS_OK) {
    return ErrorCode::TRANSFER_FAIL;
  }
  return StartAddressServer();
}

Result<bool> UcxContext::StartAddressServer() {
  auto server = UcxAddressServer::Start(options_.listen_ip, options_.listen_port,
                                        {worker_address_, boot_id_, ""}, &challenges_);
  if (!server.ok()) return server.error();
  address_server_ = std::move(server.value());
  endpoint_ = HostPort{options_.listen_ip, address_server_->port()}.ToString();
  return true;
}

Result<bool> UcxContext::ShareLocally(int memfd, uint64_t base, uint64_t size) {
  if (address_server_ == nullptr || share_ != nullptr) return ErrorCode::INVALID_PARAMS;
  auto share = LocalShareServer::Start(memfd, base, size, options_.cluster_token);
  if (!share.ok()) return share.error();
  share_ = std::move(share).value();
  address_server_->Update({worker_address_, boot_id_, share_->name()});
  return true;
}

std::shared_ptr<LocalMapping> UcxContext::MapIfLocal(
    const std::optional<ucx_wire::NodeAddress>& address, int timeout_ms) {
  if (!address || address->share_name.empty() || boot_id_.empty() ||
      address->boot_id != boot_id_ || !SameHostCopiesWanted()) {
    return nullptr;
  }
  std::string error;
  auto mapping = MapLocalShare(address->share_name, options_.cluster_token, timeout_ms, &error);
  (mapping != nullptr ? local_maps_ : local_map_failures_).fetch_add(1, std::memory_order_relaxed);
  return mapping;
}

UcxContext::~UcxContext() {
  address_server_.reset();  // no new clients learn this worker's address
  share_.reset();
  if (thread_.joinable()) {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    Signal();
    thread_.join();
  }
  if (worker_ != nullptr) {
    MutexLock lock(&mu_);
    for (auto& [endpoint, conn] : std::map(clients_)) CloseLocked(conn);
    std::vector<uint64_t> ids;
    for (auto& [id, node] : nodes_) ids.push_back(id);
    for (uint64_t id : ids) CloseNodeConnLocked(id, false);
    // Closes are forced: they finish without the peer. Bounded anyway.
    const int64_t deadline = UcxNowMs() + 2000;
    while (!closing_.empty() && UcxNowMs() < deadline) {
      ProgressLocked();
    }
    if (reply_worker_ != nullptr) ucp_worker_destroy(reply_worker_);
    ucp_worker_destroy(worker_);
  }
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxContext::Signal() {
  if (worker_ != nullptr) ucp_worker_signal(worker_);
}

unsigned UcxContext::ProgressWorkersLocked() {
  unsigned count = 0;
  while (unsigned n = ucp_worker_progress(worker_)) count += n;
  if (reply_worker_ != nullptr) {
    while (unsigned n = ucp_worker_progress(reply_worker_)) count += n;
  }
  return count;
}

bool UcxContext::ArmWorkersLocked() {
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return false;
  return reply_worker_ == nullptr || ucp_worker_arm(reply_worker_) != UCS_ERR_BUSY;
}

void UcxContext::ProgressThread() {
  MutexLock lock(&mu_);
  while (!stop_) {
    ProgressLocked();
    std::vector<std::function<void()>> work;
    work.swap(on_thread_);
    if (!work.empty()) {
      lock.unlock();
      for (auto& fn : work) fn();
      lock.lock();
      continue;
    }
    if (!ArmWorkersLocked()) continue;
    lock.unlock();
    pollfd pfd[2] = {{efd_, POLLIN, 0}, {reply_efd_, POLLIN, 0}};
    poll(pfd, reply_efd_ >= 0 ? 2 : 1, kPollSafetyNetMs);
    lock.lock();
  }
}

unsigned UcxContext::ProgressLocked() {
  unsigned count = ProgressWorkersLocked();
  while (!after_progress_.empty()) {
    std::vector<std::function<void()>> work;
    work.swap(after_progress_);
    for (auto& fn : work) fn();
    count += static_cast<unsigned>(work.size());
    count += ProgressWorkersLocked();
  }
  ReapClosedLocked();
  if (count != 0) progressed_.notify_all();
  return count;
}

bool UcxContext::WaitLocked(MutexLock& lock, const std::function<bool()>& done,
                            int64_t deadline_ms) {
  int idle = 0;
  while (!done()) {
    if (ProgressLocked() != 0) {
      idle = 0;
      continue;
    }
    if (UcxNowMs() >= deadline_ms) return done();
    if (++idle < kSpinsBeforeWait) {
      // Spin politely: on a small host the peer that must answer (a node's
      // progress thread on this machine) may be runnable on this very CPU,
      // and a waiter spinning through its whole time slice kept it from
      // running: same-host LOCAL_DISK reads (and their probe) were bimodal,
      // ~70 us or ~200 us at 64 KiB depending on where the scheduler put
      // the two threads (always ~200 us with both pinned to one CPU).
      std::this_thread::yield();
      continue;
    }
    // Idle for a while: let the progress thread (woken by the worker's
    // events) and other users have the worker, then look again.
    progressed_.wait_for(lock, std::chrono::milliseconds(1));
    idle = 0;
  }
  return true;
}

void UcxContext::AfterProgressLocked(std::function<void()> fn) {
  after_progress_.push_back(std::move(fn));
}

void UcxContext::RunOnProgressThreadLocked(std::function<void()> fn) {
  on_thread_.push_back(std::move(fn));
  Signal();
}

void UcxContext::SetAmHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  MutexLock lock(&mu_);
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.cb = cb;
  param.arg = arg;
  ucp_worker_set_am_recv_handler(worker_, &param);
}

namespace {

struct OwnedSend {
  std::shared_ptr<std::string> header;
  std::shared_ptr<std::string> data;
};

void OnOwnedSendDone(void* request, ucs_status_t /*status*/, void* user_data) {
  delete static_cast<OwnedSend*>(user_data);
  ucp_request_free(request);
}

}  // namespace

bool UcxContext::SendOwnedLocked(ucp_ep_h ep, unsigned id, std::shared_ptr<std::string> header,
                                 std::shared_ptr<std::string> data) {
  auto* owned = new OwnedSend{std::move(header), std::move(data)};
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &OnOwnedSendDone;
  param.user_data = owned;
  const std::string empty;
  const std::string& h = owned->header ? *owned->header : empty;
  const std::string& d = owned->data ? *owned->data : empty;
  ucs_status_ptr_t request = ucp_am_send_nbx(ep, id, h.data(), h.size(), d.data(), d.size(), &param);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) {
    delete owned;
    return request == nullptr;
  }
  return true;
}

// ---- client connections ------------------------------------------------------

std::shared_ptr<ClientConn> UcxContext::ConnectLocked(MutexLock& lock, std::string_view endpoint,
                                                      int64_t deadline_ms, ErrorCode* code,
                                                      std::string* error) {
  auto it = clients_.find(endpoint);
  std::shared_ptr<ClientConn> conn;
  if (it != clients_.end() && it->second->state != ClientConn::State::FAILED) {
    conn = it->second;
  } else {
    if (it != clients_.end()) CloseLocked(it->second);
    conn = std::make_shared<ClientConn>();
    conn->endpoint = std::string(endpoint);
    conn->id = next_id_++;
    conn->arg = std::make_unique<UcxEpArg>(UcxEpArg{this, conn->id});
    clients_[conn->endpoint] = conn;
    clients_by_id_[conn->id] = conn;
    // The fetch is a TCP round trip: other users keep the worker meanwhile
    // (and wait on this CONNECTING connection rather than make another).
    // mu_ itself is released (not `lock`) so the analysis follows it.
    mu_.unlock();
    std::string fetch_error;
    const int64_t left = std::max<int64_t>(1, deadline_ms - UcxNowMs());
    std::optional<ucx_wire::NodeAddress> address =
        FetchUcxNodeAddress(conn->endpoint, static_cast<int>(left), &fetch_error);
    std::shared_ptr<LocalMapping> local = MapIfLocal(address, static_cast<int>(left));
    mu_.lock();
    if (conn->state == ClientConn::State::CONNECTING) {
      conn->local = std::move(local);
      StartHelloLocked(*conn, address, fetch_error);
    }
  }
  const bool settled = WaitLocked(
      lock, [&] { return conn->state != ClientConn::State::CONNECTING; }, deadline_ms);
  switch (conn->state) {
    case ClientConn::State::READY:
      return conn;
    case ClientConn::State::REJECTED:
      *code = ErrorCode::ILLEGAL_CLIENT;
      *error = "ucx: " + conn->endpoint + " rejected the cluster token";
      break;
    case ClientConn::State::UNAUTHENTICATED:
      *code = ErrorCode::UNAUTHENTICATED;
      *error = "ucx: " + conn->endpoint + " did not prove the cluster token";
      break;
    case ClientConn::State::CLOSED:
      *code = ErrorCode::TRANSFER_FAIL;
      *error = "ucx: connection to " + conn->endpoint + " closed while connecting";
      break;
    default:
      *code = ErrorCode::TRANSFER_FAIL;
      *error = !settled ? "ucx: connect to " + conn->endpoint + " timed out"
                        : (conn->error.empty() ? "ucx: connect to " + conn->endpoint + " failed"
                                               : conn->error);
      break;
  }
  CloseLocked(conn);
  return nullptr;
}

void UcxContext::StartHelloLocked(ClientConn& conn,
                                  const std::optional<ucx_wire::NodeAddress>& address,
                                  const std::string& fetch_error) {
  if (!address) {
    conn.state = ClientConn::State::FAILED;
    conn.error = fetch_error;
    return;
  }
  ucs_status_t status = UCS_OK;
  conn.ep = CreateEpLocked(worker_, address->worker_address, &UcxContext::OnClientEpError,
                           conn.arg.get(), &status);
  if (conn.ep == nullptr) {
    conn.state = ClientConn::State::FAILED;
    conn.error = "ucx: connect to " + conn.endpoint + ": " + ucs_status_string(status);
    return;
  }
  conn.node_nonce = address->nonce;
  conn.hello = {conn.id, options_.client_id, address->ticket, auth::NewNonce(), {},
                worker_address_};
  conn.hello.proof = ucx_wire::UcxClientProof(options_.cluster_token, conn.node_nonce, conn.hello);
  auto hello = std::make_shared<std::string>(ucx_wire::EncodeHello(conn.hello));
  testing_.sent_hello = *hello;
  if (!testing_.replay_hello.empty()) *hello = testing_.replay_hello;
  if (hello->size() > max_am_header_ || !SendOwnedLocked(conn.ep, kUcxAmHello, hello, nullptr)) {
    conn.state = ClientConn::State::FAILED;
    conn.error = "ucx: hello to " + conn.endpoint + " failed";
  }
}

ucp_ep_h UcxContext::CreateEpLocked(ucp_worker_h worker, std::string_view address,
                                    ucp_err_handler_cb_t on_error, UcxEpArg* arg,
                                    ucs_status_t* status) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  ucp_ep_h ep = nullptr;
  *status = ucp_ep_create(worker, &params, &ep);
  return *status == UCS_OK ? ep : nullptr;
}

void UcxContext::CloseLocked(std::shared_ptr<ClientConn> conn) {  // by value: may erase the caller's map entry
  if (conn->state == ClientConn::State::CLOSED) return;
  CloseEpLocked(conn->ep, std::move(conn->arg));
  conn->ep = nullptr;
  conn->local.reset();  // reads in flight hold their own reference
  conn->state = ClientConn::State::CLOSED;
  auto it = clients_.find(conn->endpoint);
  if (it != clients_.end() && it->second == conn) clients_.erase(it);
  clients_by_id_.erase(conn->id);
}

void UcxContext::CloseEpLocked(ucp_ep_h ep, std::unique_ptr<UcxEpArg> arg, bool flush) {
  if (ep == nullptr) return;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = flush ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) {
    closing_.push_back(Closing{request, std::move(arg)});
  }
}

void UcxContext::ReapClosedLocked() {
  for (size_t i = 0; i < closing_.size();) {
    if (ucp_request_check_status(closing_[i].request) == UCS_INPROGRESS) {
      ++i;
      continue;
    }
    ucp_request_free(closing_[i].request);
    closing_[i] = std::move(closing_.back());
    closing_.pop_back();
  }
}

void UcxContext::OnClientEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* ep_arg = static_cast<UcxEpArg*>(arg);
  UcxContext* self = ep_arg->context;
  auto it = self->clients_by_id_.find(ep_arg->conn_id);
  if (it == self->clients_by_id_.end()) return;
  ClientConn& conn = *it->second;
  // A verdict stays: the node closes the endpoint after a rejection, and an
  // unproven node is dropped by the waiting user.
  if (conn.state == ClientConn::State::REJECTED ||
      conn.state == ClientConn::State::UNAUTHENTICATED) {
    return;
  }
  conn.state = ClientConn::State::FAILED;
  conn.error = "ucx: connection to " + conn.endpoint + " failed: " + ucs_status_string(status);
}

ucs_status_t UcxContext::OnHelloReply(void* arg, const void* header, size_t header_length,
                                      void* /*data*/, size_t /*length*/,
                                      const ucp_am_recv_param_t* /*param*/) {
  auto* self = static_cast<UcxContext*>(arg);
  std::optional<ucx_wire::HelloReply> reply = ucx_wire::DecodeHelloReply(header, header_length);
  auto it = reply ? self->clients_by_id_.find(reply->conn_id) : self->clients_by_id_.end();
  if (it == self->clients_by_id_.end() || it->second->state != ClientConn::State::CONNECTING) {
    self->CountDropped();
    return UCS_OK;
  }
  ClientConn& conn = *it->second;
  if (!reply->accepted) {
    conn.state = ClientConn::State::REJECTED;
    return UCS_OK;
  }
  // Accepted by a node that must now prove the token itself, over this
  // connection's nonces and the session it issued; else no byte of an object
  // is ever posted to it.
  const auth::Proof expected =
      ucx_wire::UcxNodeProof(self->options_.cluster_token, conn.node_nonce, conn.hello, *reply);
  if (!auth::ProofMatches(expected, auth::BytesOf(reply->proof))) {
    conn.state = ClientConn::State::UNAUTHENTICATED;
    return UCS_OK;
  }
  conn.state = ClientConn::State::READY;
  conn.session = reply->session;
  return UCS_OK;
}

// ---- node connections --------------------------------------------------------

void UcxContext::OnNodeEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t /*status*/) {
  auto* ep_arg = static_cast<UcxEpArg*>(arg);
  UcxContext* self = ep_arg->context;
  const uint64_t id = ep_arg->conn_id;
  self->AfterProgressLocked(
      [self, id]() REQUIRES(self->mu_) { self->CloseNodeConnLocked(id, false); });
}

void UcxContext::CloseNodeConnLocked(uint64_t conn_id, bool flush) {
  auto it = nodes_.find(conn_id);
  if (it == nodes_.end()) return;
  CloseEpLocked(it->second.ep, std::move(it->second.arg), flush);
  nodes_.erase(it);
}

ucs_status_t UcxContext::OnHello(void* arg, const void* header, size_t header_length,
                                 void* /*data*/, size_t /*length*/,
                                 const ucp_am_recv_param_t* /*param*/) {
  auto* self = static_cast<UcxContext*>(arg);
  std::optional<ucx_wire::Hello> hello = ucx_wire::DecodeHello(header, header_length);
  if (!hello) {
    self->CountDropped();
    return UCS_OK;
  }
  // Endpoints are created after the progress call (not from a callback).
  self->AfterProgressLocked([self, hello = std::move(*hello)]() REQUIRES(self->mu_) {
    self->AnswerHelloLocked(hello);
  });
  return UCS_OK;
}

void UcxContext::AnswerHelloLocked(const ucx_wire::Hello& hello) {
  // The ticket is forgotten here whatever follows: a hello is answered once.
  std::optional<ChallengeBook::Issued> issued = challenges_.Take(hello.ticket);
  if (!issued) stale_hellos_.fetch_add(1, std::memory_order_relaxed);
  const auth::Nonce node_nonce = issued ? issued->nonce : auth::Nonce{};
  const bool accepted =
      testing_.accept_any_hello ||
      (issued && auth::ProofMatches(
                     ucx_wire::UcxClientProof(options_.cluster_token, node_nonce, hello),
                     auth::BytesOf(hello.proof)));
  NodeConn node;
  const uint64_t id = next_id_++;
  node.arg = std::make_unique<UcxEpArg>(UcxEpArg{this, id});
  ucs_status_t status = UCS_OK;
  // On the reply worker: an endpoint from this worker to the client's
  // worker would be matched by UCX with the endpoint the client made to this
  // worker (ucp's connection matching by sequence number), and a hello that
  // never arrived leaves the two sides' numbers apart, so a later endpoint
  // could be paired with the wrong connection. The reply worker's address is
  // published nowhere: nothing ever connects to it, nothing is matched.
  node.ep = CreateEpLocked(reply_worker_, hello.worker_address, &UcxContext::OnNodeEpError,
                           node.arg.get(), &status);
  if (node.ep == nullptr) {  // not a worker address UCX can reach
    CountDropped();
    return;
  }
  ucx_wire::HelloReply reply{accepted, hello.conn_id, {}, {}};
  if (accepted) {
    node.secret = RandomSecret();
    node.client_id = hello.client_id;
    reply.session = {id, node.secret};
    reply.proof = ucx_wire::UcxNodeProof(options_.cluster_token, node_nonce, hello, reply);
  }
  SendOwnedLocked(node.ep, kUcxAmHelloReply,
                  std::make_shared<std::string>(ucx_wire::EncodeHelloReply(reply)), nullptr);
  if (!accepted) {
    // Never served: the verdict is flushed, then the endpoint goes (the
    // client closes its own on the verdict).
    rejected_.fetch_add(1, std::memory_order_relaxed);
    CloseEpLocked(node.ep, std::move(node.arg), /*flush=*/true);
    return;
  }
  accepted_.fetch_add(1, std::memory_order_relaxed);
  nodes_.emplace(id, std::move(node));
}

bool UcxContext::AuthorizedLocked(const ucx_wire::Session& session, UUID* client_id) {
  auto it = nodes_.find(session.id);
  if (it == nodes_.end() || it->second.secret != session.secret) return false;
  *client_id = it->second.client_id;
  return true;
}

ucp_ep_h UcxContext::NodeEpLocked(uint64_t conn_id) {
  auto it = nodes_.find(conn_id);
  return it == nodes_.end() ? nullptr : it->second.ep;
}

}  // namespace shelfmark
