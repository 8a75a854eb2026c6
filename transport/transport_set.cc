#include "transport/transport_set.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "transport/loopback_engine.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::string> ChooseProtocol(std::string_view requested, bool rdma_device_present) {
  if (requested == "rdma" || requested == "ucx") return std::string(requested);
  if (requested == "auto") return std::string(rdma_device_present ? "rdma" : "ucx");
  return ErrorCode::INVALID_PARAMS;
}

TransportSet::TransportSet() {
  RegisterFactory(std::string(LoopbackEngine::kProtocol),
                  [](const TransportOptions& options) -> Result<std::unique_ptr<TransportEngine>> {
                    return std::unique_ptr<TransportEngine>(new LoopbackEngine(options));
                  });
  RegisterFactory(std::string(UcxEngine::kProtocol),
                  [](const TransportOptions& options) -> Result<std::unique_ptr<TransportEngine>> {
                    auto engine = UcxEngine::Create(options);
                    if (!engine.ok()) return engine.error();
                    return std::unique_ptr<TransportEngine>(std::move(engine).value());
                  });
}

TransportSet::~TransportSet() = default;

void TransportSet::RegisterFactory(std::string protocol, TransportFactory factory) {
  WriterLock lock(&mu_);
  factories_[std::move(protocol)] = std::move(factory);
}

Result<TransportEngine*> TransportSet::Open(std::string_view protocol,
                                            const TransportOptions& options) {
  TransportFactory factory;
  {
    WriterLock lock(&mu_);
    auto engine = engines_.find(protocol);
    if (engine != engines_.end()) return engine->second.get();
    auto found = factories_.find(protocol);
    if (found == factories_.end()) return ErrorCode::INVALID_PARAMS;
    factory = found->second;
  }
  // Built outside the lock (device and listener setup may take a while).
  auto built = factory(options);
  if (!built.ok()) return built.error();
  WriterLock lock(&mu_);
  auto [it, inserted] = engines_.try_emplace(std::string(protocol), std::move(built).value());
  return it->second.get();  // a racing Open() that won keeps its engine
}

Result<TransportEngine*> TransportSet::Add(std::unique_ptr<TransportEngine> engine) {
  if (engine == nullptr) return ErrorCode::INVALID_PARAMS;
  WriterLock lock(&mu_);
  auto [it, inserted] = engines_.try_emplace(std::string(engine->protocol()), nullptr);
  if (!inserted) return ErrorCode::INVALID_PARAMS;
  it->second = std::move(engine);
  return it->second.get();
}

TransportEngine* TransportSet::For(std::string_view protocol) const {
  ReaderLock lock(&mu_);
  auto it = engines_.find(protocol);
  return it == engines_.end() ? nullptr : it->second.get();
}

TransferStatus TransportSet::Transfer(TransferKind kind, std::span<const TransferOp> ops,
                                      int64_t timeout_ms) const {
  // The common case (one op, or ops of one protocol) goes straight to the
  // engine: no grouping on the hot path.
  if (!ops.empty() && ops.front().remote != nullptr &&
      std::all_of(ops.begin(), ops.end(), [&](const TransferOp& op) {
        return op.remote != nullptr && op.remote->protocol == ops.front().remote->protocol;
      })) {
    TransportEngine* engine = For(ops.front().remote->protocol);
    if (engine == nullptr) {
      return {ErrorCode::INVALID_PARAMS, "unknown protocol '" + ops.front().remote->protocol + "'"};
    }
    return engine->Transfer(kind, ops, timeout_ms);
  }
  // Group by protocol, keeping each group's ops in the caller's order.
  std::map<std::string_view, std::pair<TransportEngine*, std::vector<TransferOp>>> parts;
  for (const TransferOp& op : ops) {
    if (op.remote == nullptr) return {ErrorCode::INVALID_PARAMS, "transfer op without remote"};
    auto& part = parts[op.remote->protocol];
    if (part.first == nullptr) {
      part.first = For(op.remote->protocol);
      if (part.first == nullptr) {
        return {ErrorCode::INVALID_PARAMS, "unknown protocol '" + op.remote->protocol + "'"};
      }
    }
    part.second.push_back(op);
  }
  const int64_t deadline = NowMs() + timeout_ms;
  for (auto& [protocol, part] : parts) {
    const int64_t left = std::max<int64_t>(deadline - NowMs(), 0);
    TransferStatus status = part.first->Transfer(kind, part.second, left);
    if (!status.ok()) return status;
  }
  return {};
}

}  // namespace shelfmark
