#include "transport/verbs_engine.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace shelfmark {

struct VerbsEngine::Work {
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t lkey = 0;
  void* local = nullptr;
  uint32_t length = 0;
};

namespace {

constexpr uint64_t kMaxOpLength = 1ULL << 31;  // ibv_sge.length; RoCE's max message size
constexpr int64_t kSpinNs = 50'000;            // busy-poll this long after progress, then sleep
constexpr int kPollBatch = 16;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TransferStatus Fail(ErrorCode code, std::string message) { return {code, std::move(message)}; }

const char* KindName(TransferKind kind) {
  return kind == TransferKind::READ ? "RDMA READ" : "RDMA WRITE";
}

std::string EncodeRkey(uint32_t rkey) {
  std::string out(VerbsEngine::kRkeySize, '\0');
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(rkey >> (8 * i));
  return out;
}

uint32_t DecodeRkey(const std::string& bytes) {
  uint32_t rkey = 0;
  for (size_t i = bytes.size(); i-- > 0;) rkey = (rkey << 8) | static_cast<uint8_t>(bytes[i]);
  return rkey;
}

std::string FormatEndpoint(const std::string& ip, uint16_t port) {
  if (ip.find(':') != std::string::npos) return "[" + ip + "]:" + std::to_string(port);
  return ip + ":" + std::to_string(port);
}

// Sleeps on the CQ's completion channel until an event or the deadline.
// The CQ must have been armed (ibv_req_notify_cq) and re-polled empty.
// Returns false when the connection's rdma_cm channel reports that the peer
// went away (its QP no longer answers: waiting for the deadline is useless).
bool WaitForCompletion(VerbsConnection* conn, int64_t deadline_ns) {
  int64_t left_ms = (deadline_ns - NowNs() + 999'999) / 1'000'000;
  if (left_ms <= 0) return true;
  pollfd fds[2] = {{conn->completion_channel()->fd, POLLIN, 0}, {conn->event_fd(), POLLIN, 0}};
  if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left_ms, 100))) <= 0) return true;
  if (fds[0].revents != 0) {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(conn->completion_channel(), &cq, &context) == 0) {
      ibv_ack_cq_events(cq, 1);
    }
  }
  return fds[1].revents == 0 || conn->Healthy();
}

}  // namespace

bool RdmaDevicePresent() { return !VerbsDevice::DeviceNames().empty(); }

// --- setup ---------------------------------------------------------------------------

Result<std::unique_ptr<VerbsEngine>> VerbsEngine::Create(const TransportOptions& options,
                                                         std::string* error) {
  std::unique_ptr<VerbsEngine> engine(new VerbsEngine(options));
  Result<std::unique_ptr<VerbsDevice>> device = VerbsDevice::Open(options.device, error);
  if (!device.ok()) return device.error();
  engine->device_ = std::move(device).value();
  const VerbsPortInfo& port = engine->device_->port();

  VerbsConnectParams base;
  base.source_ip = port.ipv4;
  base.client_id = options.client_id;
  base.cluster_token = options.cluster_token;
  base.timeout_ms = options.connect_timeout_ms;
  base.send_depth = kSendDepth;
  engine->connections_ = std::make_unique<VerbsConnectionCache>(engine->device_.get(), base);

  if (!options.listen_ip.empty()) {
    Result<std::unique_ptr<VerbsListener>> listener = VerbsListener::Start(
        engine->device_.get(), options.listen_ip, options.listen_port, options.cluster_token, error);
    if (!listener.ok()) return listener.error();
    engine->listener_ = std::move(listener).value();
    bool wildcard = options.listen_ip == "0.0.0.0" || options.listen_ip == "::";
    std::string ip = wildcard && !port.ipv4.empty() ? port.ipv4 : options.listen_ip;
    engine->endpoint_ = FormatEndpoint(ip, engine->listener_->port());
  }
  return engine;
}

VerbsEngine::~VerbsEngine() {
  connections_.reset();  // client QPs and CQs
  listener_.reset();     // node QPs; peers see DISCONNECTED
  WriterLock lock(&regions_mu_);
  for (auto& [addr, list] : regions_) {
    for (Region& region : list) ibv_dereg_mr(region.mr);
  }
  regions_.clear();
}  // then the device (PD)

Result<MemoryRegion> VerbsEngine::RegisterMemory(void* addr, uint64_t size, bool remote_access) {
  if (addr == nullptr || size == 0) return ErrorCode::INVALID_PARAMS;
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (remote_access) access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  ibv_mr* mr = ibv_reg_mr(device_->pd(), addr, size, access);
  if (mr == nullptr) {
    std::fprintf(stderr, "shelfmark rdma: ibv_reg_mr(%llu bytes) on %s failed: %s\n",
                 static_cast<unsigned long long>(size), device_->name().c_str(),
                 std::strerror(errno));
    return ErrorCode::TRANSFER_FAIL;
  }
  MemoryRegion region;
  region.addr = addr;
  region.size = size;
  region.handle = reinterpret_cast<uintptr_t>(mr);
  if (remote_access) region.rkey = EncodeRkey(mr->rkey);
  WriterLock lock(&regions_mu_);
  regions_[reinterpret_cast<uintptr_t>(addr)].push_back({mr, size});
  return region;
}

void VerbsEngine::UnregisterMemory(const MemoryRegion& region) {
  WriterLock lock(&regions_mu_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(region.addr));
  if (it == regions_.end()) return;
  std::vector<Region>& list = it->second;
  for (auto r = list.begin(); r != list.end(); ++r) {
    if (reinterpret_cast<uintptr_t>(r->mr) != region.handle) continue;
    ibv_dereg_mr(r->mr);
    list.erase(r);
    break;
  }
  if (list.empty()) regions_.erase(it);
}

std::optional<uint32_t> VerbsEngine::LocalKey(const void* addr, uint64_t length) const {
  auto start = reinterpret_cast<uintptr_t>(addr);
  ReaderLock lock(&regions_mu_);
  // Regions starting at or before addr, nearest first.
  for (auto it = regions_.upper_bound(start); it != regions_.begin();) {
    --it;
    for (const Region& r : it->second) {
      uint64_t offset = start - it->first;
      if (offset < r.size && length <= r.size - offset) return r.mr->lkey;
    }
  }
  return std::nullopt;
}

VerbsCounters VerbsEngine::counters() const {
  VerbsCounters c;
  c.reads_posted = reads_posted_.load();
  c.writes_posted = writes_posted_.load();
  c.bytes_read = bytes_read_.load();
  c.bytes_written = bytes_written_.load();
  c.connects = connections_->connects();
  c.failed_transfers = failed_transfers_.load();
  if (listener_ != nullptr) {
    c.accepted = listener_->accepted();
    c.rejected = listener_->rejected();
    c.stale_challenges = listener_->stale_challenges();
  }
  return c;
}

Result<std::unique_ptr<TransportEngine>> CreateVerbsEngine(const TransportOptions& options) {
  std::string error;
  Result<std::unique_ptr<VerbsEngine>> engine = VerbsEngine::Create(options, &error);
  if (!engine.ok()) {
    std::fprintf(stderr, "shelfmark rdma: %s\n", error.c_str());
    return engine.error();
  }
  return std::unique_ptr<TransportEngine>(std::move(engine).value());
}

// --- hot path ------------------------------------------------------------------------

void VerbsEngine::CountPosted(TransferKind kind, uint64_t n) {
  if (kind == TransferKind::WRITE) {
    writes_posted_.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  uint64_t before = reads_posted_.fetch_add(n, std::memory_order_relaxed);
  if ((before + n) / kReadLogInterval != before / kReadLogInterval) {
    std::fprintf(stderr, "shelfmark rdma: %llu RDMA READs posted on %s\n",
                 static_cast<unsigned long long>(before + n), device_->name().c_str());
  }
}

TransferStatus VerbsEngine::Transfer(TransferKind kind, std::span<const TransferOp> ops,
                                     int64_t timeout_ms) {
  const int64_t deadline_ns = NowNs() + std::max<int64_t>(0, timeout_ms) * 1'000'000;
  if (ops.empty()) return {};
  std::vector<Work> work(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const TransferOp& op = ops[i];
    const std::string where = "op " + std::to_string(i) + ": ";
    if (op.remote == nullptr) return Fail(ErrorCode::INVALID_PARAMS, where + "no descriptor");
    if (op.length == 0 || op.length > kMaxOpLength) {
      return Fail(ErrorCode::INVALID_PARAMS, where + "length " + std::to_string(op.length) +
                                                 " not in 1.." + std::to_string(kMaxOpLength));
    }
    if (op.remote_offset > op.remote->size || op.length > op.remote->size - op.remote_offset) {
      return Fail(ErrorCode::INVALID_PARAMS,
                  where + "range [" + std::to_string(op.remote_offset) + ", +" +
                      std::to_string(op.length) + ") outside the descriptor's " +
                      std::to_string(op.remote->size) + " bytes");
    }
    if (op.remote->rkey.size() != kRkeySize) {
      return Fail(ErrorCode::INVALID_PARAMS, where + "rkey is not " + std::to_string(kRkeySize) +
                                                 " bytes (not an rdma descriptor?)");
    }
    std::optional<uint32_t> lkey = LocalKey(op.local, op.length);
    if (!lkey.has_value()) {
      return Fail(ErrorCode::INVALID_PARAMS, where + "local buffer not inside a registered region");
    }
    work[i] = {op.remote->buffer_address + op.remote_offset, DecodeRkey(op.remote->rkey), *lkey,
               op.local, static_cast<uint32_t>(op.length)};
  }

  // Group by peer (stable), then run each group against the one deadline.
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ops[a].remote->endpoint < ops[b].remote->endpoint;
  });
  std::vector<Work> grouped;
  grouped.reserve(work.size());
  for (size_t begin = 0; begin < order.size();) {
    const std::string& endpoint = ops[order[begin]].remote->endpoint;
    grouped.clear();
    size_t end = begin;
    while (end < order.size() && ops[order[end]].remote->endpoint == endpoint) {
      grouped.push_back(work[order[end++]]);
    }
    TransferStatus status = RunPeer(kind, endpoint, grouped, deadline_ns);
    if (!status.ok()) {
      failed_transfers_.fetch_add(1, std::memory_order_relaxed);
      return status;
    }
    begin = end;
  }
  return {};
}

TransferStatus VerbsEngine::RunPeer(TransferKind kind, const std::string& endpoint,
                                    std::span<Work> work, int64_t deadline_ns) {
  std::shared_ptr<VerbsPeer> peer = connections_->Peer(endpoint);
  MutexLock lock(&peer->mu);
  std::string error;
  Result<VerbsConnection*> acquired = peer->Acquire(&error);
  if (!acquired.ok()) {
    return Fail(acquired.error() == ErrorCode::INVALID_PARAMS ? ErrorCode::INVALID_PARAMS
                                                               : ErrorCode::TRANSFER_FAIL,
                error);
  }
  VerbsConnection* conn = *acquired;
  ibv_qp* qp = conn->qp();
  ibv_cq* cq = conn->cq();
  const size_t n = work.size();
  const size_t depth = conn->send_depth();
  std::vector<ibv_send_wr> wrs(std::min(depth, n));
  std::vector<ibv_sge> sges(wrs.size());
  const ibv_wr_opcode opcode = kind == TransferKind::READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;

  size_t next = 0, done = 0, outstanding = 0;
  uint64_t bytes = 0;
  std::string failure;
  bool armed = false;
  int64_t spin_until = NowNs() + kSpinNs;
  while (done < n) {
    if (next < n && outstanding < depth) {
      // Post as many as the send queue takes, as one chain.
      size_t k = std::min(depth - outstanding, n - next);
      for (size_t i = 0; i < k; ++i) {
        const Work& w = work[next + i];
        sges[i] = {reinterpret_cast<uintptr_t>(w.local), w.length, w.lkey};
        ibv_send_wr& wr = wrs[i];
        wr = {};
        wr.wr_id = next + i;
        wr.sg_list = &sges[i];
        wr.num_sge = 1;
        wr.opcode = opcode;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = w.remote_addr;
        wr.wr.rdma.rkey = w.rkey;
        wr.next = i + 1 < k ? &wrs[i + 1] : nullptr;
      }
      ibv_send_wr* bad = nullptr;
      int rc = ibv_post_send(qp, wrs.data(), &bad);
      size_t posted = rc == 0 ? k : (bad != nullptr ? static_cast<size_t>(bad - wrs.data()) : 0);
      CountPosted(kind, posted);
      outstanding += posted;
      next += posted;
      if (rc != 0) {
        failure = std::string("ibv_post_send: ") + std::strerror(rc);
        break;
      }
    }
    ibv_wc wcs[kPollBatch];
    int got = ibv_poll_cq(cq, kPollBatch, wcs);
    if (got < 0) {
      failure = "ibv_poll_cq failed";
      break;
    }
    for (int i = 0; i < got; ++i) {
      --outstanding;
      ++done;
      if (wcs[i].status != IBV_WC_SUCCESS) {
        if (failure.empty()) {
          failure = std::string(KindName(kind)) + " from " + endpoint + " failed: " +
                    ibv_wc_status_str(wcs[i].status) + " (status " +
                    std::to_string(wcs[i].status) + ", vendor error " +
                    std::to_string(wcs[i].vendor_err) + ")";
        }
      } else if (wcs[i].wr_id < n) {
        bytes += work[wcs[i].wr_id].length;
      }
    }
    if (!failure.empty()) break;
    if (got > 0) {
      armed = false;
      spin_until = NowNs() + kSpinNs;
      continue;
    }
    if (next < n && outstanding < depth) continue;  // room to post more
    int64_t now = NowNs();
    if (now >= deadline_ns) {
      failure = std::string(KindName(kind)) + " from " + endpoint + " timed out with " +
                std::to_string(n - done) + " of " + std::to_string(n) + " ops outstanding";
      break;
    }
    if (now < spin_until) continue;
    if (!armed) {  // arm, then poll once more before sleeping (no lost wake-up)
      ibv_req_notify_cq(cq, 0);
      armed = true;
      continue;
    }
    if (!WaitForCompletion(conn, deadline_ns)) {
      failure = std::string(KindName(kind)) + " from " + endpoint + ": peer disconnected with " +
                std::to_string(n - done) + " of " + std::to_string(n) + " ops outstanding";
      break;
    }
    armed = false;
  }
  if (kind == TransferKind::READ) {
    bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
  }
  if (failure.empty()) return {};
  peer->Drop();  // destroys the QP: the device stops touching the buffers
  return Fail(ErrorCode::TRANSFER_FAIL, failure);
}

TransferStatus VerbsEngine::RawRead(const MemoryDescriptor& remote, uint64_t remote_offset,
                                    const MemoryRegion& local_region, void* local, uint64_t length,
                                    int64_t timeout_ms) {
  const int64_t deadline_ns = NowNs() + std::max<int64_t>(0, timeout_ms) * 1'000'000;
  std::shared_ptr<VerbsPeer> peer = connections_->Peer(remote.endpoint);
  MutexLock lock(&peer->mu);
  std::string error;
  Result<VerbsConnection*> acquired = peer->Acquire(&error);
  if (!acquired.ok()) return Fail(ErrorCode::TRANSFER_FAIL, error);
  auto* mr = reinterpret_cast<ibv_mr*>(local_region.handle);
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), static_cast<uint32_t>(length), mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote.buffer_address + remote_offset;
  wr.wr.rdma.rkey = DecodeRkey(remote.rkey);
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send((*acquired)->qp(), &wr, &bad); rc != 0) {
    peer->Drop();
    return Fail(ErrorCode::TRANSFER_FAIL, std::string("ibv_post_send: ") + std::strerror(rc));
  }
  ibv_wc wc{};
  for (uint64_t spins = 0;; ++spins) {
    int got = ibv_poll_cq((*acquired)->cq(), 1, &wc);
    if (got > 0) break;
    if (got < 0 || ((spins & 1023) == 0 && NowNs() >= deadline_ns)) {
      peer->Drop();
      return Fail(ErrorCode::TRANSFER_FAIL, got < 0 ? "ibv_poll_cq failed" : "raw READ timed out");
    }
  }
  if (wc.status != IBV_WC_SUCCESS) {
    peer->Drop();
    return Fail(ErrorCode::TRANSFER_FAIL,
                std::string("raw RDMA READ failed: ") + ibv_wc_status_str(wc.status));
  }
  return {};
}

}  // namespace shelfmark
