#include "client/client.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <iterator>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/host_port.h"
#include "client/client_impl.h"
#include "client/local_disk_client.h"

namespace shelfmark {

uint64_t ObjectChecksum(std::string_view value) {
  return XXH3_64bits(value.data(), value.size());
}

namespace {

// The thread's MasterClients, by Client instance number.
std::unordered_map<uint64_t, std::unique_ptr<MasterClient>>& ThreadMasters() {
  thread_local std::unordered_map<uint64_t, std::unique_ptr<MasterClient>> masters;
  return masters;
}

std::atomic<uint64_t> g_next_instance{1};

// Every address of this host's interfaces, plus the loopback names.
std::set<std::string> LocalHosts() {
  std::set<std::string> hosts{"localhost", "127.0.0.1", "::1"};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return hosts;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char host[NI_MAXHOST];
    socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(a->ifa_addr, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) == 0) {
      hosts.insert(host);
    }
  }
  freeifaddrs(list);
  return hosts;
}

bool HasDiskReplica(const ObjectLocation& loc) {
  return std::any_of(loc.info.replicas.begin(), loc.info.replicas.end(),
                     [](const ReplicaDescriptor& r) { return r.type == ReplicaType::LOCAL_DISK; });
}

// A copy of `loc` with its LOCAL_DISK replicas first (GetOptions::
// prefer_local_disk), each group in its order.
std::shared_ptr<const ObjectLocation> DiskReplicasFirst(const ObjectLocation& loc) {
  auto copy = std::make_shared<ObjectLocation>(loc);
  auto& replicas = copy->info.replicas;
  std::stable_partition(replicas.begin(), replicas.end(), [](const ReplicaDescriptor& r) {
    return r.type == ReplicaType::LOCAL_DISK;
  });
  return copy;
}

void* MapAnonymous(uint64_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}


}  // namespace

Client::Impl::Impl() : instance(g_next_instance.fetch_add(1)), local_hosts(LocalHosts()) {}

Client::Impl::~Impl() {
  ThreadMasters().erase(instance);
  for (auto& [engine, region] : staging_regions) engine->UnregisterMemory(region);
  if (staging != nullptr) munmap(staging, options.staging_bytes);
}

MasterClient& Client::Impl::master() {
  auto& slot = ThreadMasters()[instance];
  if (slot == nullptr) {
    MasterClientOptions mo;
    mo.address = options.master;
    mo.client_id = options.transport.client_id;
    mo.call_timeout_ms = options.rpc_timeout_ms;
    mo.token = options.master_token.empty() ? options.transport.cluster_token
                                            : options.master_token;
    slot = std::make_unique<MasterClient>(mo);
  }
  return *slot;
}

Result<EngineRegions> Client::Impl::RegisterAll(void* addr, uint64_t size) {
  EngineRegions regions;
  for (TransportEngine* engine : engines) {
    auto region = engine->RegisterMemory(addr, size, /*remote_access=*/false);
    if (!region.ok()) {
      for (auto& [e, r] : regions) e->UnregisterMemory(r);
      return region.error();
    }
    regions.emplace_back(engine, *region);
  }
  return regions;
}

StagingBlock::StagingBlock(Client::Impl* impl, uint64_t size) : impl_(impl), size_(size) {
  const uint64_t aligned = StagingSize(size);
  if (aligned <= impl->options.staging_bytes) {
    MutexLock lock(&impl->staging_mu);
    std::optional<uint64_t> offset;
    while (!(offset = impl->staging_alloc->Allocate(aligned))) impl->staging_cv.wait(lock);
    offset_ = *offset;
    pooled_size_ = aligned;
    data_ = impl->staging + offset_;
    return;
  }
  void* mem = MapAnonymous(size);
  if (mem == nullptr) return;
  auto regions = impl->RegisterAll(mem, size);
  if (!regions.ok()) {
    munmap(mem, size);
    return;
  }
  data_ = static_cast<uint8_t*>(mem);
  temp_regions_ = std::move(regions).value();
}

StagingBlock::~StagingBlock() {
  if (data_ == nullptr) return;
  if (pooled_size_ > 0) {
    MutexLock lock(&impl_->staging_mu);
    impl_->staging_alloc->Free(offset_, pooled_size_);
    impl_->staging_cv.notify_all();
    return;
  }
  for (auto& [e, r] : temp_regions_) e->UnregisterMemory(r);
  munmap(data_, size_);
}

ErrorCode Client::Impl::OpenEngines() {
  if (options.rdma_factory) transports.RegisterFactory("rdma", options.rdma_factory);
  std::vector<std::string> wanted;
  const std::string& p = options.protocol;
  if (p == "auto") {
    wanted.push_back("ucx");
    if (options.rdma_factory && options.rdma_device_present) wanted.push_back("rdma");
  } else if (p == "rdma" || p == "ucx" || p == "loopback") {
    wanted.push_back(p);
  } else if (p != "none") {
    return ErrorCode::INVALID_PARAMS;
  }
  for (const std::string& protocol : wanted) {
    if (transports.For(protocol) != nullptr) continue;
    auto engine = transports.Open(protocol, options.transport);
    if (!engine.ok()) return engine.error();
  }
  for (const char* protocol : {"rdma", "ucx", "loopback"}) {
    if (TransportEngine* e = transports.For(protocol)) engines.push_back(e);
  }
  // LOCAL_DISK requests travel on the ucx engine's messages when there is
  // one (nodes serve them there), else on any engine that carries messages.
  for (const char* protocol : {"ucx", "loopback"}) {
    TransportEngine* e = transports.For(protocol);
    if (e != nullptr && e->messages() != nullptr) {
      messages = e->messages();
      break;
    }
  }
  return engines.empty() ? ErrorCode::INVALID_PARAMS : ErrorCode::OK;
}

ErrorCode Client::Impl::SetUpStaging() {
  if (options.staging_bytes < kStagingAlignment) return ErrorCode::INVALID_PARAMS;
  options.staging_bytes &= ~(kStagingAlignment - 1);
  staging = static_cast<uint8_t*>(MapAnonymous(options.staging_bytes));
  if (staging == nullptr) return ErrorCode::INVALID_PARAMS;
  auto regions = RegisterAll(staging, options.staging_bytes);
  if (!regions.ok()) return regions.error();
  staging_regions = std::move(regions).value();
  MutexLock lock(&staging_mu);
  staging_alloc.emplace(options.staging_bytes, kStagingAlignment);
  return ErrorCode::OK;
}

// Keeps the MEMORY replicas, this host's first (stable otherwise), and the
// LOCAL_DISK ones after them.
ObjectLocation Client::Impl::Order(std::string_view tenant, std::string_view key,
                                   GetReplicaListResponse info, int64_t start_ms) const {
  ObjectLocation loc;
  loc.tenant = std::string(tenant);
  loc.key = std::string(key);
  std::vector<ReplicaDescriptor> local, remote, disk;
  for (ReplicaDescriptor& r : info.replicas) {
    if (r.type == ReplicaType::LOCAL_DISK) {
      disk.push_back(std::move(r));
      continue;
    }
    if (r.type != ReplicaType::MEMORY) continue;
    auto hp = ParseHostPort(r.memory.endpoint);
    bool is_local = hp && local_hosts.count(hp->host) > 0;
    (is_local ? local : remote).push_back(std::move(r));
  }
  info.replicas.clear();
  std::move(local.begin(), local.end(), std::back_inserter(info.replicas));
  std::move(remote.begin(), remote.end(), std::back_inserter(info.replicas));
  std::move(disk.begin(), disk.end(), std::back_inserter(info.replicas));
  loc.lease_deadline_ms = start_ms + info.lease_ttl_ms;
  loc.info = std::move(info);
  return loc;
}

Result<Client::Impl::Located> Client::Impl::Locate(std::string_view tenant, std::string_view key,
                                                   const GetOptions& options) {
  Located found;
  // Replicas that appear within a lease are LOCAL_DISK ones (offload): a
  // caller preferring them asks the master when the entry has none.
  if (options.use_location_cache) {
    found.location =
        cache->Lookup(tenant, key, options.prefer_local_disk ? HasDiskReplica : nullptr);
  }
  found.cached = found.location != nullptr;
  if (!found.cached) {
    auto looked = LookUp(tenant, key);
    if (!looked.ok()) return looked.error();
    found.location = std::move(looked).value();
  }
  if (options.prefer_local_disk) found.location = DiskReplicasFirst(*found.location);
  return found;
}

Result<std::shared_ptr<const ObjectLocation>> Client::Impl::LookUp(std::string_view tenant,
                                                                   std::string_view key) {
  const uint64_t epoch = cache->Epoch(tenant, key);  // before the RPC: see LocationCache
  const int64_t start = clock->NowMs();                // the lease is counted from here
  auto info = master().GetReplicaList(tenant, key);
  if (!info.ok()) return info.error();
  auto loc = std::make_shared<const ObjectLocation>(
      Order(tenant, key, std::move(info).value(), start));
  cache->Insert(loc, epoch);
  return loc;
}

ErrorCode Client::Impl::CheckRead(const ObjectLocation& loc, const uint8_t* bytes) const {
  if (clock->NowMs() >= loc.lease_deadline_ms) return ErrorCode::LEASE_EXPIRED;
  if (loc.info.checksum &&
      ObjectChecksum({reinterpret_cast<const char*>(bytes), loc.info.size}) != *loc.info.checksum) {
    return ErrorCode::CHECKSUM_MISMATCH;
  }
  return ErrorCode::OK;
}

ErrorCode Client::Impl::ReadReplica(const ObjectLocation& loc, const MemoryDescriptor& replica,
                                    uint8_t* dst) {
  TransferOp op = WholeObjectOp(replica, dst, loc.info.size);
  TransferStatus st = transports.Transfer(TransferKind::READ, {&op, 1}, options.transfer_timeout_ms);
  if (!st.ok()) return st.code;
  return CheckRead(loc, dst);
}

ErrorCode Client::Impl::ReadDiskReplica(const ObjectLocation& loc, const DiskDescriptor& replica,
                                        uint8_t* dst) {
  if (messages == nullptr) return ErrorCode::INVALID_PARAMS;  // no engine to reach the node
  auto read = ReadLocalDiskInto(*messages, replica.endpoint, loc.tenant, loc.key, dst,
                                loc.info.size, options.transfer_timeout_ms);
  if (!read.ok()) return read.error();
  return CheckRead(loc, dst);
}

ErrorCode Client::Impl::ReadEach(const ObjectLocation& loc, const ReplicaReader& read) {
  if (loc.info.replicas.empty()) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
  ErrorCode last = ErrorCode::TRANSFER_FAIL;
  for (const ReplicaDescriptor& r : loc.info.replicas) {
    last = read(r);
    if (last == ErrorCode::OK || last == ErrorCode::LEASE_EXPIRED) return last;
  }
  return last;
}

ErrorCode Client::Impl::Read(const ObjectLocation& loc, uint8_t* dst) {
  return ReadEach(loc, [&](const ReplicaDescriptor& r) {
    return r.type == ReplicaType::LOCAL_DISK ? ReadDiskReplica(loc, r.disk, dst)
                                             : ReadReplica(loc, r.memory, dst);
  });
}

Result<std::string> Client::Impl::ReadToString(const ObjectLocation& loc) {
  std::string out;
  std::optional<StagingBlock> block;  // taken for the first MEMORY replica tried
  ErrorCode rc = ReadEach(loc, [&](const ReplicaDescriptor& r) {
    if (r.type == ReplicaType::LOCAL_DISK) {
      out.resize(loc.info.size);
      return ReadDiskReplica(loc, r.disk, reinterpret_cast<uint8_t*>(out.data()));
    }
    if (!block) block.emplace(this, loc.info.size);
    if (block->data() == nullptr) return ErrorCode::NO_AVAILABLE_HANDLE;
    ErrorCode read = ReadReplica(loc, r.memory, block->data());
    if (read == ErrorCode::OK) out.assign(reinterpret_cast<const char*>(block->data()), loc.info.size);
    return read;
  });
  if (rc != ErrorCode::OK) return rc;
  return out;
}

Result<std::string> Client::Impl::ReadLocated(std::string_view tenant, std::string_view key,
                                              const GetOptions& options, const Located& found) {
  auto got = ReadToString(*found.location);
  if (got.ok()) return got;
  cache->Invalidate(tenant, key);
  if (!found.cached) return got;
  return GetFresh(tenant, key, options);
}

Result<std::string> Client::Impl::GetFresh(std::string_view tenant, std::string_view key,
                                           const GetOptions& options) {
  GetOptions fresh = options;
  fresh.use_location_cache = false;
  auto found = Locate(tenant, key, fresh);
  if (!found.ok()) return found.error();
  return ReadLocated(tenant, key, fresh, *found);  // not cached: no further retry
}

ErrorCode Client::Impl::WriteReplicas(const std::vector<ReplicaDescriptor>& replicas,
                                      uint8_t* src, uint64_t size) {
  std::vector<TransferOp> ops;
  for (const ReplicaDescriptor& r : replicas) {
    if (r.type != ReplicaType::MEMORY) return ErrorCode::INVALID_REPLICA;
    ops.push_back(WholeObjectOp(r.memory, src, size));
  }
  TransferStatus st = transports.Transfer(TransferKind::WRITE, ops, options.transfer_timeout_ms);
  return st.code;
}

// --- Client ------------------------------------------------------------------

Result<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  return Create(std::move(options), {});
}

Result<std::unique_ptr<Client>> Client::Create(
    ClientOptions options, std::vector<std::unique_ptr<TransportEngine>> engines) {
  if (!ParseHostPort(options.master)) return ErrorCode::INVALID_PARAMS;
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  if (impl->options.transport.client_id.is_nil()) {
    impl->options.transport.client_id = UUID::Generate();
  }
  impl->clock = impl->options.clock != nullptr ? impl->options.clock : &impl->steady;
  // A negative margin would serve locations past their lease.
  if (impl->options.location_cache.margin_ms < 0) return ErrorCode::INVALID_PARAMS;
  impl->cache.emplace(impl->options.location_cache, impl->clock);
  for (auto& engine : engines) {
    auto added = impl->transports.Add(std::move(engine));
    if (!added.ok()) return added.error();
  }
  ErrorCode rc = impl->OpenEngines();
  if (rc != ErrorCode::OK) return rc;
  rc = impl->SetUpStaging();
  if (rc != ErrorCode::OK) return rc;
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const UUID& Client::client_id() const { return impl_->options.transport.client_id; }

TransportEngine* Client::engine(std::string_view protocol) const {
  return impl_->transports.For(protocol);
}

AmTransport* Client::messages() const { return impl_->messages; }

std::optional<EngineCounters> Client::TransferCounters(std::string_view protocol) const {
  const TransportEngine* e = impl_->transports.For(protocol);
  if (e == nullptr) return std::nullopt;
  if (auto own = e->transfer_counters()) return own;
  if (!impl_->options.engine_counters) return std::nullopt;
  return impl_->options.engine_counters(*e);
}

ErrorCode Client::Put(std::string_view tenant, std::string_view key, std::string_view value,
                      const PutOptions& options) {
  PutConfig config = options.config;
  if (options.compute_checksum) config.checksum = ObjectChecksum(value);
  MasterClient& master = impl_->master();
  auto replicas = master.PutStart(tenant, key, value.size(), config);
  if (!replicas.ok()) return replicas.error();
  ErrorCode rc = ErrorCode::NO_AVAILABLE_HANDLE;
  {
    StagingBlock block(impl_.get(), value.size());
    if (block.data() != nullptr) {
      std::memcpy(block.data(), value.data(), value.size());
      rc = impl_->WriteReplicas(*replicas, block.data(), value.size());
    }
  }
  if (rc != ErrorCode::OK) {
    (void)master.PutRevoke(tenant, key);
    return rc;
  }
  rc = master.PutEnd(tenant, key);
  // A new object: a cached location of the key would be of a removed one.
  if (rc == ErrorCode::OK) impl_->cache->Invalidate(tenant, key);
  return rc;
}

Result<ObjectLocation> Client::Locate(std::string_view tenant, std::string_view key,
                                      const GetOptions& options) {
  auto found = impl_->Locate(tenant, key, options);
  if (!found.ok()) return found.error();
  return *found->location;
}

Result<std::string> Client::Get(std::string_view tenant, std::string_view key,
                                const GetOptions& options) {
  auto found = impl_->Locate(tenant, key, options);
  if (!found.ok()) return found.error();
  return impl_->ReadLocated(tenant, key, options, *found);
}

ErrorCode Client::Read(const ObjectLocation& location, void* dst, uint64_t capacity) {
  if (capacity < location.info.size) return ErrorCode::BUFFER_OVERFLOW;
  const ErrorCode rc = impl_->Read(location, static_cast<uint8_t*>(dst));
  if (rc != ErrorCode::OK) impl_->cache->Invalidate(location.tenant, location.key);
  return rc;
}

ErrorCode Client::Remove(std::string_view tenant, std::string_view key, bool force) {
  const ErrorCode rc = impl_->master().Remove(tenant, key, force);
  // After the RPC: a lookup racing with it cannot bring the entry back
  // (LocationCache's epochs).
  impl_->cache->Invalidate(tenant, key);
  return rc;
}

LocationCacheStats Client::location_cache_stats() const { return impl_->cache->stats(); }

Result<bool> Client::Exist(std::string_view tenant, std::string_view key) {
  return impl_->master().ExistKey(tenant, key);
}

std::vector<Result<bool>> Client::BatchExist(std::string_view tenant,
                                             const std::vector<std::string>& keys) {
  auto answers = impl_->master().BatchExistKey(tenant, keys);
  if (!answers.ok()) return std::vector<Result<bool>>(keys.size(), answers.error());
  return std::move(answers).value();
}

ErrorCode Client::RegisterBuffer(void* addr, uint64_t size) {
  if (addr == nullptr || size == 0) return ErrorCode::INVALID_PARAMS;
  auto regions = impl_->RegisterAll(addr, size);
  if (!regions.ok()) return regions.error();
  MutexLock lock(&impl_->buffers_mu);
  auto [it, inserted] = impl_->buffers.try_emplace(addr, std::move(regions).value());
  if (!inserted) {
    for (auto& [e, r] : regions.value()) e->UnregisterMemory(r);
    return ErrorCode::INVALID_PARAMS;
  }
  return ErrorCode::OK;
}

void Client::UnregisterBuffer(void* addr) {
  EngineRegions regions;
  {
    MutexLock lock(&impl_->buffers_mu);
    auto it = impl_->buffers.find(addr);
    if (it == impl_->buffers.end()) return;
    regions = std::move(it->second);
    impl_->buffers.erase(it);
  }
  for (auto& [e, r] : regions) e->UnregisterMemory(r);
}

}  // namespace shelfmark
