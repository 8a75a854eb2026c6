#include "transport/ucx_am.h"

#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"
#include "transport/ucx_context.h"
#include "transport/ucx_wire.h"

namespace shelfmark {
namespace {

constexpr size_t kFraming = 40;  // our fields before the user header, both directions

// A call waiting for its reply (client side), kept alive by every party that
// may still write into it (the waiter, a rendezvous receive in flight).
struct PendingCall {
  bool done = false;
  bool receiving = false;  // a rendezvous receive into `target` is in flight
  ErrorCode status = ErrorCode::OK;
  AmReplyTarget target;    // the caller's buffer, or none (reply.data)
  AmReply reply;
};

// A request whose payload is still arriving by rendezvous (node side).
struct IncomingRequest;

}  // namespace

// Lets responders outlive the UcxAm safely: Send() takes mu and finds
// context == nullptr once the UcxAm is gone.
struct AmLink {
  Mutex mu;
  UcxContext* context GUARDED_BY(mu) = nullptr;
};

// The reply of one request: a response AM on the connection it came from.
class UcxReplySink final : public AmReplySink {
 public:
  UcxReplySink(std::shared_ptr<AmLink> link, uint64_t conn_id, uint64_t request_id)
      : link_(std::move(link)), conn_id_(conn_id), request_id_(request_id) {}
  bool Send(ErrorCode status, std::string header, std::string data) override;

 private:
  const std::shared_ptr<AmLink> link_;
  const uint64_t conn_id_;
  const uint64_t request_id_;
};

// ---- UcxAm internals -----------------------------------------------------------

struct UcxAmState {
  UcxContext* context = nullptr;
  std::shared_ptr<AmLink> link;
  Mutex handlers_mu;
  std::unordered_map<uint16_t, AmHandler> handlers GUARDED_BY(handlers_mu);
  uint64_t next_request GUARDED_BY(context->mu()) = 1;
  std::unordered_map<uint64_t, std::shared_ptr<PendingCall>> pending GUARDED_BY(context->mu());
};

namespace {

struct IncomingRequest {
  UcxAmState* state = nullptr;
  AmRequest request;
  std::unique_ptr<UcxReplySink> sink;
};

// The framing both directions share: magic, version, `Field` (the handler
// id of a request, the status of a response), request id, session (the
// node's credentials on requests, zero on responses), user header.
template <typename Field>
struct AmFrame {
  Field field{};
  uint64_t request_id = 0;
  ucx_wire::Session session;
  std::string user_header;
};

template <typename Field>
std::shared_ptr<std::string> EncodeFrame(Field field, uint64_t request_id,
                                         const ucx_wire::Session& session,
                                         std::string_view user_header) {
  return std::make_shared<std::string>(ucx_wire::Writer()
                                           .Put(ucx_wire::kMagicAm)
                                           .Put(ucx_wire::kVersion)
                                           .Put(field)
                                           .Put(request_id)
                                           .Put(session.id)
                                           .Put(session.secret)
                                           .Bytes(user_header)
                                           .Take());
}

// False unless `header` is exactly one frame of ours.
template <typename Field>
bool DecodeFrame(const void* header, size_t length, AmFrame<Field>* frame) {
  ucx_wire::Reader in(header, length);
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  frame->field = in.Get<Field>();
  frame->request_id = in.Get<uint64_t>();
  frame->session.id = in.Get<uint64_t>();
  frame->session.secret = in.Get<uint64_t>();
  frame->user_header = in.Bytes();
  return in.done() && magic == ucx_wire::kMagicAm && version == ucx_wire::kVersion;
}

// Receives a rendezvous payload into [into, into + size) right after the
// current progress call (worker calls are not allowed inside a UCX
// callback); `done(request, status, length, user_data)` runs exactly once,
// from UCX on completion or here when the receive finishes or fails at once.
void ReceiveRendezvous(UcxContext* context, void* data, char* into, size_t size,
                       ucp_am_recv_data_nbx_callback_t done, void* user_data)
    REQUIRES(context->mu()) {
  context->AfterProgressLocked([context, data, into, size, done, user_data]() {
    ucp_request_param_t recv{};
    recv.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    recv.cb.recv_am = done;
    recv.user_data = user_data;
    ucs_status_ptr_t ptr = ucp_am_recv_data_nbx(context->worker(), data, into, size, &recv);
    if (ptr == nullptr) done(nullptr, UCS_OK, 0, user_data);
    if (UCS_PTR_IS_ERR(ptr)) done(nullptr, UCS_PTR_STATUS(ptr), 0, user_data);
  });
}

}  // namespace

class UcxAmAccess {
 public:
  // Runs the handler on the progress thread (outside the worker lock).
  // Called from the UCX callbacks below, which run under the worker lock.
  static void Dispatch(UcxAmState* state, AmRequest request, std::unique_ptr<UcxReplySink> sink)
      REQUIRES(state->context->mu()) {
    // std::function must be copyable: the sink travels in a shared holder.
    auto holder = std::make_shared<std::unique_ptr<UcxReplySink>>(std::move(sink));
    state->context->RunOnProgressThreadLocked(
        [state, request = std::move(request), holder]() mutable {
          AmHandler handler;
          {
            MutexLock lock(&state->handlers_mu);
            auto it = state->handlers.find(request.id);
            if (it != state->handlers.end()) handler = it->second;
          }
          AmResponder reply(std::move(*holder));
          if (!handler) {
            reply.Fail(ErrorCode::INVALID_PARAMS);
            return;
          }
          handler(std::move(request), std::move(reply));
        });
  }

  // The UCX callbacks below run inside ucp_worker_progress(), always under
  // context->mu(), which the analysis cannot see through UCX: hence
  // NO_THREAD_SAFETY_ANALYSIS on each.
  static void OnRequestPayload(void* request, ucs_status_t status, size_t /*length*/,
                               void* user_data) NO_THREAD_SAFETY_ANALYSIS {
    auto* incoming = static_cast<IncomingRequest*>(user_data);
    if (status == UCS_OK) {
      Dispatch(incoming->state, std::move(incoming->request), std::move(incoming->sink));
    } else {
      incoming->state->context->CountDropped();
    }
    delete incoming;
    if (request != nullptr) ucp_request_free(request);
  }

  static ucs_status_t OnRequest(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param)
      NO_THREAD_SAFETY_ANALYSIS {
    auto* state = static_cast<UcxAmState*>(arg);
    UcxContext* context = state->context;
    AmFrame<uint16_t> frame;
    UUID client;
    if (!DecodeFrame(header, header_length, &frame) ||
        !context->AuthorizedLocked(frame.session, &client)) {
      context->CountDropped();
      return UCS_OK;  // a rendezvous descriptor not taken is dropped by UCX
    }
    auto* incoming = new IncomingRequest;
    incoming->state = state;
    incoming->request = AmRequest{client, frame.field, std::move(frame.user_header), {}};
    incoming->sink = std::make_unique<UcxReplySink>(state->link, frame.session.id, frame.request_id);
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
      incoming->request.payload.assign(static_cast<const char*>(data), length);
      Dispatch(state, std::move(incoming->request), std::move(incoming->sink));
      delete incoming;
      return UCS_OK;
    }
    incoming->request.payload.resize(length);
    ReceiveRendezvous(context, data, incoming->request.payload.data(), length,
                      &UcxAmAccess::OnRequestPayload, incoming);
    return UCS_INPROGRESS;
  }

  static void OnReplyData(void* request, ucs_status_t status, size_t /*length*/,
                          void* user_data) {
    auto* call = static_cast<std::shared_ptr<PendingCall>*>(user_data);
    (*call)->status = status == UCS_OK ? ErrorCode::OK : ErrorCode::TRANSFER_FAIL;
    (*call)->receiving = false;
    (*call)->done = true;
    delete call;
    if (request != nullptr) ucp_request_free(request);
  }

  static ucs_status_t OnResponse(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param)
      NO_THREAD_SAFETY_ANALYSIS {
    auto* state = static_cast<UcxAmState*>(arg);
    UcxContext* context = state->context;
    AmFrame<int32_t> frame;
    const bool ours = DecodeFrame(header, header_length, &frame);
    auto it = state->pending.find(frame.request_id);
    if (!ours || it == state->pending.end()) {
      context->CountDropped();
      return UCS_OK;
    }
    std::shared_ptr<PendingCall> call = it->second;
    state->pending.erase(it);
    call->reply.header = std::move(frame.user_header);
    if (frame.field != 0) {
      call->status = ErrorCodeFromInt(frame.field);
      if (call->status == ErrorCode::OK) call->status = ErrorCode::INTERNAL_ERROR;
      call->done = true;
      return UCS_OK;
    }
    call->reply.data_size = length;
    char* into = static_cast<char*>(call->target.data);
    if (into != nullptr && length > call->target.capacity) {
      call->status = ErrorCode::BUFFER_OVERFLOW;  // a rendezvous not taken is dropped by UCX
      call->done = true;
      return UCS_OK;
    }
    const bool rendezvous = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
    if (!rendezvous) {
      if (into != nullptr) {
        std::memcpy(into, data, length);
      } else {
        call->reply.data.assign(static_cast<const char*>(data), length);
      }
      call->done = true;
      return UCS_OK;
    }
    if (into == nullptr) {
      call->reply.data.resize(length);
      into = call->reply.data.data();
    }
    call->receiving = true;
    ReceiveRendezvous(context, data, into, length, &UcxAmAccess::OnReplyData,
                      new std::shared_ptr<PendingCall>(call));
    return UCS_INPROGRESS;
  }
};

// ---- UcxReplySink -----------------------------------------------------------

bool UcxReplySink::Send(ErrorCode status, std::string header, std::string data) {
  auto wire = EncodeFrame(static_cast<int32_t>(status), request_id_, {}, header);
  MutexLock link_lock(&link_->mu);
  UcxContext* context = link_->context;
  if (context == nullptr) return false;
  const bool fits = wire->size() <= context->max_am_header();
  if (!fits) {
    // The caller learns at once that this reply cannot travel, instead of
    // waiting for its deadline.
    wire = EncodeFrame(static_cast<int32_t>(ErrorCode::INVALID_PARAMS), request_id_, {}, "");
    data.clear();
  }
  auto payload = std::make_shared<std::string>(std::move(data));
  bool ok = false;
  {
    MutexLock lock(&context->mu());
    ucp_ep_h ep = context->NodeEpLocked(conn_id_);
    ok = ep != nullptr && context->SendOwnedLocked(ep, kUcxAmResponse, wire, payload);
  }
  context->Signal();
  return ok && fits;
}

// ---- UcxAm -----------------------------------------------------------------------

UcxAm::UcxAm(UcxContext* context) : context_(context), state_(std::make_unique<UcxAmState>()) {
  state_->context = context;
  state_->link = std::make_shared<AmLink>();
  {
    MutexLock lock(&state_->link->mu);
    state_->link->context = context;
  }
  context->SetAmHandler(kUcxAmRequest, &UcxAmAccess::OnRequest, state_.get());
  context->SetAmHandler(kUcxAmResponse, &UcxAmAccess::OnResponse, state_.get());
}

UcxAm::~UcxAm() {
  {
    MutexLock lock(&state_->link->mu);
    state_->link->context = nullptr;
  }
  state_->context->SetAmHandler(kUcxAmRequest, nullptr, nullptr);
  state_->context->SetAmHandler(kUcxAmResponse, nullptr, nullptr);
}

void UcxAm::SetHandler(uint16_t id, AmHandler handler) {
  MutexLock lock(&state_->handlers_mu);
  state_->handlers[id] = std::move(handler);
}

size_t UcxAm::max_header_size() const {
  const size_t max = state_->context->max_am_header();
  return max > kFraming ? max - kFraming : 0;
}

uint64_t UcxAm::dropped_messages() const { return state_->context->dropped(); }

Result<AmReply> UcxAm::CallInto(std::string_view endpoint, uint16_t id, std::string_view header,
                                std::string_view payload, AmReplyTarget into,
                                int64_t timeout_ms) {
  if (header.size() > max_header_size()) return ErrorCode::INVALID_PARAMS;
  const int64_t deadline = UcxNowMs() + timeout_ms;
  MutexLock lock(&context_->mu());
  ErrorCode code = ErrorCode::OK;
  std::string error;
  auto conn = context_->ConnectLocked(
      lock, endpoint, UcxNowMs() + context_->options().connect_timeout_ms, &code, &error);
  if (conn == nullptr) return code;
  UcxAmOut call{std::move(conn), id, std::string(header), payload, into};
  return std::move(CallAllLocked(lock, std::span<UcxAmOut>(&call, 1), deadline).front());
}

std::vector<Result<AmReply>> UcxAm::CallAllLocked(MutexLock& lock, std::span<UcxAmOut> calls,
                                                  int64_t deadline_ms) {
  // state_->context spelled out (not a local alias): the lock analysis
  // matches `pending`'s guard state_->context->mu() by expression. It is
  // context_, whose mu() the caller holds (REQUIRES).
  state_->context->mu().AssertHeld();
  std::vector<std::shared_ptr<PendingCall>> sent(calls.size());
  std::vector<uint64_t> ids(calls.size(), 0);
  for (size_t i = 0; i < calls.size(); ++i) {
    UcxAmOut& out = calls[i];
    if (out.header.size() > max_header_size() || out.conn->state != ClientConn::State::READY) {
      continue;
    }
    auto call = std::make_shared<PendingCall>();
    call->target = out.into;
    ids[i] = state_->next_request++;
    state_->pending[ids[i]] = call;
    auto wire = EncodeFrame(out.id, ids[i], out.conn->session, out.header);
    auto data = std::make_shared<std::string>(out.payload);
    if (!state_->context->SendOwnedLocked(out.conn->ep, kUcxAmRequest, wire, data)) {
      state_->pending.erase(ids[i]);
      state_->context->CloseLocked(out.conn);  // its other calls fail below
      continue;
    }
    sent[i] = std::move(call);
  }
  auto settled = [&] {
    for (size_t i = 0; i < calls.size(); ++i) {
      if (sent[i] != nullptr && !sent[i]->done &&
          calls[i].conn->state == ClientConn::State::READY) {
        return false;
      }
    }
    return true;
  };
  state_->context->WaitLocked(lock, settled, deadline_ms);
  std::vector<Result<AmReply>> results;
  results.reserve(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::shared_ptr<PendingCall>& call = sent[i];
    if (call == nullptr) {
      results.emplace_back(calls[i].header.size() > max_header_size() ? ErrorCode::INVALID_PARAMS
                                                                      : ErrorCode::TRANSFER_FAIL);
      continue;
    }
    if (call->done) {
      if (call->status != ErrorCode::OK) {
        results.emplace_back(call->status);
      } else {
        results.emplace_back(std::move(call->reply));
      }
      continue;
    }
    state_->pending.erase(ids[i]);  // a late reply is dropped as unmatched
    if (call->receiving) {
      // The reply's data is on its way into the caller's buffer: closing the
      // connection makes UCX complete or cancel that receive, and the buffer
      // is not the caller's again until it has.
      state_->context->CloseLocked(calls[i].conn);
      state_->context->WaitLocked(lock, [&] { return call->done; },
                                  std::numeric_limits<int64_t>::max());
    }
    results.emplace_back(ErrorCode::TRANSFER_FAIL);
  }
  for (UcxAmOut& out : calls) {
    if (out.conn->state == ClientConn::State::FAILED) state_->context->CloseLocked(out.conn);
  }
  return results;
}

}  // namespace shelfmark
