// LoopbackEngine: the "loopback" protocol, an in-process TransportEngine for
// unit tests of the layers above (client library, node). Transfer() really
// copies bytes with memcpy and applies the same checks a real engine and the
// owner's NIC apply, so tests of the layers above see real failures.
//
// Model:
//  - every engine has an endpoint "loopback:<n>" (n unique in the process),
//    whether or not TransportOptions::listen_ip is set: loopback engines are
//    always reachable inside the process;
//  - a process-wide registry maps (endpoint, rkey) to the regions engines
//    registered with remote_access; RegisterMemory(remote_access=true)
//    publishes the region under a fresh rkey ("lb<m>"), UnregisterMemory and
//    the engine's destructor withdraw it;
//  - Transfer() checks, per op, before anything is copied:
//      * remote != nullptr, length > 0, [remote_offset, +length) inside
//        [0, remote->size), `local` inside a region this engine registered
//        (remote or not)                          -> INVALID_PARAMS;
//    then, as the owner's side would:
//      * the endpoint names a live loopback engine  -> else TRANSFER_FAIL
//        "peer gone";
//      * that engine's cluster token equals ours    -> else TRANSFER_FAIL
//        "cluster token rejected" (the same code the UCX and verbs engines
//        return when the node refuses the connection; the client library
//        sees one code for "could not move the bytes");
//      * the absolute range buffer_address + remote_offset .. + length lies
//        inside a region the owner registered under remote->rkey
//                                                   -> else TRANSFER_FAIL
//        "remote access error".
//    Either every op's bytes move or (on a check failure) none do.
//  - messages(): a LoopbackAm on the same endpoint and token.
//
// Thread safety: every method may be called from any thread. Copies run under
// the registry's shared lock, so an owner cannot unregister a region while a
// copy from it is in progress (a real NIC has the same guarantee per op).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "transport/loopback_am.h"
#include "transport/transport.h"

namespace shelfmark {

class LoopbackEngine final : public TransportEngine {
 public:
  static constexpr std::string_view kProtocol = "loopback";

  explicit LoopbackEngine(TransportOptions options);
  ~LoopbackEngine() override;
  LoopbackEngine(const LoopbackEngine&) = delete;
  LoopbackEngine& operator=(const LoopbackEngine&) = delete;

  std::string_view protocol() const override { return kProtocol; }
  std::string endpoint() const override { return endpoint_; }
  // size 0 or addr nullptr -> INVALID_PARAMS.
  Result<MemoryRegion> RegisterMemory(void* addr, uint64_t size, bool remote_access) override;
  // Unknown regions are ignored.
  void UnregisterMemory(const MemoryRegion& region) override;
  TransferStatus Transfer(TransferKind kind, std::span<const TransferOp> ops,
                          int64_t timeout_ms) override;
  // Request/response messages on the same endpoint (loopback_am.h).
  AmTransport* messages() override { return am_.get(); }

 private:
  const TransportOptions options_;
  const std::string endpoint_;
  std::unique_ptr<LoopbackAm> am_;
};

}  // namespace shelfmark
