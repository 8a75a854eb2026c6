#include "node/node.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "common/host_port.h"
#include "common/object_key.h"
#include "common/socket_io.h"
#include "ha/master_address.h"
#include "rpc/master_client.h"

namespace shelfmark {

Result<std::unique_ptr<Node>> Node::Create(NodeOptions options, TransportEngine* engine) {
  if (engine == nullptr || options.segment_size == 0 || options.ping_interval_ms <= 0 ||
      options.retry_interval_ms <= 0 ||
      !ha::MasterFlagError("master", options.master, options.cluster_id).empty()) {
    return ErrorCode::INVALID_PARAMS;
  }
  if (options.disk != nullptr && (options.disk_am == nullptr || options.disk_endpoint.empty())) {
    return ErrorCode::INVALID_PARAMS;
  }
  if (options.offload_poll_interval_ms <= 0 || options.offload_batch_bytes == 0 ||
      options.promote_window_ms <= 0) {
    return ErrorCode::INVALID_PARAMS;
  }
  std::unique_ptr<Node> node(new Node(std::move(options), engine));
  const bool own_memory = node->options_.memory_fd < 0;
  // The node's own segment is a memfd so that clients on this host can map
  // it (TransportEngine::ShareLocally) and read without the transport.
  UniqueFd memfd;
  if (own_memory) {
    memfd = UniqueFd(memfd_create("shelfmark-segment", MFD_CLOEXEC));
    if (!memfd.valid() ||
        ftruncate(memfd.get(), static_cast<off_t>(node->options_.segment_size)) != 0) {
      return ErrorCode::NO_AVAILABLE_HANDLE;
    }
  }
  // MAP_POPULATE: the segment's pages are allocated and mapped here, once,
  // so the node's own copies (an embedded store's own-segment puts, a store
  // service's) never fault on a first touch, and same-host clients that map
  // it find its pages allocated. The cost is the segment's size, which the
  // node holds for its life anyway.
  void* mem = mmap(nullptr, node->options_.segment_size, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, own_memory ? memfd.get() : node->options_.memory_fd,
                   static_cast<off_t>(own_memory ? 0 : node->options_.memory_offset));
  if (mem == MAP_FAILED) {
    return own_memory ? ErrorCode::NO_AVAILABLE_HANDLE : ErrorCode::INVALID_PARAMS;
  }
  node->memory_ = static_cast<uint8_t*>(mem);
  auto region = engine->RegisterMemory(mem, node->options_.segment_size, /*remote_access=*/true);
  if (!region.ok()) return region.error();  // ~Node unmaps
  node->region_ = *region;
  if (own_memory && node->options_.share_locally) {
    if (ErrorCode shared = engine->ShareLocally(*region, memfd.get()); shared != ErrorCode::OK) {
      return shared;
    }
  }
  Segment& s = node->segment_;
  s.id = node->options_.segment_id.is_nil() ? UUID::Generate() : node->options_.segment_id;
  s.name = node->options_.segment_name.empty() ? "node-" + node->options_.client_id.ToString()
                                               : node->options_.segment_name;
  s.base = reinterpret_cast<uint64_t>(mem);
  s.size = node->options_.segment_size;
  s.endpoint = engine->endpoint();
  s.protocol = std::string(engine->protocol());
  s.rkey = region->rkey;
  if (StorageBackend* disk = node->options_.disk) {
    Node* n = node.get();
    LocalDiskServiceOptions service;
    if (n->options_.promote_after_hits > 0) {
      n->tracker_ = std::make_unique<PromotionTracker>(PromotionTrackerOptions{
          n->options_.promote_after_hits, n->options_.promote_window_ms});
      service.on_served = [n](std::string_view tenant, std::string_view key, uint64_t size) {
        n->OnServed(tenant, key, size);
      };
    }
    DiskReporterOptions reporter;
    reporter.master = n->MasterOptions();
    reporter.retry_interval_ms = n->options_.retry_interval_ms;
    n->reporter_ = std::make_unique<DiskReporter>(reporter);
    service.on_missing = [n](std::string_view tenant, std::string_view key) {
      n->reporter_->Lost(tenant, key);
    };
    n->disk_service_ = std::make_unique<LocalDiskService>(n->options_.disk_am, disk, service);
    disk->SetEvictCallback([n](std::string_view tenant, std::string_view key) {
      n->reporter_->Evicted(tenant, key);
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
  NodeCounters c;
  c.pings = pings_.load();
  c.ping_failures = ping_failures_.load();
  c.mounts = mounts_.load();
  c.remounts = remounts_.load();
  c.disk_mounts = disk_mounts_.load();
  c.disk_reported = disk_reported_.load();
  c.offloaded = offloaded_.load();
  c.offload_failures = offload_failures_.load();
  c.offload_inflight = offload_inflight_.load();
  c.offloaded_bytes = offloaded_bytes_.load();
  c.offload_batches = offload_batches_.load();
  c.offload_busy_ns = offload_busy_ns_.load();
  c.offload_stale = offload_stale_.load();
  c.disk_evictions = reporter_ ? reporter_->evictions_sent() : 0;
  c.disk_lost_reported = reporter_ ? reporter_->lost_sent() : 0;
  c.disk_reports_pending = reporter_ ? reporter_->pending() : 0;
  c.offload_failures_reported = offload_failures_reported_.load();
  c.promotions_requested = promotions_requested_.load();
  c.promoted = promoted_.load();
  c.promotions_refused = promotions_refused_.load();
  c.promotion_failures = promotion_failures_.load();
  return c;
}

LocalDiskStats Node::disk_stats() const {
  return disk_service_ ? disk_service_->stats() : LocalDiskStats{};
}

void Node::Remount() { remount_.store(true); }

void Node::Stop() {
  MutexLock lock(&stop_mu_);
  stop_ = true;
  stop_cv_.notify_all();
}

bool Node::SleepOrStop(int64_t ms, bool until_promotions) {
  MutexLock lock(&stop_mu_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop_ && !(until_promotions && !promote_queue_.empty())) {
    if (stop_cv_.wait_until(lock, until) == std::cv_status::timeout) break;
  }
  return stop_;
}

void Node::SetOffloadReady(bool ready) {
  if (reporter_) reporter_->SetReady(ready);
  MutexLock lock(&stop_mu_);
  offload_ready_ = ready;
  stop_cv_.notify_all();
}

bool Node::WaitOffloadReady() {
  MutexLock lock(&stop_mu_);
  while (!stop_ && !offload_ready_) stop_cv_.wait(lock);
  return !stop_;
}

MasterClientOptions Node::MasterOptions() const {
  MasterClientOptions mo;
  mo.address = options_.master;
  mo.cluster_id = options_.cluster_id;
  mo.follow_leader_hints = options_.follow_leader_hints;
  mo.client_id = options_.client_id;
  mo.call_timeout_ms = options_.rpc_timeout_ms;
  mo.token = options_.master_token;
  return mo;
}

ErrorCode Node::Run() {
  MasterClient master(MasterOptions());
  // Started after the first disk report; joined before the unmount, so that
  // batches already written are still reported.
  std::thread offload;
  ErrorCode last_mount_error = ErrorCode::OK;
  bool disk_reported = false;
  auto report_disk = [&] {
    disk_reported = ReportDisk(master) == ErrorCode::OK;
    if (!disk_reported) return;
    SetOffloadReady(true);
    if (!offload.joinable()) offload = std::thread([this] { OffloadLoop(); });
  };
  int64_t wait_ms = 0;
  // Forgets the mount: the next round mounts again.
  auto unmounted = [&] {
    mounted_.store(false);
    // No offload before the disk is reported to the master again.
    SetOffloadReady(false);
    disk_reported = false;
  };
  while (!SleepOrStop(wait_ms)) {
    if (remount_.exchange(false) && mounted_.load()) unmounted();
    if (!mounted_.load()) {
      ErrorCode rc = master.MountSegment(segment_);
      if (rc == ErrorCode::OK) {
        mounted_.store(true);
        mounts_.fetch_add(1);
        if (options_.disk != nullptr) report_disk();
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
      unmounted();
      if (options_.on_need_remount) options_.on_need_remount();
      wait_ms = 0;
      continue;
    }
    if (options_.disk != nullptr && !disk_reported) report_disk();
    if (options_.on_ping) options_.on_ping();
    wait_ms = options_.ping_interval_ms;
  }
  if (offload.joinable()) offload.join();  // Stop() ends it too
  SetOffloadReady(false);  // the reporter sends nothing once unmounted
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
    // A refused copy (CHECKSUM_MISMATCH: not of the version the master
    // holds) stays in the store unreferenced until replaced or evicted:
    // removing it here could race a batch writing the key's new version.
    for (ErrorCode c : *codes) {
      if (c == ErrorCode::OK) disk_reported_.fetch_add(1);
    }
  }
  return ErrorCode::OK;
}

OffloadedObject Node::Reported(const StoredLocation& l) const {
  return OffloadedObject{
      l.tenant, l.key,
      StorageObjectMetadata{l.bucket_id, l.offset, l.key_size, l.data_size, options_.disk_endpoint},
      l.checksum};
}

std::optional<uint64_t> SegmentOffset(const Segment& segment, uint64_t address, uint64_t size) {
  if (address == 0 || address < segment.base || size > segment.size ||
      address - segment.base > segment.size - size) {
    return std::nullopt;
  }
  return address - segment.base;
}

// Objects copied out of the segment, written together, then reported.
struct Node::OffloadBatch {
  std::vector<OffloadTask> tasks;
  // values[i]: tasks[i]'s bytes, in this node's segment (not copied: the
  // master pins the replica until the task is reported; a forced remove
  // meanwhile makes the master refuse the report, and the copy is dropped).
  std::vector<std::string_view> values;
  uint64_t bytes = 0;
  // Set by the writer.
  ErrorCode write_rc = ErrorCode::OK;
  std::vector<StoredLocation> stored;
};

// The writer thread: writes one batch at a time, handed over by Start() and
// collected by Finish(), so the offload thread prepares the next batch (and
// reports the previous one) while the backend writes.
class Node::BatchWriter {
 public:
  explicit BatchWriter(Node* node) : node_(node), thread_([this] { Loop(); }) {}
  ~BatchWriter() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
      cv_.notify_all();
    }
    thread_.join();
  }
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  // Starts writing `batch`; the previous one must have been collected.
  void Start(std::unique_ptr<OffloadBatch> batch) {
    MutexLock lock(&mu_);
    todo_ = std::move(batch);
    cv_.notify_all();
  }
  // Waits for the batch started last and returns it written; null when none
  // is left to collect.
  std::unique_ptr<OffloadBatch> Finish() {
    MutexLock lock(&mu_);
    while (todo_ != nullptr || writing_) cv_.wait(lock);
    return std::move(done_);
  }

 private:
  void Loop() {
    MutexLock lock(&mu_);
    while (true) {
      while (!stop_ && todo_ == nullptr) cv_.wait(lock);
      if (todo_ == nullptr) return;  // stopping, nothing left
      std::unique_ptr<OffloadBatch> batch = std::move(todo_);
      writing_ = true;
      lock.unlock();
      node_->WriteOffloadBatch(*batch);
      lock.lock();
      writing_ = false;
      done_ = std::move(batch);
      cv_.notify_all();
    }
  }

  Node* const node_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::unique_ptr<OffloadBatch> todo_ GUARDED_BY(mu_);  // handed over, not yet taken
  bool writing_ GUARDED_BY(mu_) = false;
  std::unique_ptr<OffloadBatch> done_ GUARDED_BY(mu_);  // written, not yet collected
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the members above exist
};

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

void Node::OffloadLoop() {
  MasterClient master(MasterOptions());
  BatchWriter writer(this);
  auto report_written = [&] {
    if (std::unique_ptr<OffloadBatch> written = writer.Finish()) {
      ReportOffloadBatch(master, *written);
    }
  };
  // Batch N+1 is copied: wait for N, start N+1, report N while N+1 is written.
  auto write = [&](std::unique_ptr<OffloadBatch> batch) {
    std::unique_ptr<OffloadBatch> written = writer.Finish();
    HoldEvictions(*batch, true);
    writer.Start(std::move(batch));
    if (written) ReportOffloadBatch(master, *written);
  };
  // Busy from the first tasks taken while idle until the loop is idle again
  // (steady clock ns; -1: idle).
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  int64_t busy_since = -1;
  auto end_busy = [&] {
    if (busy_since < 0) return;
    offload_busy_ns_.fetch_add(static_cast<uint64_t>(now_ns() - busy_since));
    busy_since = -1;
  };
  while (WaitOffloadReady()) {
    // One promotion round per offload round: neither starves the other.
    PromoteRound(master);
    auto tasks = master.OffloadHeartbeat(kOffloadTasks);
    if (!tasks.ok() || tasks->empty()) {
      report_written();
      end_busy();
      if (SleepOrStop(options_.offload_poll_interval_ms, /*until_promotions=*/true)) break;
      continue;
    }
    if (busy_since < 0) busy_since = now_ns();
    offload_inflight_.fetch_add(tasks->size());
    auto batch = std::make_unique<OffloadBatch>();
    std::vector<OffloadFailure> unreadable;
    for (OffloadTask& task : *tasks) {
      std::optional<uint64_t> offset = SegmentOffset(segment_, task.buffer_address, task.size);
      if (!offset) {  // not ours to read
        offload_failures_.fetch_add(1);
        offload_inflight_.fetch_sub(1);
        unreadable.push_back({task.tenant, task.key, ErrorCode::INVALID_PARAMS});
        continue;
      }
      if (!batch->tasks.empty() && batch->bytes + task.size > options_.offload_batch_bytes) {
        write(std::move(batch));
        batch = std::make_unique<OffloadBatch>();
      }
      batch->values.emplace_back(reinterpret_cast<const char*>(memory_ + *offset), task.size);
      batch->bytes += task.size;
      batch->tasks.push_back(std::move(task));
    }
    if (!batch->tasks.empty()) write(std::move(batch));
    ReportOffloadFailures(master, unreadable);
  }
  report_written();
  end_busy();
}

void Node::WriteOffloadBatch(OffloadBatch& batch) {
  std::vector<StoredObject> objects;
  objects.reserve(batch.tasks.size());
  for (size_t i = 0; i < batch.tasks.size(); ++i) {
    objects.push_back(StoredObject{batch.tasks[i].tenant, batch.tasks[i].key, batch.values[i]});
  }
  auto stored = WriteToDisk(objects);
  if (stored.ok()) {
    batch.stored = std::move(*stored);
  } else {
    batch.write_rc = stored.error();
  }
}

void Node::ReportOffloadBatch(MasterClient& master, OffloadBatch& batch) {
  std::vector<std::pair<std::string, std::string>> stale;  // copies the master refused
  // Tasks the store did not take (the batch failed, or some of its objects
  // when written one at a time; failures counted by WriteToDisk).
  std::set<std::pair<std::string, std::string>> stored;
  for (const StoredLocation& l : batch.stored) stored.emplace(l.tenant, l.key);
  std::vector<OffloadFailure> failed;
  for (const OffloadTask& task : batch.tasks) {
    if (stored.count({std::string(EffectiveTenant(task.tenant)), task.key}) == 0) {
      failed.push_back({task.tenant, task.key,
                        batch.write_rc != ErrorCode::OK ? batch.write_rc
                                                        : ErrorCode::FILE_WRITE_FAIL});
    }
  }
  ReportOffloadFailures(master, failed);
  if (batch.write_rc == ErrorCode::OK && !batch.stored.empty()) {
    offload_batches_.fetch_add(1);
    std::vector<OffloadedObject> items;
    items.reserve(batch.stored.size());
    for (const StoredLocation& l : batch.stored) items.push_back(Reported(l));
    auto codes = master.NotifyOffloadSuccess(items);
    if (!codes.ok() || codes->size() != items.size()) {
      offload_failures_.fetch_add(items.size());
    } else {
      for (size_t i = 0; i < items.size(); ++i) {
        if ((*codes)[i] == ErrorCode::OK) {
          offloaded_.fetch_add(1);
          offloaded_bytes_.fetch_add(static_cast<uint64_t>(batch.stored[i].data_size));
        } else if ((*codes)[i] == ErrorCode::OBJECT_NOT_FOUND) {
          stale.emplace_back(items[i].tenant, items[i].key);
        } else {
          offload_failures_.fetch_add(1);
        }
      }
    }
  }
  // Failed writes were counted by WriteToDisk.
  offload_inflight_.fetch_sub(batch.tasks.size());
  HoldEvictions(batch, false);
  DropStale(stale);
}

void Node::ReportOffloadFailures(MasterClient& master,
                                 const std::vector<OffloadFailure>& failed) {
  if (failed.empty()) return;
  // Unanswered: the master times the tasks out (and keeps waiting for their
  // copies until then).
  auto codes = master.NotifyOffloadFailure(failed);
  if (codes.ok()) offload_failures_reported_.fetch_add(failed.size());
}

void Node::DropStale(const std::vector<std::pair<std::string, std::string>>& stale) {
  for (const auto& [tenant, key] : stale) {
    // A later batch of the same key (a new object written meanwhile) is
    // written or being written: its bytes are the ones to keep. Only this
    // thread starts batches, so none can appear after this check.
    if (reporter_->Held(tenant, key)) continue;
    if (options_.disk->Remove(tenant, key) == ErrorCode::OK) offload_stale_.fetch_add(1);
  }
}

void Node::OnServed(std::string_view tenant, std::string_view key, uint64_t size) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  if (!tracker_->Hit(tenant, key, now_ms)) return;
  MutexLock lock(&stop_mu_);
  // Beyond the cap the key is dropped; it stays requested in the tracker
  // and is asked for again once its window passes.
  if (promote_queue_.size() >= kPromoteQueue) return;
  promote_queue_.push_back(PromoteRequest{std::string(tenant), std::string(key), size});
  stop_cv_.notify_all();
}

void Node::PromoteRound(MasterClient& master) {
  std::vector<PromoteRequest> items;
  {
    MutexLock lock(&stop_mu_);
    while (!promote_queue_.empty() && items.size() < kPromoteBatch) {
      items.push_back(std::move(promote_queue_.front()));
      promote_queue_.pop_front();
    }
  }
  if (items.empty()) return;
  // A remount (the master restarted) after PromoteStart voids its grants:
  // the new master may have placed other objects there.
  const uint64_t epoch = mounts_.load();
  promotions_requested_.fetch_add(items.size());
  auto grants = master.PromoteStart(items);
  // Failed as a whole: the keys stay requested in the tracker, retried once
  // its window passes (a grant lost here times out at the master).
  if (!grants.ok() || grants->size() != items.size()) return;
  std::vector<PromoteResult> results;
  for (size_t i = 0; i < items.size(); ++i) {
    const PromoteGrant& grant = (*grants)[i];
    if (grant.code != ErrorCode::OK) {
      promotions_refused_.fetch_add(1);  // left to the tracker's window
      continue;
    }
    results.push_back(PromoteResult{items[i].tenant, items[i].key,
                                    CopyPromoted(items[i], grant.buffer_address, epoch)});
  }
  EndPromotions(master, results);
  for (const PromoteResult& r : results) tracker_->Done(r.tenant, r.key);
}

bool Node::CopyPromoted(const PromoteRequest& item, uint64_t address, uint64_t mount_epoch) {
  std::optional<uint64_t> offset = SegmentOffset(segment_, address, item.size);
  std::string value;
  const ErrorCode read =
      offset ? options_.disk->Read(item.tenant, item.key, item.size, &value) : ErrorCode::OK;
  // A record gone or not intact is never copied; the master drops it too.
  if (read == ErrorCode::DATA_CORRUPTED || read == ErrorCode::OBJECT_NOT_FOUND) {
    reporter_->Lost(item.tenant, item.key);
  }
  bool ok = offset.has_value() && read == ErrorCode::OK && value.size() == item.size;
  // Checked last, just before writing into the segment.
  ok = ok && mounted_.load() && mounts_.load() == mount_epoch;
  if (!ok) {
    promotion_failures_.fetch_add(1);
    return false;
  }
  std::memcpy(memory_ + *offset, value.data(), value.size());
  return true;
}

void Node::EndPromotions(MasterClient& master, const std::vector<PromoteResult>& results) {
  if (results.empty()) return;
  auto codes = master.PromoteEnd(results);
  const bool answered = codes.ok() && codes->size() == results.size();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].copied) continue;  // counted by CopyPromoted
    if (answered && (*codes)[i] == ErrorCode::OK) {
      promoted_.fetch_add(1);
    } else {
      promotion_failures_.fetch_add(1);
    }
  }
}

void Node::HoldEvictions(const OffloadBatch& batch, bool hold) {
  std::vector<DiskReporter::KeyRef> keys;
  keys.reserve(batch.tasks.size());
  for (const OffloadTask& task : batch.tasks) keys.emplace_back(task.tenant, task.key);
  reporter_->Hold(keys, hold);
}

}  // namespace shelfmark
