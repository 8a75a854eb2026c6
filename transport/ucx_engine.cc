#include "transport/ucx_engine.h"

#include <map>
#include <utility>
#include <vector>

#include "transport/local_share.h"
#include "transport/ucx_am.h"
#include "transport/ucx_context.h"

namespace shelfmark {
namespace {

TransferStatus Fail(ErrorCode code, std::string message) { return {code, std::move(message)}; }

// One posted operation (an RMA op or an endpoint flush) and its outcome.
struct Posted {
  void* request = nullptr;  // nullptr: completed at post time
  ucs_status_t status = UCS_OK;
  std::shared_ptr<ClientConn> conn;
};

ucs_status_t PostRma(TransferKind kind, ClientConn& conn, const TransferOp& op, ucp_rkey_h rkey,
                     void** request) {
  ucp_request_param_t param{};
  const uint64_t remote = op.remote->buffer_address + op.remote_offset;
  ucs_status_ptr_t ptr = kind == TransferKind::READ
                             ? ucp_get_nbx(conn.ep, op.local, op.length, remote, rkey, &param)
                             : ucp_put_nbx(conn.ep, op.local, op.length, remote, rkey, &param);
  if (UCS_PTR_IS_ERR(ptr)) return UCS_PTR_STATUS(ptr);
  *request = ptr;
  return UCS_OK;
}

// Serves the READ ops whose node shares its segment on this host by memcpy
// (the worker lock released meanwhile: the copies need no worker); returns
// the ops left for UCX (all of them for writes).
std::vector<const TransferOp*> ReadLocally(
    UcxContext& context, TransferKind kind, std::span<const TransferOp> ops,
    const std::map<std::string_view, std::shared_ptr<ClientConn>>& conns,
    std::atomic<uint64_t>& reads, std::atomic<uint64_t>& bytes) REQUIRES(context.mu()) {
  std::vector<const TransferOp*> remote;
  std::vector<std::pair<const TransferOp*, std::shared_ptr<LocalMapping>>> local;
  for (const TransferOp& op : ops) {
    const ClientConn& conn = *conns.at(op.remote->endpoint);
    const std::shared_ptr<LocalMapping>& mapping = conn.local;
    const uint64_t address = op.remote->buffer_address + op.remote_offset;
    if (kind == TransferKind::READ && conn.state == ClientConn::State::READY &&
        mapping != nullptr && mapping->Covers(address, op.length)) {
      local.emplace_back(&op, mapping);
    } else {
      remote.push_back(&op);
    }
  }
  if (local.empty()) return remote;
  context.mu().unlock();
  for (auto& [op, mapping] : local) {
    if (!mapping->Alive()) {  // the node exited: its old memory is not its segment now
      remote.push_back(op);
      continue;
    }
    mapping->Read(op->remote->buffer_address + op->remote_offset, op->local, op->length);
    reads.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(op->length, std::memory_order_relaxed);
  }
  context.mu().lock();
  return remote;
}

}  // namespace

// Regions this engine registered, for the local-buffer check and unmap.
struct UcxRegions {
  SharedMutex mu;
  std::map<uint64_t, std::pair<uintptr_t, uint64_t>> by_handle GUARDED_BY(mu);

  bool Contains(const void* local, uint64_t length) {
    const auto addr = reinterpret_cast<uintptr_t>(local);
    ReaderLock lock(&mu);
    for (const auto& [handle, range] : by_handle) {
      if (addr >= range.first && length <= range.second && addr - range.first <= range.second - length) {
        return true;
      }
    }
    return false;
  }
};

UcxEngine::UcxEngine(std::unique_ptr<UcxContext> context)
    : context_(std::move(context)),
      am_(std::make_unique<UcxAm>(context_.get())),
      regions_(std::make_unique<UcxRegions>()) {}

UcxEngine::~UcxEngine() {
  am_.reset();
  std::vector<uint64_t> handles;
  {
    ReaderLock lock(&regions_->mu);
    for (const auto& [handle, range] : regions_->by_handle) handles.push_back(handle);
  }
  for (uint64_t handle : handles) ucp_mem_unmap(context_->ucp(), reinterpret_cast<ucp_mem_h>(handle));
}

Result<std::unique_ptr<UcxEngine>> UcxEngine::Create(const TransportOptions& options) {
  auto context = UcxContext::Create(options);
  if (!context.ok()) return context.error();
  return std::unique_ptr<UcxEngine>(new UcxEngine(std::move(context).value()));
}

std::string UcxEngine::endpoint() const { return context_->endpoint(); }
UcxAm& UcxEngine::am() { return *am_; }
AmTransport* UcxEngine::messages() { return am_.get(); }
UcxContext& UcxEngine::context() { return *context_; }

Result<MemoryRegion> UcxEngine::RegisterMemory(void* addr, uint64_t size, bool remote_access) {
  if (addr == nullptr || size == 0) return ErrorCode::INVALID_PARAMS;
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = addr;
  params.length = size;
  ucp_mem_h memh = nullptr;
  if (ucp_mem_map(context_->ucp(), &params, &memh) != UCS_OK) return ErrorCode::TRANSFER_FAIL;
  MemoryRegion region;
  region.addr = addr;
  region.size = size;
  region.handle = reinterpret_cast<uint64_t>(memh);
  if (remote_access) {
    void* packed = nullptr;
    size_t packed_size = 0;
    if (ucp_rkey_pack(context_->ucp(), memh, &packed, &packed_size) != UCS_OK) {
      ucp_mem_unmap(context_->ucp(), memh);
      return ErrorCode::TRANSFER_FAIL;
    }
    region.rkey.assign(static_cast<const char*>(packed), packed_size);
    ucp_rkey_buffer_release(packed);
  }
  WriterLock lock(&regions_->mu);
  regions_->by_handle[region.handle] = {reinterpret_cast<uintptr_t>(addr), size};
  return region;
}

ErrorCode UcxEngine::ShareLocally(const MemoryRegion& region, int memfd) {
  auto shared = context_->ShareLocally(memfd, reinterpret_cast<uint64_t>(region.addr), region.size);
  return shared.ok() ? ErrorCode::OK : shared.error();
}

std::optional<EngineCounters> UcxEngine::transfer_counters() const {
  EngineCounters c;
  c.reads_posted = reads_posted_.load(std::memory_order_relaxed);
  c.writes_posted = writes_posted_.load(std::memory_order_relaxed);
  c.local_reads = local_reads_.load(std::memory_order_relaxed);
  c.local_bytes_read = local_bytes_read_.load(std::memory_order_relaxed);
  c.local_maps = context_->local_maps();
  c.accepted = context_->accepted();
  c.rejected = context_->rejected();
  c.stale_challenges = context_->stale_hellos();
  return c;
}

void UcxEngine::UnregisterMemory(const MemoryRegion& region) {
  {
    WriterLock lock(&regions_->mu);
    if (regions_->by_handle.erase(region.handle) == 0) return;
  }
  ucp_mem_unmap(context_->ucp(), reinterpret_cast<ucp_mem_h>(region.handle));
}

TransferStatus UcxEngine::Transfer(TransferKind kind, std::span<const TransferOp> ops,
                                   int64_t timeout_ms) {
  for (const TransferOp& op : ops) {
    if (op.remote == nullptr || op.local == nullptr || op.length == 0) {
      return Fail(ErrorCode::INVALID_PARAMS, "transfer op without remote, local or length");
    }
    if (op.remote_offset > op.remote->size || op.length > op.remote->size - op.remote_offset) {
      return Fail(ErrorCode::INVALID_PARAMS, "transfer op outside the descriptor's range");
    }
    if (!regions_->Contains(op.local, op.length)) {
      return Fail(ErrorCode::INVALID_PARAMS, "local buffer is not inside a registered region");
    }
  }
  const int64_t deadline = UcxNowMs() + timeout_ms;
  MutexLock lock(&context_->mu());
  // Connections first (each bounded by connect_timeout_ms).
  std::map<std::string_view, std::shared_ptr<ClientConn>> conns;
  for (const TransferOp& op : ops) {
    auto& conn = conns[op.remote->endpoint];
    if (conn != nullptr) continue;
    ErrorCode code = ErrorCode::OK;
    std::string error;
    conn = context_->ConnectLocked(lock, op.remote->endpoint,
                                   UcxNowMs() + context_->options().connect_timeout_ms, &code,
                                   &error);
    if (conn == nullptr) return Fail(ErrorCode::TRANSFER_FAIL, error);
  }
  std::vector<const TransferOp*> remote_ops =
      ReadLocally(*context_, kind, ops, conns, local_reads_, local_bytes_read_);
  if (remote_ops.empty()) return {};
  std::vector<Posted> posted;
  posted.reserve(ops.size() + conns.size());
  TransferStatus failure;
  for (const TransferOp* remote_op : remote_ops) {
    const TransferOp& op = *remote_op;
    auto& conn = conns[op.remote->endpoint];
    if (conn->state != ClientConn::State::READY) {
      failure = Fail(ErrorCode::TRANSFER_FAIL, "ucx: connection to " + conn->endpoint + " lost");
      break;
    }
    ucs_status_t status = UCS_OK;
    ucp_rkey_h rkey = context_->RkeyLocked(*conn, op.remote->rkey, &status);
    if (rkey == nullptr) {
      failure = Fail(ErrorCode::TRANSFER_FAIL,
                     std::string("ucx: bad rkey for ") + conn->endpoint + ": " + ucs_status_string(status));
      break;
    }
    Posted p{nullptr, UCS_OK, conn};
    p.status = PostRma(kind, *conn, op, rkey, &p.request);
    posted.push_back(std::move(p));
    (kind == TransferKind::READ ? reads_posted_ : writes_posted_)
        .fetch_add(1, std::memory_order_relaxed);
  }
  if (failure.ok() && kind == TransferKind::WRITE) {
    // Put completion frees the local buffer; a flush makes the bytes remote.
    for (auto& [endpoint, conn] : conns) {
      ucp_request_param_t param{};
      ucs_status_ptr_t ptr = ucp_ep_flush_nbx(conn->ep, &param);
      Posted p{nullptr, UCS_OK, conn};
      if (UCS_PTR_IS_ERR(ptr)) p.status = UCS_PTR_STATUS(ptr); else p.request = ptr;
      posted.push_back(std::move(p));
    }
  }
  auto all_done = [&] {
    for (Posted& p : posted) {
      if (p.request == nullptr) continue;
      ucs_status_t status = ucp_request_check_status(p.request);
      if (status == UCS_INPROGRESS) return false;
      p.status = status;
      ucp_request_free(p.request);
      p.request = nullptr;
    }
    return true;
  };
  const bool finished = context_->WaitLocked(lock, all_done, deadline);
  if (!finished) {
    // Timed out: force-close the connections; their operations complete
    // (cancelled) before we return, so no local buffer is touched later.
    for (auto& [endpoint, conn] : conns) context_->CloseLocked(conn);
    context_->WaitLocked(lock, all_done, UcxNowMs() + 60'000);
    if (failure.ok()) failure = Fail(ErrorCode::TRANSFER_FAIL, "ucx: transfer timed out");
  }
  for (const Posted& p : posted) {
    if (p.status == UCS_OK || !failure.ok()) continue;
    failure = Fail(ErrorCode::TRANSFER_FAIL, "ucx: " + p.conn->endpoint + ": " +
                                                 ucs_status_string(p.status));
  }
  if (!failure.ok()) {
    for (auto& [endpoint, conn] : conns) context_->CloseLocked(conn);
  }
  return failure;
}

TransferStatus RawUcxGet(UcxEngine& engine, const MemoryDescriptor& remote, uint64_t remote_offset,
                         void* local, uint64_t length, int64_t timeout_ms) {
  UcxContext& context = engine.context();
  MutexLock lock(&context.mu());
  ErrorCode code = ErrorCode::OK;
  std::string error;
  auto conn = context.ConnectLocked(lock, remote.endpoint,
                                    UcxNowMs() + context.options().connect_timeout_ms, &code, &error);
  if (conn == nullptr) return Fail(ErrorCode::TRANSFER_FAIL, error);
  ucs_status_t status = UCS_OK;
  ucp_rkey_h rkey = context.RkeyLocked(*conn, remote.rkey, &status);
  if (rkey == nullptr) return Fail(ErrorCode::TRANSFER_FAIL, ucs_status_string(status));
  ucp_request_param_t param{};
  ucs_status_ptr_t request =
      ucp_get_nbx(conn->ep, local, length, remote.buffer_address + remote_offset, rkey, &param);
  if (UCS_PTR_IS_ERR(request)) return Fail(ErrorCode::TRANSFER_FAIL, ucs_status_string(UCS_PTR_STATUS(request)));
  if (request == nullptr) return {};
  const bool done = context.WaitLocked(
      lock, [&] { return ucp_request_check_status(request) != UCS_INPROGRESS; },
      UcxNowMs() + timeout_ms);
  if (!done) {
    context.CloseLocked(conn);
    context.WaitLocked(lock, [&] { return ucp_request_check_status(request) != UCS_INPROGRESS; },
                       UcxNowMs() + 60'000);
  }
  status = ucp_request_check_status(request);
  ucp_request_free(request);
  if (!done) return Fail(ErrorCode::TRANSFER_FAIL, "ucx: transfer timed out");
  if (status != UCS_OK) return Fail(ErrorCode::TRANSFER_FAIL, ucs_status_string(status));
  return {};
}

}  // namespace shelfmark
