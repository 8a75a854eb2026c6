#include "node/node.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "common/host_port.h"
#include "common/socket_io.h"
#include "rpc/master_client.h"

namespace shelfmark {

Result<std::unique_ptr<Node>> Node::Create(NodeOptions options, TransportEngine* engine) {
  if (engine == nullptr || options.segment_size == 0 || options.ping_interval_ms <= 0 ||
      options.retry_interval_ms <= 0 || !ParseHostPort(options.master)) {
    return ErrorCode::INVALID_PARAMS;
  }
  if (options.disk != nullptr && (options.disk_am == nullptr || options.disk_endpoint.empty())) {
    return ErrorCode::INVALID_PARAMS;
  }
  std::unique_ptr<Node> node(new Node(std::move(options), engine));
  // The segment is a memfd so that clients on this host can map it
  // (TransportEngine::ShareLocally) and read without the transport.
  UniqueFd memfd(memfd_create("shelfmark-segment", MFD_CLOEXEC));
  if (!memfd.valid() ||
      ftruncate(memfd.get(), static_cast<off_t>(node->options_.segment_size)) != 0) {
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  void* mem = mmap(nullptr, node->options_.segment_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, memfd.get(), 0);
  if (mem == MAP_FAILED) return ErrorCode::NO_AVAILABLE_HANDLE;
  node->memory_ = static_cast<uint8_t*>(mem);
  auto region = engine->RegisterMemory(mem, node->options_.segment_size, /*remote_access=*/true);
  if (!region.ok()) return region.error();  // ~Node unmaps
  node->region_ = *region;
  if (ErrorCode shared = engine->ShareLocally(*region, memfd.get()); shared != ErrorCode::OK) {
    return shared;
  }
  Segment& s = node->segment_;
  s.id = UUID::Generate();
  s.name = node->options_.segment_name.empty() ? "node-" + node->options_.client_id.ToString()
                                               : node->options_.segment_name;
  s.base = reinterpret_cast<uint64_t>(mem);
  s.size = node->options_.segment_size;
  s.endpoint = engine->endpoint();
  s.protocol = std::string(engine->protocol());
  s.rkey = region->rkey;
  if (StorageBackend* disk = node->options_.disk) {
    node->disk_service_ = std::make_unique<LocalDiskService>(node->options_.disk_am, disk);
    Node* n = node.get();
    disk->SetEvictCallback([n](std::string_view tenant, std::string_view key) {
      MutexLock lock(&n->evict_mu_);
      n->evictions_.emplace_back(std::string(tenant), std::string(key));
    });
  }
  return node;
}

Node::Node(NodeOptions options, TransportEngine* engine)
    : options_(std::move(options)), engine_(engine) {}

Node::~Node() {
  if (options_.disk != nullptr) options_.disk->SetEvictCallback(nullptr);
  disk_service_.reset();
  if (region_.addr != nullptr) engine_->UnregisterMemory(region_);
  if (memory_ != nullptr) RetireMemory();
}

void Node::RetireMemory() {
  // Fresh anonymous pages over the same range: the segment's pages go back
  // to the OS (once no same-host client maps the memfd any more), and a
  // write still arriving lands in a zero page instead of faulting. (If the
  // remap fails, unmapping is the only way to free it.)
  void* again = mmap(memory_, options_.segment_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (again == MAP_FAILED) munmap(memory_, options_.segment_size);
}

NodeCounters Node::counters() const {
  return NodeCounters{pings_.load(),         ping_failures_.load(), mounts_.load(),
                      remounts_.load(),      disk_mounts_.load(),   disk_reported_.load(),
                      offloaded_.load(),     offload_failures_.load(), disk_evictions_.load()};
}

LocalDiskStats Node::disk_stats() const {
  return disk_service_ ? disk_service_->stats() : LocalDiskStats{};
}

void Node::Stop() {
  MutexLock lock(&stop_mu_);
  stop_ = true;
  stop_cv_.notify_all();
}

bool Node::SleepOrStop(int64_t ms) {
  MutexLock lock(&stop_mu_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop_) {
    if (stop_cv_.wait_until(lock, until) == std::cv_status::timeout) break;
  }
  return stop_;
}

ErrorCode Node::Run() {
  MasterClientOptions mo;
  mo.address = options_.master;
  mo.client_id = options_.client_id;
  mo.call_timeout_ms = options_.rpc_timeout_ms;
  mo.token = options_.master_token;
  MasterClient master(mo);
  ErrorCode last_mount_error = ErrorCode::OK;
  bool disk_reported = false;
  int64_t wait_ms = 0;
  while (!SleepOrStop(wait_ms)) {
    if (!mounted_.load()) {
      ErrorCode rc = master.MountSegment(segment_);
      if (rc == ErrorCode::OK) {
        mounted_.store(true);
        mounts_.fetch_add(1);
        disk_reported = options_.disk == nullptr || ReportDisk(master) == ErrorCode::OK;
        if (options_.on_mounted) options_.on_mounted(segment_);
        wait_ms = options_.ping_interval_ms;
      } else {
        if (rc != last_mount_error) {
          std::fprintf(stderr, "shelfmark-node: mount at %s: %s (retrying)\n",
                       options_.master.c_str(), std::string(ErrorCodeName(rc)).c_str());
        }
        wait_ms = options_.retry_interval_ms;
      }
      last_mount_error = rc;
      continue;
    }
    auto ping = master.Ping();
    if (!ping.ok()) {
      ping_failures_.fetch_add(1);
      wait_ms = options_.retry_interval_ms;
      continue;
    }
    pings_.fetch_add(1);
    if (ping->status == ClientStatus::NEED_REMOUNT) {
      remounts_.fetch_add(1);
      mounted_.store(false);
      wait_ms = 0;
      continue;
    }
    if (options_.disk != nullptr) {
      if (!disk_reported) disk_reported = ReportDisk(master) == ErrorCode::OK;
      for (int round = 0; disk_reported && round < kMaxOffloadRounds; ++round) {
        if (Offload(master) < kOffloadBatch) break;
      }
      SendEvictions(master);
    }
    if (options_.on_ping) options_.on_ping();
    wait_ms = options_.ping_interval_ms;
  }
  if (!mounted_.exchange(false)) return ErrorCode::OK;
  return master.UnmountSegment(segment_.id);
}

ErrorCode Node::ReportDisk(MasterClient& master) {
  ErrorCode rc = master.MountLocalDisk(/*enable_offloading=*/true, options_.disk_endpoint);
  if (rc != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-node: mount local disk: %s (retrying)\n",
                 std::string(ErrorCodeName(rc)).c_str());
    return rc;
  }
  disk_mounts_.fetch_add(1);
  constexpr size_t kReportChunk = 256;
  std::vector<StoredLocation> stored = options_.disk->List();
  for (size_t begin = 0; begin < stored.size(); begin += kReportChunk) {
    std::vector<OffloadedObject> items;
    for (size_t i = begin; i < std::min(stored.size(), begin + kReportChunk); ++i) {
      items.push_back(Reported(stored[i]));
    }
    auto codes = master.NotifyOffloadSuccess(items);
    if (!codes.ok()) return codes.error();
    for (ErrorCode c : *codes) {
      if (c == ErrorCode::OK) disk_reported_.fetch_add(1);
    }
  }
  return ErrorCode::OK;
}

OffloadedObject Node::Reported(const StoredLocation& l) const {
  return OffloadedObject{
      l.tenant, l.key,
      StorageObjectMetadata{l.bucket_id, l.offset, l.key_size, l.data_size, options_.disk_endpoint}};
}

Result<std::string> Node::ReadOwnReplica(MasterClient& master, const OffloadTask& task) {
  auto replicas = master.GetReplicaList(task.tenant, task.key);
  if (!replicas.ok()) return replicas.error();
  for (const ReplicaDescriptor& r : replicas->replicas) {
    const MemoryDescriptor& m = r.memory;
    if (r.type != ReplicaType::MEMORY || m.segment_id != segment_.id) continue;
    if (m.size != task.size || m.buffer_address < segment_.base ||
        m.buffer_address - segment_.base > segment_.size - m.size) {
      return ErrorCode::INVALID_PARAMS;
    }
    const uint8_t* bytes = memory_ + (m.buffer_address - segment_.base);
    return std::string(reinterpret_cast<const char*>(bytes), m.size);
  }
  return ErrorCode::OBJECT_NOT_FOUND;
}

Result<std::vector<StoredLocation>> Node::WriteToDisk(const std::vector<StoredObject>& batch) {
  auto stored = options_.disk->WriteBatch(batch);
  if (stored.ok()) return stored;
  const bool too_big = stored.error() == ErrorCode::INVALID_PARAMS ||
                       stored.error() == ErrorCode::BUFFER_OVERFLOW;
  if (!too_big || batch.size() == 1) {
    offload_failures_.fetch_add(batch.size());
    return stored;
  }
  // More keys or bytes than the store may hold at once: one object at a time
  // (the store evicts older ones in between).
  std::vector<StoredLocation> out;
  for (const StoredObject& object : batch) {
    auto one = options_.disk->WriteBatch({object});
    if (one.ok()) {
      out.insert(out.end(), one->begin(), one->end());
    } else {
      offload_failures_.fetch_add(1);
    }
  }
  return out;
}

size_t Node::Offload(MasterClient& master) {
  auto tasks = master.OffloadHeartbeat(kOffloadBatch);
  if (!tasks.ok() || tasks->empty()) return 0;
  std::vector<std::string> values;
  std::vector<StoredObject> batch;
  values.reserve(tasks->size());
  for (const OffloadTask& task : *tasks) {
    auto bytes = ReadOwnReplica(master, task);
    if (!bytes.ok()) {
      offload_failures_.fetch_add(1);
      continue;
    }
    values.push_back(std::move(*bytes));
    batch.push_back(StoredObject{task.tenant, task.key, values.back()});
  }
  if (batch.empty()) return tasks->size();
  auto stored = WriteToDisk(batch);
  if (!stored.ok()) return tasks->size();
  std::vector<OffloadedObject> items;
  for (const StoredLocation& l : *stored) items.push_back(Reported(l));
  auto codes = master.NotifyOffloadSuccess(items);
  if (!codes.ok()) {
    offload_failures_.fetch_add(items.size());
    return tasks->size();
  }
  for (ErrorCode c : *codes) (c == ErrorCode::OK ? offloaded_ : offload_failures_).fetch_add(1);
  return tasks->size();
}

void Node::SendEvictions(MasterClient& master) {
  std::vector<std::pair<std::string, std::string>> pending;
  {
    MutexLock lock(&evict_mu_);
    pending.swap(evictions_);
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    if (master.EvictDiskReplica(pending[i].first, pending[i].second) == ErrorCode::RPC_FAIL) {
      MutexLock lock(&evict_mu_);
      evictions_.insert(evictions_.begin(), pending.begin() + static_cast<ptrdiff_t>(i),
                        pending.end());
      return;
    }
    disk_evictions_.fetch_add(1);
  }
}

}  // namespace shelfmark
