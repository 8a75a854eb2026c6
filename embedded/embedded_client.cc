#include "embedded/embedded_client.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

namespace shelfmark {
namespace {

ClientOptions ClientOptionsOf(const EmbeddedOptions& o) {
  ClientOptions c;
  c.master = o.master;
  c.cluster_id = o.cluster_id;
  c.follow_leader_hints = o.follow_leader_hints;
  c.master_token = o.master_token;
  c.protocol = o.protocol;
  c.transport.client_id = o.client_id;
  c.transport.cluster_token = o.cluster_token;
  c.transport.device = o.device;
  // Only hosted segments need peers to reach this process's engines.
  if (o.segment_size > 0 || o.listen) c.transport.listen_ip = o.listen_ip;
  c.rdma_factory = o.rdma_factory;
  c.rdma_device_present = o.rdma_device_present;
  c.engine_counters = o.engine_counters;
  c.staging_bytes = o.staging_bytes;
  c.stream_local_reads = o.stream_local_reads;
  c.reply_poll_us = o.reply_poll_us;
  c.rpc_timeout_ms = o.rpc_timeout_ms;
  c.transfer_timeout_ms = o.transfer_timeout_ms;
  c.location_cache = o.location_cache;
  return c;
}

// Says why the SSD tier could not be opened (setup() answers only a code).
ErrorCode SsdTierFailed(ErrorCode rc, const std::string& why) {
  std::fprintf(stderr, "shelfmark: cannot open the SSD tier: %s (%s)\n", why.c_str(),
               std::string(ErrorCodeName(rc)).c_str());
  return rc;
}

}  // namespace

Result<std::unique_ptr<EmbeddedClient>> EmbeddedClient::Create(EmbeddedOptions options) {
  // An SSD tier belongs to a hosted segment: without one it would hold nothing.
  if (options.enable_ssd_offload && options.segment_size == 0) {
    std::fprintf(stderr, "shelfmark: the SSD tier needs a hosted segment (segment size 0)\n");
    return ErrorCode::INVALID_PARAMS;
  }
  auto client = Client::Create(ClientOptionsOf(options));
  if (!client.ok()) return client.error();
  std::unique_ptr<EmbeddedClient> embedded(
      new EmbeddedClient(std::move(client).value(), std::move(options)));
  const EmbeddedOptions& o = embedded->options_;
  if (o.segment_size == 0) return embedded;
  auto engine = embedded->Engine(o.protocol);
  if (!engine.ok()) return engine.error();
  NodeOptions n = embedded->SegmentOptions(o.segment_size);
  n.segment_name = o.segment_name;
  embedded->JoinSiblings(n);
  if (o.enable_ssd_offload) {
    if (ErrorCode rc = embedded->OpenSsdTier(n); rc != ErrorCode::OK) return rc;
  }
  auto hosted = HostedSegment::Start(std::move(n), *engine, embedded->client(), o.mount_timeout_ms);
  if (!hosted.ok()) return hosted.error();  // the destructor closes what was started
  {
    MutexLock lock(&embedded->added_mu_);
    embedded->hosted_ = std::move(hosted).value();
  }
  return embedded;
}

ErrorCode EmbeddedClient::OpenSsdTier(NodeOptions& n) {
  // LOCAL_DISK reads travel on UCX active messages (client/client.h), which
  // the verbs engine does not carry: a store with protocol "rdma" has no
  // engine to serve them on, and peers that use verbs only could not send
  // them either. "auto" opens UCX beside verbs and works.
  std::string error;
  auto config = ResolveSsdTier(
      options_.ssd_offload_path, [](const char* name) { return std::getenv(name); }, &error);
  if (!config.ok()) return SsdTierFailed(config.error(), error);
  auto tier = SsdTier::Open(*config, client_->engine("ucx"), &error);
  if (!tier.ok()) return SsdTierFailed(tier.error(), error);
  (*tier)->Wire(n);
  MutexLock lock(&added_mu_);
  ssd_ = std::move(tier).value();
  return ErrorCode::OK;
}

EmbeddedClient::EmbeddedClient(std::unique_ptr<Client> client, EmbeddedOptions options)
    : options_(std::move(options)), client_(std::move(client)) {}

EmbeddedClient::~EmbeddedClient() { (void)Close(); }

NodeOptions EmbeddedClient::SegmentOptions(uint64_t size) const {
  const EmbeddedOptions& o = options_;
  NodeOptions n;
  n.master = o.master;
  n.cluster_id = o.cluster_id;
  n.follow_leader_hints = o.follow_leader_hints;
  n.master_token = !o.node_token.empty()     ? o.node_token
                   : !o.master_token.empty() ? o.master_token
                                             : o.cluster_token;
  n.client_id = client_->client_id();
  n.segment_size = size;
  n.ping_interval_ms = o.ping_interval_ms;
  n.rpc_timeout_ms = o.rpc_timeout_ms;
  return n;
}

void EmbeddedClient::JoinSiblings(NodeOptions& n) {
  if (n.segment_id.is_nil()) n.segment_id = UUID::Generate();
  n.on_need_remount = [this, id = n.segment_id] { RemountSiblings(id); };
}

void EmbeddedClient::RemountSiblings(const UUID& except) {
  MutexLock lock(&added_mu_);
  if (hosted_ != nullptr && hosted_->segment().id != except) hosted_->Remount();
  for (auto& [id, added] : added_) {
    if (added.segment != nullptr && id != except) added.segment->Remount();
  }
}

Result<TransportEngine*> EmbeddedClient::Engine(std::string_view protocol) const {
  auto chosen = ChooseProtocol(protocol, options_.rdma_factory && options_.rdma_device_present);
  if (!chosen.ok()) return chosen.error();
  TransportEngine* engine = client_->engine(*chosen);
  if (engine == nullptr) return ErrorCode::INVALID_PARAMS;
  return engine;
}

std::optional<Segment> EmbeddedClient::segment() const {
  MutexLock lock(&added_mu_);
  if (hosted_ == nullptr) return std::nullopt;
  return hosted_->segment();
}

NodeCounters EmbeddedClient::node_counters() const {
  MutexLock lock(&added_mu_);
  return hosted_ == nullptr ? NodeCounters{} : hosted_->counters();
}

std::optional<SsdTierStats> EmbeddedClient::disk_stats() const {
  MutexLock lock(&added_mu_);
  if (ssd_ == nullptr) return std::nullopt;
  SsdTierStats stats = ssd_->stats();
  if (hosted_ != nullptr) stats.served = hosted_->disk_stats();
  return stats;
}

Result<Segment> EmbeddedClient::MountSegment(uint64_t size, std::string_view protocol,
                                             const UUID& id, std::string name) {
  NodeOptions n = SegmentOptions(size);
  n.segment_id = id;
  JoinSiblings(n);
  n.segment_name = name.empty() ? n.segment_id.ToString() : std::move(name);
  return Add(std::move(n), protocol, /*file_backed=*/false);
}

Result<Segment> EmbeddedClient::MountFileSegment(int fd, uint64_t offset, uint64_t size,
                                                 std::string_view protocol) {
  if (fd < 0) return ErrorCode::INVALID_PARAMS;
  NodeOptions n = SegmentOptions(size);
  JoinSiblings(n);
  n.segment_name = n.segment_id.ToString();
  n.memory_fd = fd;
  n.memory_offset = offset;
  return Add(std::move(n), protocol, /*file_backed=*/true);
}

Result<Segment> EmbeddedClient::Add(NodeOptions n, std::string_view protocol, bool file_backed) {
  if (client_ == nullptr || n.segment_size == 0) return ErrorCode::INVALID_PARAMS;
  auto engine = Engine(protocol);
  if (!engine.ok()) return engine.error();
  // A segment nobody can reach would take puts that no other client reads.
  if ((*engine)->endpoint().empty()) return ErrorCode::INVALID_PARAMS;
  // The engine's one same-host share stays the hosted segment's (or none):
  // a share outlives its segment's unmount (the engine holds the memfd), so
  // an added segment's memory could not be freed.
  n.share_locally = false;
  const UUID id = n.segment_id;
  {
    MutexLock lock(&added_mu_);
    if (added_.contains(id) || (hosted_ && hosted_->segment().id == id)) {
      return ErrorCode::INVALID_PARAMS;
    }
    added_.emplace(id, Added{nullptr, file_backed});  // reserved while it starts
  }
  auto hosted =
      HostedSegment::Start(std::move(n), *engine, client_.get(), options_.mount_timeout_ms);
  MutexLock lock(&added_mu_);
  if (!hosted.ok()) {
    added_.erase(id);
    return hosted.error();
  }
  Segment mounted = (*hosted)->segment();
  added_[id].segment = std::move(hosted).value();
  return mounted;
}

Result<std::vector<std::unique_ptr<HostedSegment>>> EmbeddedClient::TakeAdded(
    const std::vector<UUID>& ids, bool file_backed) {
  std::vector<std::unique_ptr<HostedSegment>> taken;
  MutexLock lock(&added_mu_);
  std::set<UUID> seen;
  for (const UUID& id : ids) {
    auto it = added_.find(id);
    // A null segment is still starting: not yet one to unmount.
    if (it == added_.end() || it->second.segment == nullptr ||
        it->second.file_backed != file_backed || !seen.insert(id).second) {
      return ErrorCode::INVALID_PARAMS;
    }
  }
  for (const UUID& id : ids) {
    auto it = added_.find(id);
    taken.push_back(std::move(it->second.segment));
    added_.erase(it);
  }
  return taken;
}

namespace {

// Stops (unmounts) each segment: the first code that is not OK.
ErrorCode StopAll(std::vector<std::unique_ptr<HostedSegment>>& segments) {
  ErrorCode rc = ErrorCode::OK;
  for (auto& segment : segments) {
    const ErrorCode stopped = segment->Stop();
    if (rc == ErrorCode::OK) rc = stopped;
  }
  return rc;
}

}  // namespace

ErrorCode EmbeddedClient::UnmountSegments(const std::vector<UUID>& ids, bool file_backed,
                                          int64_t grace_ms) {
  if (grace_ms < 0) return ErrorCode::INVALID_PARAMS;
  auto taken = TakeAdded(ids, file_backed);
  if (!taken.ok()) return taken.error();
  if (grace_ms > 0) return UnmountGracefully(std::move(taken).value(), grace_ms);
  return StopAll(*taken);
}

ErrorCode EmbeddedClient::UnmountGracefully(std::vector<std::unique_ptr<HostedSegment>> segments,
                                            int64_t grace_ms) {
  std::vector<std::unique_ptr<HostedSegment>> refused;
  ErrorCode rc = ErrorCode::OK;
  for (auto& segment : segments) {
    const ErrorCode drained = client_->DrainSegment(segment->segment().id);
    if (drained == ErrorCode::OK) continue;
    if (rc == ErrorCode::OK) rc = drained;
    refused.push_back(std::move(segment));
  }
  std::erase(segments, nullptr);
  (void)StopAll(refused);
  if (segments.empty()) return rc;
  const GraceDeadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  MutexLock lock(&grace_mu_);
  if (closing_) {  // Close has begun: no grace left
    lock.unlock();
    (void)StopAll(segments);
    return rc;
  }
  ++draining_;
  grace_queue_.emplace(deadline, std::move(segments));
  if (!grace_thread_.joinable()) grace_thread_ = std::thread([this] { RunGraceTimer(); });
  grace_cv_.notify_all();  // the new deadline may be the earliest
  return rc;
}

void EmbeddedClient::RunGraceTimer() {
  MutexLock lock(&grace_mu_);
  while (!closing_ || !grace_queue_.empty()) {
    if (grace_queue_.empty()) {
      grace_cv_.wait(lock);
      continue;
    }
    const auto first = grace_queue_.begin();
    if (!closing_ && std::chrono::steady_clock::now() < first->first) {
      grace_cv_.wait_until(lock, first->first);
      continue;  // woken: the earliest deadline, or closing_, may have changed
    }
    std::vector<std::unique_ptr<HostedSegment>> due = std::move(first->second);
    grace_queue_.erase(first);
    lock.unlock();  // Stop waits on the node's thread and the master
    (void)StopAll(due);
    lock.lock();
    --draining_;
  }
}

bool EmbeddedClient::draining() const {
  MutexLock lock(&grace_mu_);
  return draining_ != 0;
}

size_t EmbeddedClient::grace_threads() const {
  MutexLock lock(&grace_mu_);
  return grace_thread_.joinable() ? 1 : 0;
}

void EmbeddedClient::EndGracePeriods() {
  std::thread timer;
  {
    MutexLock lock(&grace_mu_);
    closing_ = true;
    timer.swap(grace_thread_);
  }
  grace_cv_.notify_all();
  if (timer.joinable()) timer.join();  // it unmounts what is left first
}

std::vector<Segment> EmbeddedClient::added_segments() const {
  MutexLock lock(&added_mu_);
  std::vector<Segment> out;
  for (const auto& [id, added] : added_) {
    if (added.segment != nullptr) out.push_back(added.segment->segment());
  }
  return out;
}

ErrorCode EmbeddedClient::Close() {
  // Graceful unmounts first: their segments unmount now, while the
  // client their nodes use still exists.
  EndGracePeriods();
  // Taken out under the lock, stopped outside it: a stopping node may still
  // call RemountSiblings.
  std::map<UUID, Added> added;
  std::unique_ptr<HostedSegment> hosted;
  std::unique_ptr<SsdTier> ssd;
  {
    MutexLock lock(&added_mu_);
    added.swap(added_);
    hosted = std::move(hosted_);
    ssd = std::move(ssd_);
  }
  for (auto& [id, a] : added) {
    if (a.segment != nullptr) (void)a.segment->Stop();
  }
  ErrorCode rc = ErrorCode::OK;
  if (hosted != nullptr) rc = hosted->Stop();
  hosted.reset();  // the node and its LOCAL_DISK service, before the store
  if (ssd != nullptr) {
    if (ErrorCode closed = ssd->Close(); closed != ErrorCode::OK) {
      std::fprintf(stderr, "shelfmark: closing the SSD tier: %s\n",
                   std::string(ErrorCodeName(closed)).c_str());
    }
  }
  ssd.reset();
  client_.reset();
  return rc;
}

}  // namespace shelfmark
