// VerbsEngine: the "rdma" protocol. One-sided RDMA READ / WRITE of MEMORY
// replicas with libibverbs over reliable-connected QPs that librdmacm sets up
// (transport.h is the contract; this file adds what is verbs-specific).
//
// Setup lives in verbs_device.h (device, PD, port: active MTU, RoCE v2 IPv4
// GID) and verbs_connection.h (listener and client connections proving the
// cluster token to each other, per-peer cache). This file holds memory
// registration and the hot path: Transfer() posts signalled work requests,
// up to the QP's send depth at a time, and reaps completions (busy polling
// briefly, then sleeping on the CQ's completion channel) until all are done
// or the deadline passes.
//
// Node side (listen_ip set): a listener on listen_ip:listen_port of the
// device; endpoint() is "ip:port" with the actual port. Client side: the
// device's RoCE v2 IPv4 address is the rdma_cm source address, so client QPs
// live on the configured device.
//
// Memory: RegisterMemory(remote_access=true) registers with
// IBV_ACCESS_LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE; remote_access=false
// with LOCAL_WRITE only. MemoryRegion.rkey is the MR's rkey, 4 bytes
// little-endian (kRkeySize).
//
// Transfer():
//  - INVALID_PARAMS before anything is posted: null descriptor, length 0 or
//    over 2 GiB, range outside [0, size), an rkey that is not 4 bytes,
//    `local` not inside a region this engine registered;
//  - ops are grouped per endpoint; each group runs under that peer's lock
//    (transfers to one peer are serialised; different peers run in
//    parallel), connecting first when needed;
//  - any work completion with a bad status -> TRANSFER_FAIL naming the
//    status (ibv_wc_status_str, e.g. "remote access error" for a wrong rkey
//    or a range outside the owner's registration); deadline passed ->
//    TRANSFER_FAIL "timed out"; in both cases the connection is destroyed
//    (the device no longer touches the local buffers when Transfer returns)
//    and the next Transfer() to that peer reconnects;
//  - OK means every op completed (WRITE: the bytes are at the owner).
//
// Counters (counters()): work requests posted per kind, bytes, connections,
// failed transfers; the node and client export them as metrics, and they
// prove that reads went over RDMA. A line goes to stderr every
// kReadLogInterval posted READs.
//
// Thread safety: every method may be called from any thread. Unregistering a
// region while a transfer uses it is the caller's error (the device then
// reports a protection error for that transfer).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "transport/transport.h"
#include "transport/verbs_connection.h"
#include "transport/verbs_device.h"

namespace shelfmark {

using VerbsCounters = EngineCounters;

// True when this machine has at least one RDMA device (ibv_get_device_list).
bool RdmaDevicePresent();

class VerbsEngine final : public TransportEngine {
 public:
  static constexpr std::string_view kProtocol = "rdma";
  static constexpr size_t kRkeySize = 4;
  static constexpr uint64_t kReadLogInterval = 1'000'000;
  static constexpr uint32_t kSendDepth = 128;

  // Opens options.device ("" : the first), and listens when listen_ip is
  // set. No device, unknown device, bad listen address -> INVALID_PARAMS;
  // verbs failures -> TRANSFER_FAIL; the reason goes to *error when given.
  static Result<std::unique_ptr<VerbsEngine>> Create(const TransportOptions& options,
                                                     std::string* error = nullptr);
  ~VerbsEngine() override;
  VerbsEngine(const VerbsEngine&) = delete;
  VerbsEngine& operator=(const VerbsEngine&) = delete;

  std::string_view protocol() const override { return kProtocol; }
  std::string endpoint() const override { return endpoint_; }
  // addr nullptr or size 0 -> INVALID_PARAMS; ibv_reg_mr failing ->
  // TRANSFER_FAIL.
  Result<MemoryRegion> RegisterMemory(void* addr, uint64_t size, bool remote_access) override;
  // Unknown regions are ignored.
  void UnregisterMemory(const MemoryRegion& region) override;
  TransferStatus Transfer(TransferKind kind, std::span<const TransferOp> ops,
                          int64_t timeout_ms) override;

  // Raw verbs baseline for benchmarks: one RDMA READ of `length` bytes at
  // remote->buffer_address + remote_offset into `local` (inside
  // `local_region`, which this engine registered), posted on the cached
  // connection and busy-polled, with none of Transfer()'s checks, grouping
  // or counters. Failures as Transfer().
  TransferStatus RawRead(const MemoryDescriptor& remote, uint64_t remote_offset,
                         const MemoryRegion& local_region, void* local, uint64_t length,
                         int64_t timeout_ms);

  VerbsCounters counters() const;
  const std::string& device_name() const { return device_->name(); }
  // The node side's listener (nullptr on a client), for tests' fault hooks.
  VerbsListener* testing_listener() { return listener_.get(); }
  const VerbsPortInfo& port() const { return device_->port(); }

 private:
  struct Region {
    ibv_mr* mr = nullptr;  // MemoryRegion.handle is this pointer
    uint64_t size = 0;
  };
  struct Work;  // one op, resolved: remote address, rkey, lkey

  explicit VerbsEngine(const TransportOptions& options) : options_(options) {}
  // lkey of the registered region holding [addr, addr + length); nullopt if none.
  std::optional<uint32_t> LocalKey(const void* addr, uint64_t length) const;
  TransferStatus RunPeer(TransferKind kind, const std::string& endpoint, std::span<Work> work,
                         int64_t deadline_ns);
  void CountPosted(TransferKind kind, uint64_t n);

  const TransportOptions options_;
  std::unique_ptr<VerbsDevice> device_;
  std::unique_ptr<VerbsListener> listener_;
  std::unique_ptr<VerbsConnectionCache> connections_;
  std::string endpoint_;

  mutable SharedMutex regions_mu_;
  // By start address (several registrations may share one).
  std::map<uintptr_t, std::vector<Region>> regions_ GUARDED_BY(regions_mu_);

  std::atomic<uint64_t> reads_posted_{0};
  std::atomic<uint64_t> writes_posted_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> failed_transfers_{0};
};

// A TransportFactory-shaped constructor (TransportSet::RegisterFactory("rdma",
// ...)): VerbsEngine::Create, with the failure reason written to stderr.
Result<std::unique_ptr<TransportEngine>> CreateVerbsEngine(const TransportOptions& options);

}  // namespace shelfmark
