#include "transport/loopback_am.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"

namespace shelfmark {

// A call waiting for its reply, shared by the caller and the reply's sink.
struct LoopbackCall {
  Mutex mu;
  std::condition_variable_any cv;
  bool done GUARDED_BY(mu) = false;
  bool abandoned GUARDED_BY(mu) = false;  // the caller gave up: write nothing
  ErrorCode status GUARDED_BY(mu) = ErrorCode::OK;
  AmReply reply GUARDED_BY(mu);
  AmReplyTarget target;  // set before the request is queued
};

// One LoopbackAm's state: its token, handlers and dispatcher queue.
struct LoopbackAmCore {
  std::string cluster_token;
  Mutex mu;
  std::condition_variable_any cv;
  std::unordered_map<uint16_t, AmHandler> handlers GUARDED_BY(mu);
  std::deque<std::pair<AmRequest, AmResponder>> queue GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  std::atomic<uint64_t> dropped{0};
  std::thread dispatcher;

  void Run();
};

namespace {

class LoopbackSink final : public AmReplySink {
 public:
  LoopbackSink(std::shared_ptr<LoopbackCall> call, std::shared_ptr<LoopbackAmCore> caller)
      : call_(std::move(call)), caller_(std::move(caller)) {}

  bool Send(ErrorCode status, std::string header, std::string data) override {
    const bool fits = header.size() <= LoopbackAm::kMaxHeaderSize;
    if (!fits) {
      // As UcxAm: a reply that cannot travel is answered INVALID_PARAMS.
      status = ErrorCode::INVALID_PARAMS;
      header.clear();
      data.clear();
    }
    MutexLock lock(&call_->mu);
    if (call_->abandoned) {
      caller_->dropped.fetch_add(1);
      return false;
    }
    call_->status = status;
    call_->reply.header = std::move(header);
    call_->reply.data_size = data.size();
    if (status == ErrorCode::OK) Deliver(std::move(data));
    call_->done = true;
    call_->cv.notify_all();
    return fits;
  }

 private:
  void Deliver(std::string data) REQUIRES(call_->mu) {
    const AmReplyTarget& target = call_->target;
    if (target.data == nullptr) {
      call_->reply.data = std::move(data);
    } else if (data.size() > target.capacity) {
      call_->status = ErrorCode::BUFFER_OVERFLOW;
    } else {
      std::memcpy(target.data, data.data(), data.size());
    }
  }

  const std::shared_ptr<LoopbackCall> call_;
  const std::shared_ptr<LoopbackAmCore> caller_;
};

struct AmRegistry {
  Mutex mu;
  std::unordered_map<std::string, std::shared_ptr<LoopbackAmCore>> live GUARDED_BY(mu);
};

AmRegistry& TheAmRegistry() {
  static AmRegistry* registry = new AmRegistry;  // never destroyed: may outlive statics
  return *registry;
}

std::shared_ptr<LoopbackAmCore> FindPeer(std::string_view endpoint) {
  AmRegistry& registry = TheAmRegistry();
  MutexLock lock(&registry.mu);
  auto it = registry.live.find(std::string(endpoint));
  return it == registry.live.end() ? nullptr : it->second;
}

}  // namespace

void LoopbackAmCore::Run() {
  MutexLock lock(&mu);
  while (true) {
    cv.wait(lock, [this]() REQUIRES(mu) { return stopping || !queue.empty(); });
    if (stopping) break;
    auto [request, responder] = std::move(queue.front());
    queue.pop_front();
    auto it = handlers.find(request.id);
    AmHandler handler = it == handlers.end() ? AmHandler() : it->second;
    lock.unlock();
    if (handler) {
      handler(std::move(request), std::move(responder));
    } else {
      responder.Fail(ErrorCode::INVALID_PARAMS);
    }
    lock.lock();
  }
  for (auto& queued : queue) queued.second.Fail(ErrorCode::TRANSFER_FAIL);
  queue.clear();
}

LoopbackAm::LoopbackAm(std::string endpoint, const TransportOptions& options)
    : endpoint_(std::move(endpoint)), options_(options),
      core_(std::make_shared<LoopbackAmCore>()) {
  core_->cluster_token = options_.cluster_token;
  core_->dispatcher = std::thread([core = core_.get()] { core->Run(); });
  AmRegistry& registry = TheAmRegistry();
  MutexLock lock(&registry.mu);
  registry.live[endpoint_] = core_;
}

LoopbackAm::~LoopbackAm() {
  {
    AmRegistry& registry = TheAmRegistry();
    MutexLock lock(&registry.mu);
    registry.live.erase(endpoint_);
  }
  {
    MutexLock lock(&core_->mu);
    core_->stopping = true;
  }
  core_->cv.notify_all();
  core_->dispatcher.join();
}

void LoopbackAm::SetHandler(uint16_t id, AmHandler handler) {
  MutexLock lock(&core_->mu);
  if (handler) {
    core_->handlers[id] = std::move(handler);
  } else {
    core_->handlers.erase(id);
  }
}

uint64_t LoopbackAm::dropped_messages() const { return core_->dropped.load(); }

Result<AmReply> LoopbackAm::CallInto(std::string_view endpoint, uint16_t id,
                                     std::string_view header, std::string_view payload,
                                     AmReplyTarget into, int64_t timeout_ms) {
  if (header.size() > kMaxHeaderSize) return ErrorCode::INVALID_PARAMS;
  std::shared_ptr<LoopbackAmCore> peer = FindPeer(endpoint);
  if (peer == nullptr) return ErrorCode::TRANSFER_FAIL;
  if (peer->cluster_token != options_.cluster_token) return ErrorCode::ILLEGAL_CLIENT;
  auto call = std::make_shared<LoopbackCall>();
  call->target = into;
  AmRequest request{options_.client_id, id, std::string(header), std::string(payload)};
  AmResponder responder(std::make_unique<LoopbackSink>(call, core_));
  {
    MutexLock lock(&peer->mu);
    if (peer->stopping) return ErrorCode::TRANSFER_FAIL;  // the responder answers nobody
    peer->queue.emplace_back(std::move(request), std::move(responder));
  }
  peer->cv.notify_all();
  MutexLock lock(&call->mu);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  call->cv.wait_until(lock, deadline, [&]() REQUIRES(call->mu) { return call->done; });
  if (!call->done) {
    call->abandoned = true;
    return ErrorCode::TRANSFER_FAIL;
  }
  if (call->status != ErrorCode::OK) return call->status;
  return std::move(call->reply);
}

}  // namespace shelfmark
