#include "transport/ucx_context.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "common/host_port.h"
#include "transport/ucx_wire.h"

namespace shelfmark {
namespace {

constexpr int kPollSafetyNetMs = 20;   // progress-thread wake-up even without events
constexpr int kSpinsBeforeWait = 256;  // idle progress calls before a waiter sleeps

// Resolves "ip:port" / "host:port" into `out`; false when it does not parse.
bool ResolveEndpoint(std::string_view endpoint, sockaddr_storage* out, socklen_t* len) {
  auto hp = ParseHostPort(endpoint);
  if (!hp) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* result = nullptr;
  if (getaddrinfo(hp->host.c_str(), std::to_string(hp->port).c_str(), &hints, &result) != 0) {
    return false;
  }
  std::memcpy(out, result->ai_addr, result->ai_addrlen);
  *len = result->ai_addrlen;
  freeaddrinfo(result);
  return true;
}

uint16_t PortOf(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  }
  return 0;
}

// A packed rkey is [md_map u64][mem_type u8] then per md bit [size u8][bytes]
// (then optional system-device data). ucp_ep_rkey_unpack() takes no length,
// so bytes that would make it read past the end are refused here.
bool PlausiblePackedRkey(std::string_view packed) {
  if (packed.size() < 9) return false;
  uint64_t md_map = 0;
  std::memcpy(&md_map, packed.data(), 8);
  if (md_map == 0) return false;  // a real registration has at least one memory domain
  size_t at = 9;
  for (; md_map != 0; md_map &= md_map - 1) {
    if (at >= packed.size()) return false;
    const size_t size = static_cast<uint8_t>(packed[at]);
    at += 1 + size;
    if (at > packed.size()) return false;
  }
  return true;
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
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  // A node restarted on its port must not wait for the old connections'
  // TIME_WAIT (the tcp connection manager binds without SO_REUSEADDR by
  // default). An explicit UCX_CM_REUSEADDR in the environment wins.
  if (std::getenv("UCX_CM_REUSEADDR") == nullptr) ucp_config_modify(config, "CM_REUSEADDR", "y");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
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
  if (!options_.listen_ip.empty()) return StartListener();
  return true;
}

Result<bool> UcxContext::StartListener() {
  sockaddr_storage addr{};
  socklen_t len = 0;
  const std::string listen =
      options_.listen_ip.find(':') != std::string::npos
          ? "[" + options_.listen_ip + "]:" + std::to_string(options_.listen_port == 0 ? 1 : options_.listen_port)
          : options_.listen_ip + ":" + std::to_string(options_.listen_port == 0 ? 1 : options_.listen_port);
  if (!ResolveEndpoint(listen, &addr, &len)) return ErrorCode::INVALID_PARAMS;
  if (options_.listen_port == 0) {  // ParseHostPort refuses port 0: set it here
    if (addr.ss_family == AF_INET) reinterpret_cast<sockaddr_in&>(addr).sin_port = 0;
    if (addr.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(addr).sin6_port = 0;
  }
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = len;
  params.conn_handler.cb = &UcxContext::OnConnRequest;
  params.conn_handler.arg = this;
  ucs_status_t status = ucp_listener_create(worker_, &params, &listener_);
  if (status != UCS_OK) {
    listener_ = nullptr;
    return status == UCS_ERR_BUSY ? ErrorCode::INVALID_PARAMS : ErrorCode::TRANSFER_FAIL;
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  if (ucp_listener_query(listener_, &attr) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  const std::string host = options_.listen_ip.find(':') != std::string::npos
                               ? "[" + options_.listen_ip + "]"
                               : options_.listen_ip;
  endpoint_ = host + ":" + std::to_string(PortOf(attr.sockaddr));
  return true;
}

UcxContext::~UcxContext() {
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
    if (listener_ != nullptr) ucp_listener_destroy(listener_);
    for (auto& [endpoint, conn] : std::map(clients_)) CloseLocked(conn);
    std::vector<uint64_t> ids;
    for (auto& [id, node] : nodes_) ids.push_back(id);
    for (uint64_t id : ids) CloseNodeConnLocked(id, false);
    // Closes are forced: they finish without the peer. Bounded anyway.
    const int64_t deadline = UcxNowMs() + 2000;
    while (!closing_.empty() && UcxNowMs() < deadline) {
      ProgressLocked();
    }
    ucp_worker_destroy(worker_);
  }
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxContext::Signal() {
  if (worker_ != nullptr) ucp_worker_signal(worker_);
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
    const ucs_status_t armed = ucp_worker_arm(worker_);
    if (armed == UCS_ERR_BUSY) continue;
    lock.unlock();
    pollfd pfd{efd_, POLLIN, 0};
    poll(&pfd, 1, kPollSafetyNetMs);
    lock.lock();
  }
}

unsigned UcxContext::ProgressLocked() {
  unsigned count = 0;
  while (unsigned n = ucp_worker_progress(worker_)) count += n;
  while (!after_progress_.empty()) {
    std::vector<std::function<void()>> work;
    work.swap(after_progress_);
    for (auto& fn : work) fn();
    count += static_cast<unsigned>(work.size());
    while (unsigned n = ucp_worker_progress(worker_)) count += n;
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
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &OnOwnedSendDone;
  param.user_data = owned;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
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
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!ResolveEndpoint(endpoint, &addr, &len)) {
      *code = ErrorCode::TRANSFER_FAIL;
      *error = "ucx: bad endpoint '" + std::string(endpoint) + "'";
      return nullptr;
    }
    conn = std::make_shared<ClientConn>();
    conn->endpoint = std::string(endpoint);
    conn->id = next_id_++;
    conn->arg = std::make_unique<UcxEpArg>(UcxEpArg{this, conn->id});
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
    params.sockaddr.addrlen = len;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &UcxContext::OnClientEpError;
    params.err_handler.arg = conn->arg.get();
    ucs_status_t status = ucp_ep_create(worker_, &params, &conn->ep);
    if (status != UCS_OK) {
      *code = ErrorCode::TRANSFER_FAIL;
      *error = "ucx: connect to " + conn->endpoint + ": " + ucs_status_string(status);
      return nullptr;
    }
    clients_[conn->endpoint] = conn;
    clients_by_id_[conn->id] = conn;
    auto hello = std::make_shared<std::string>(
        ucx_wire::EncodeHello({conn->id, options_.client_id, options_.cluster_token}));
    if (hello->size() > max_am_header_ || !SendOwnedLocked(conn->ep, kUcxAmHello, hello, nullptr)) {
      conn->state = ClientConn::State::FAILED;
      conn->error = "ucx: hello to " + conn->endpoint + " failed";
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

void UcxContext::CloseLocked(std::shared_ptr<ClientConn> conn) {  // by value: may erase the caller's map entry
  if (conn->state == ClientConn::State::CLOSED) return;
  for (auto& [bytes, rkey] : conn->rkeys) ucp_rkey_destroy(rkey);
  conn->rkeys.clear();
  CloseEpLocked(conn->ep, std::move(conn->arg));
  conn->ep = nullptr;
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

ucp_rkey_h UcxContext::RkeyLocked(ClientConn& conn, std::string_view packed,
                                  ucs_status_t* status) {
  auto it = conn.rkeys.find(packed);
  if (it != conn.rkeys.end()) {
    *status = UCS_OK;
    return it->second;
  }
  if (!PlausiblePackedRkey(packed)) {
    *status = UCS_ERR_INVALID_PARAM;
    return nullptr;
  }
  // Zero padding: a forged rkey that fools the check above still reads
  // only bytes we own.
  std::string padded(packed);
  padded.append(256, '\0');
  ucp_rkey_h rkey = nullptr;
  *status = ucp_ep_rkey_unpack(conn.ep, padded.data(), &rkey);
  if (*status != UCS_OK) return nullptr;
  conn.rkeys.emplace(std::string(packed), rkey);
  return rkey;
}

void UcxContext::OnClientEpError(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* ep_arg = static_cast<UcxEpArg*>(arg);
  UcxContext* self = ep_arg->context;
  auto it = self->clients_by_id_.find(ep_arg->conn_id);
  if (it == self->clients_by_id_.end()) return;
  ClientConn& conn = *it->second;
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
  it->second->state = reply->accepted ? ClientConn::State::READY : ClientConn::State::REJECTED;
  return UCS_OK;
}

// ---- node connections --------------------------------------------------------

void UcxContext::OnConnRequest(ucp_conn_request_h request, void* arg) {
  auto* self = static_cast<UcxContext*>(arg);
  // The queued work runs under mu_ (AfterProgressLocked's contract).
  self->AfterProgressLocked([self, request]() REQUIRES(self->mu_) {
    NodeConn node;
    const uint64_t id = self->next_id_++;
    node.arg = std::make_unique<UcxEpArg>(UcxEpArg{self, id});
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.conn_request = request;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &UcxContext::OnNodeEpError;
    params.err_handler.arg = node.arg.get();
    if (ucp_ep_create(self->worker_, &params, &node.ep) != UCS_OK) return;
    self->node_ids_[node.ep] = id;
    self->nodes_.emplace(id, std::move(node));
  });
}

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
  node_ids_.erase(it->second.ep);
  CloseEpLocked(it->second.ep, std::move(it->second.arg), flush);
  nodes_.erase(it);
}

ucs_status_t UcxContext::OnHello(void* arg, const void* header, size_t header_length,
                                 void* /*data*/, size_t /*length*/,
                                 const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxContext*>(arg);
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
    self->CountDropped();
    return UCS_OK;
  }
  auto id = self->node_ids_.find(param->reply_ep);
  std::optional<ucx_wire::Hello> hello = ucx_wire::DecodeHello(header, header_length);
  if (id == self->node_ids_.end() || !hello) {
    self->CountDropped();
    return UCS_OK;
  }
  NodeConn& node = self->nodes_[id->second];
  const bool accepted = hello->cluster_token == self->options_.cluster_token;
  node.authorized = accepted;
  node.client_id = hello->client_id;
  const uint64_t node_id = id->second;
  const uint64_t conn_id = hello->conn_id;
  self->AfterProgressLocked([self, node_id, conn_id, accepted]() REQUIRES(self->mu_) {
    auto it = self->nodes_.find(node_id);
    if (it == self->nodes_.end()) return;
    auto reply = std::make_shared<std::string>(ucx_wire::EncodeHelloReply({accepted, conn_id}));
    self->SendOwnedLocked(it->second.ep, kUcxAmHelloReply, reply, nullptr);
    // A rejected connection is never served. It is not closed here: a
    // close can overtake the verdict (different lanes), and the client
    // closes it on the verdict anyway (then the error callback reaps it).
  });
  return UCS_OK;
}

bool UcxContext::AuthorizedLocked(ucp_ep_h reply_ep, UUID* client_id, uint64_t* conn_id) {
  auto id = node_ids_.find(reply_ep);
  if (id == node_ids_.end()) return false;
  const NodeConn& node = nodes_[id->second];
  if (!node.authorized) return false;
  *client_id = node.client_id;
  *conn_id = id->second;
  return true;
}

ucp_ep_h UcxContext::NodeEpLocked(uint64_t conn_id) {
  auto it = nodes_.find(conn_id);
  return it == nodes_.end() ? nullptr : it->second.ep;
}

}  // namespace shelfmark
