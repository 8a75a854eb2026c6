#include "transport/ucx_engine.h"

#include <map>
#include <utility>
#include <vector>

#include "common/work_splitter.h"
#include "transport/local_share.h"
#include "transport/ucx_am.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory_access.h"

namespace shelfmark {
namespace {

TransferStatus Fail(ErrorCode code, std::string message) { return {code, std::move(message)}; }

// The checked request (ucx_memory_access.h) that moves `op`'s bytes, on
// `conn`; nullopt when the descriptor's rkey is not one of ours.
// UcxAm::CallAllLocked for a caller holding mu() of the engine's context,
// which is the one the engine's UcxAm was built on: the lock it needs,
// though the analysis cannot see that through the two pointers.
std::vector<Result<AmReply>> CallAllOnOwnContext(UcxAm& am, MutexLock& lock,
                                                 std::span<UcxAmOut> calls,
                                                 int64_t deadline_ms) NO_THREAD_SAFETY_ANALYSIS {
  return am.CallAllLocked(lock, calls, deadline_ms);
}

std::optional<UcxAmOut> MemoryRequest(TransferKind kind, std::shared_ptr<ClientConn> conn,
                                      const TransferOp& op) {
  std::optional<uint64_t> key = DecodeUcxRkey(op.remote->rkey);
  if (!key) return std::nullopt;
  UcxAmOut out;
  out.conn = std::move(conn);
  out.header = EncodeUcxMemoryAccess({*key, op.remote->buffer_address + op.remote_offset, op.length});
  if (kind == TransferKind::READ) {
    out.id = kUcxMemoryReadAmId;
    out.into = {op.local, op.length};
  } else {
    out.id = kUcxMemoryWriteAmId;
    out.payload = {static_cast<const char*>(op.local), op.length};
  }
  return out;
}

// Why a checked request failed, for Transfer's message.
std::string RefusalMessage(const UcxAmOut& out, ErrorCode code) {
  switch (code) {
    case ErrorCode::SEGMENT_NOT_FOUND:
      return "ucx: " + out.conn->endpoint +
             " refused the access: no live segment with this rkey (a previous process of "
             "the node, or an unmounted segment)";
    case ErrorCode::INVALID_PARAMS:
      return "ucx: " + out.conn->endpoint + " refused the access: outside its segment";
    default:
      return "ucx: " + out.conn->endpoint + ": " + std::string(ErrorCodeName(code));
  }
}

// Serves the ops whose node shares its segment on this host (local_share.h)
// by memcpy from or into the mapping (the worker lock released meanwhile:
// the copies need no worker); returns the ops left for UCX. Each copy needs
// a READY connection, the op's range inside the mapped segment and the node
// process alive (its pidfd): a node that exited, perhaps restarted on the
// same endpoint, is never read or written through its old memory. Liveness
// is polled once per node and call, before its copies (a system call per op
// is a sizeable part of a 64 KiB copy; a node may die during any copy either
// way). A call's reads stream into their buffers when the call is large
// (StreamsReads, local_share.h); its copies split over helper threads when
// they move enough together (SplitJobs, common/work_splitter.h).
std::vector<const TransferOp*> CopyLocally(
    UcxContext& context, TransferKind kind, std::span<const TransferOp> ops,
    const std::map<std::string_view, std::shared_ptr<ClientConn>>& conns,
    LocalCopyCounters& counters) REQUIRES(context.mu()) {
  std::vector<const TransferOp*> remote;
  std::vector<std::pair<const TransferOp*, std::shared_ptr<LocalMapping>>> local;
  for (const TransferOp& op : ops) {
    const ClientConn& conn = *conns.at(op.remote->endpoint);
    const std::shared_ptr<LocalMapping>& mapping = conn.local;
    const uint64_t address = op.remote->buffer_address + op.remote_offset;
    if (conn.state == ClientConn::State::READY && mapping != nullptr &&
        mapping->Covers(address, op.length)) {
      local.emplace_back(&op, mapping);
    } else {
      remote.push_back(&op);
    }
  }
  if (local.empty()) return remote;
  context.mu().unlock();
  const bool read = kind == TransferKind::READ;
  const bool stream = StreamsReads(kind, ops);
  std::map<const LocalMapping*, bool> alive;
  std::vector<std::pair<const TransferOp*, const LocalMapping*>> copies;
  uint64_t bytes = 0;
  for (auto& [op, mapping] : local) {
    auto [it, first] = alive.try_emplace(mapping.get(), false);
    if (first) it->second = mapping->Alive();
    if (!it->second) {  // the node exited: its old memory is not its segment now
      remote.push_back(op);
      continue;
    }
    copies.emplace_back(op, mapping.get());
    bytes += op->length;
  }
  // (`local` holds the mappings until the copies are done.)
  SplitJobs(copies.size(), bytes, [&](size_t i) {
    const auto [op, mapping] = copies[i];
    const uint64_t address = op->remote->buffer_address + op->remote_offset;
    if (read) {
      mapping->Read(address, op->local, op->length, op->checksum, stream);
    } else {
      mapping->Write(address, op->local, op->length, op->checksum);
    }
  });
  (read ? counters.reads : counters.writes).fetch_add(copies.size(), std::memory_order_relaxed);
  (read ? counters.bytes_read : counters.bytes_written).fetch_add(bytes, std::memory_order_relaxed);
  context.mu().lock();
  return remote;
}

}  // namespace

// Regions this engine registered, for the local-buffer check and unmap.
struct UcxRegions {
  SharedMutex mu;
  struct Range {
    uintptr_t addr = 0;
    uint64_t size = 0;
    uint64_t key = 0;  // remote-access regions: their key in `served`
  };
  std::map<uint64_t, Range> by_handle GUARDED_BY(mu);
  // The remote-access regions, as peers may reach them.
  UcxSegments served;

  bool Contains(const void* local, uint64_t length) {
    const auto addr = reinterpret_cast<uintptr_t>(local);
    ReaderLock lock(&mu);
    for (const auto& [handle, range] : by_handle) {
      if (addr >= range.addr && length <= range.size && addr - range.addr <= range.size - length) {
        return true;
      }
    }
    return false;
  }
};

UcxEngine::UcxEngine(std::unique_ptr<UcxContext> context)
    : context_(std::move(context)),
      am_(std::make_unique<UcxAm>(context_.get())),
      regions_(std::make_unique<UcxRegions>()) {
  UcxSegments* served = &regions_->served;
  am_->SetHandler(kUcxMemoryReadAmId, [served](AmRequest request, AmResponder responder) {
    served->Serve(/*write=*/false, request, std::move(responder));
  });
  am_->SetHandler(kUcxMemoryWriteAmId, [served](AmRequest request, AmResponder responder) {
    served->Serve(/*write=*/true, request, std::move(responder));
  });
}

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
  UcxRegions::Range range{reinterpret_cast<uintptr_t>(addr), size, 0};
  if (remote_access) {
    range.key = regions_->served.Add(range.addr, size);
    region.rkey = EncodeUcxRkey(range.key);
  }
  WriterLock lock(&regions_->mu);
  regions_->by_handle[region.handle] = range;
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
  c.local_reads = local_.reads.load(std::memory_order_relaxed);
  c.local_bytes_read = local_.bytes_read.load(std::memory_order_relaxed);
  c.local_writes = local_.writes.load(std::memory_order_relaxed);
  c.local_bytes_written = local_.bytes_written.load(std::memory_order_relaxed);
  c.local_maps = context_->local_maps();
  c.accepted = context_->accepted();
  c.rejected = context_->rejected();
  c.stale_challenges = context_->stale_hellos();
  const UcxSegments::Refused refused = regions_->served.refused();
  c.refused_stale = refused.stale;
  c.refused_out_of_range = refused.out_of_range;
  c.refused_malformed = refused.malformed;
  c.dropped_messages = context_->dropped();
  return c;
}

void UcxEngine::UnregisterMemory(const MemoryRegion& region) {
  {
    WriterLock lock(&regions_->mu);
    auto it = regions_->by_handle.find(region.handle);
    if (it == regions_->by_handle.end()) return;
    // Refused from here on, and no request is copying it once Remove returns.
    if (it->second.key != 0) regions_->served.Remove(it->second.key);
    regions_->by_handle.erase(it);
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
  std::vector<const TransferOp*> remote_ops = CopyLocally(*context_, kind, ops, conns, local_);
  if (remote_ops.empty()) return {};
  std::vector<UcxAmOut> requests;
  requests.reserve(remote_ops.size());
  for (const TransferOp* op : remote_ops) {
    const std::shared_ptr<ClientConn>& conn = conns[op->remote->endpoint];
    if (conn->state != ClientConn::State::READY) {
      return Fail(ErrorCode::TRANSFER_FAIL, "ucx: connection to " + conn->endpoint + " lost");
    }
    std::optional<UcxAmOut> request = MemoryRequest(kind, conn, *op);
    if (!request) return Fail(ErrorCode::TRANSFER_FAIL, "ucx: bad rkey for " + conn->endpoint);
    requests.push_back(std::move(*request));
  }
  (kind == TransferKind::READ ? reads_posted_ : writes_posted_)
      .fetch_add(requests.size(), std::memory_order_relaxed);
  std::vector<Result<AmReply>> replies = CallAllOnOwnContext(*am_, lock, requests, deadline);
  for (size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i].ok()) return Fail(ErrorCode::TRANSFER_FAIL, RefusalMessage(requests[i], replies[i].error()));
    if (kind == TransferKind::READ && replies[i]->data_size != requests[i].into.capacity) {
      return Fail(ErrorCode::TRANSFER_FAIL, "ucx: " + requests[i].conn->endpoint + " answered a short read");
    }
  }
  return {};
}

TransferStatus RawUcxGet(UcxEngine& engine, const MemoryDescriptor& remote, uint64_t remote_offset,
                         void* local, uint64_t length, int64_t timeout_ms) {
  UcxContext& context = engine.context();
  const int64_t deadline = UcxNowMs() + timeout_ms;
  MutexLock lock(&context.mu());
  ErrorCode code = ErrorCode::OK;
  std::string error;
  auto conn = context.ConnectLocked(lock, remote.endpoint,
                                    UcxNowMs() + context.options().connect_timeout_ms, &code, &error);
  if (conn == nullptr) return Fail(ErrorCode::TRANSFER_FAIL, error);
  TransferOp op{&remote, remote_offset, local, length};
  std::optional<UcxAmOut> request = MemoryRequest(TransferKind::READ, conn, op);
  if (!request) return Fail(ErrorCode::TRANSFER_FAIL, "ucx: bad rkey");
  std::vector<Result<AmReply>> reply =
      CallAllOnOwnContext(engine.am(), lock, std::span<UcxAmOut>(&*request, 1), deadline);
  if (!reply.front().ok()) return Fail(ErrorCode::TRANSFER_FAIL, RefusalMessage(*request, reply.front().error()));
  return {};
}

}  // namespace shelfmark
