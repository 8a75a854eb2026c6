// TransportSet: the engines a process uses, by protocol name, and the one
// place that routes a batch of transfer ops to them.
//
// Engines arrive in two ways: Add() hands over an engine the caller built, or
// Open() builds one from a factory registered under its protocol name.
// "loopback" and "ucx" factories are built in; other engines (the verbs
// engine, library shelfmark::transport_verbs) plug in through
// RegisterFactory() from the caller, so this library never links them.
//
// Transfer() groups ops by their descriptor's protocol, checks that an engine
// exists for every protocol before anything moves (INVALID_PARAMS "unknown
// protocol 'x'" otherwise), then runs each engine's part in turn against one
// deadline. It returns the first failing part's status (later parts do not
// run).
//
// Thread safety: Add/RegisterFactory/Open are setup calls and take a lock;
// For() and Transfer() may run concurrently with each other and with them.
// An engine lives as long as the set.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/mutex.h"
#include "common/result.h"
#include "transport/transport.h"

namespace shelfmark {

using TransportFactory =
    std::function<Result<std::unique_ptr<TransportEngine>>(const TransportOptions&)>;

// Picks the data-plane protocol from the node's --protocol value: "rdma" and
// "ucx" as given, "auto" -> "rdma" when an RDMA device is present, else
// "ucx". Anything else -> INVALID_PARAMS.
Result<std::string> ChooseProtocol(std::string_view requested, bool rdma_device_present);

class TransportSet {
 public:
  TransportSet();  // registers the "loopback" and "ucx" factories
  ~TransportSet();
  TransportSet(const TransportSet&) = delete;
  TransportSet& operator=(const TransportSet&) = delete;

  // Replaces the factory for `protocol`.
  void RegisterFactory(std::string protocol, TransportFactory factory);
  // The engine for `protocol`, built with `options` on first call (later calls
  // return the same engine and ignore `options`). No factory ->
  // INVALID_PARAMS; a failing factory's code is passed on.
  Result<TransportEngine*> Open(std::string_view protocol, const TransportOptions& options);
  // Adds an engine under engine->protocol(). One already there ->
  // INVALID_PARAMS (the set keeps the old one).
  Result<TransportEngine*> Add(std::unique_ptr<TransportEngine> engine);

  // nullptr when no engine serves `protocol`.
  TransportEngine* For(std::string_view protocol) const;

  TransferStatus Transfer(TransferKind kind, std::span<const TransferOp> ops,
                          int64_t timeout_ms) const;

 private:
  mutable SharedMutex mu_;
  std::map<std::string, TransportFactory, std::less<>> factories_ GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<TransportEngine>, std::less<>> engines_ GUARDED_BY(mu_);
};

}  // namespace shelfmark
