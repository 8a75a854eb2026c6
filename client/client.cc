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

#include "common/checksum.h"
#include "common/host_port.h"
#include "common/mapped_range.h"
#include "client/client_impl.h"
#include "client/local_disk_client.h"
#include "ha/master_address.h"
#include "transport/local_share.h"

namespace shelfmark {

uint64_t ObjectChecksum(std::string_view value) { return Checksum64(value); }

namespace {

// A thread's connection to one Client's master, and the put reservations
// granted on it.
struct ThreadMaster {
  std::unique_ptr<MasterClient> master;
  PutReservationPool reservations;
};

// The thread's masters, by Client instance number.
std::unordered_map<uint64_t, ThreadMaster>& ThreadMasters() {
  thread_local std::unordered_map<uint64_t, ThreadMaster> masters;
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

Client::Impl::Impl(bool stream_local_reads)
    : instance(g_next_instance.fetch_add(1)),
      local_hosts(LocalHosts()),
      local(stream_local_reads) {}

Client::Impl::~Impl() {
  ThreadMasters().erase(instance);
  for (auto& [engine, region] : staging_regions) engine->UnregisterMemory(region);
  if (staging != nullptr) munmap(staging, options.staging_bytes);
}

MasterClient& Client::Impl::master() {
  auto& slot = ThreadMasters()[instance].master;
  if (slot == nullptr) {
    MasterClientOptions mo;
    mo.address = options.master;
    mo.cluster_id = options.cluster_id;
    mo.follow_leader_hints = options.follow_leader_hints;
    mo.client_id = options.transport.client_id;
    mo.call_timeout_ms = options.rpc_timeout_ms;
    mo.lookup_channel = options.lookup_channel;
    mo.reply_poll_us = options.reply_poll_us;
    mo.token = options.master_token.empty() ? options.transport.cluster_token
                                            : options.master_token;
    slot = std::make_unique<MasterClient>(mo);
  }
  return *slot;
}

PutReservationPool& Client::Impl::reservations() {
  return ThreadMasters()[instance].reservations;
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

bool Client::Impl::Registered(const void* addr, uint64_t size) {
  if (size == 0) return true;
  const auto* p = static_cast<const uint8_t*>(addr);
  if (p == nullptr) return false;
  MutexLock lock(&buffers_mu);
  auto it = buffers.upper_bound(const_cast<uint8_t*>(p));  // the first buffer after p
  if (it == buffers.begin()) return false;
  --it;
  const uint64_t into = static_cast<uint64_t>(p - it->first);
  return into < it->second.size && size <= it->second.size - into;
}

TransferStatus Client::Impl::Move(TransferKind kind, std::span<const TransferOp> ops) {
  std::vector<TransferOp> remote;
  local.CopyAll(kind, ops, StreamsReads(kind, ops), &remote);
  if (remote.empty()) return {};
  return transports.Transfer(kind, remote, options.transfer_timeout_ms);
}

StagingBlock::StagingBlock(Client::Impl* impl, uint64_t size) : impl_(impl), size_(size) {
  if (impl->staging == nullptr) {  // staging_bytes = 0: this client has none
    error_ = ErrorCode::INVALID_PARAMS;
    return;
  }
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
  error_ = ErrorCode::NO_AVAILABLE_HANDLE;
  void* mem = MapAnonymous(size);
  if (mem == nullptr) return;
  auto regions = impl->RegisterAll(mem, size);
  if (!regions.ok()) {
    munmap(mem, size);
    return;
  }
  error_ = ErrorCode::OK;
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
  if (options.staging_bytes == 0) return ErrorCode::OK;  // no staging (client.h)
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

// Keeps the MEMORY replicas, those in this process's own segments first,
// then this host's (stable otherwise), and the LOCAL_DISK ones after them.
ObjectLocation Client::Impl::Order(std::string_view tenant, std::string_view key,
                                   GetReplicaListResponse info, int64_t start_ms) const {
  ObjectLocation loc;
  loc.tenant = std::string(tenant);
  loc.key = std::string(key);
  std::vector<ReplicaDescriptor> own, same_host, remote, disk;
  for (ReplicaDescriptor& r : info.replicas) {
    if (r.type == ReplicaType::LOCAL_DISK) {
      disk.push_back(std::move(r));
      continue;
    }
    if (r.type != ReplicaType::MEMORY) continue;
    if (local.Holds(r.memory)) {
      own.push_back(std::move(r));
      continue;
    }
    auto hp = ParseHostPort(r.memory.endpoint);
    bool is_local = hp && local_hosts.count(hp->host) > 0;
    (is_local ? same_host : remote).push_back(std::move(r));
  }
  info.replicas.clear();
  std::move(own.begin(), own.end(), std::back_inserter(info.replicas));
  std::move(same_host.begin(), same_host.end(), std::back_inserter(info.replicas));
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

ErrorCode Client::Impl::CheckRead(const ObjectLocation& loc, const TransferPlan& plan,
                                  std::optional<uint64_t> sum) const {
  if (clock->NowMs() >= loc.lease_deadline_ms) return ErrorCode::LEASE_EXPIRED;
  if (plan.whole && loc.info.checksum && (sum ? *sum : PlanChecksum(plan)) != *loc.info.checksum) {
    return ErrorCode::CHECKSUM_MISMATCH;
  }
  return ErrorCode::OK;
}

void Client::Impl::AskChecksum(const ObjectLocation& loc, const TransferPlan& plan,
                               std::span<TransferOp> ops, std::optional<uint64_t>* sum) {
  if (ops.size() == 1 && plan.whole && loc.info.checksum) ops.front().checksum = sum;
}

ErrorCode Client::Impl::ReadReplica(const ObjectLocation& loc, const MemoryDescriptor& replica,
                                    const TransferPlan& plan) {
  std::vector<TransferOp> ops;
  AppendOps(plan, replica, &ops);
  std::optional<uint64_t> sum;
  AskChecksum(loc, plan, ops, &sum);
  TransferStatus st = Move(TransferKind::READ, ops);
  if (!st.ok()) return st.code;
  return CheckRead(loc, plan, sum);
}

ErrorCode Client::Impl::ReadDiskReplica(const ObjectLocation& loc, const DiskDescriptor& replica,
                                        const TransferPlan& plan) {
  if (messages == nullptr) return ErrorCode::INVALID_PARAMS;  // no engine to reach the node
  const uint64_t size = loc.info.size;
  const bool direct = plan.whole && plan.pieces.size() == 1;
  std::string temp;  // the whole object, when the plan is not one piece of it
  if (!direct) temp.resize(size);
  uint8_t* dst = direct ? plan.pieces[0].local : reinterpret_cast<uint8_t*>(temp.data());
  auto read = ReadLocalDiskInto(*messages, replica.endpoint, loc.tenant, loc.key, dst, size,
                                options.transfer_timeout_ms);
  if (!read.ok()) return read.error();
  if (direct) return CheckRead(loc, plan);
  TransferPlan whole;
  whole.whole = true;
  if (size > 0) whole.pieces.push_back({0, size, dst});
  const ErrorCode rc = CheckRead(loc, whole);
  if (rc == ErrorCode::OK) CopyPieces(plan, dst);
  return rc;
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

ErrorCode Client::Impl::Read(const ObjectLocation& loc, const TransferPlan& plan) {
  return ReadEach(loc, [&](const ReplicaDescriptor& r) {
    return r.type == ReplicaType::LOCAL_DISK ? ReadDiskReplica(loc, r.disk, plan)
                                             : ReadReplica(loc, r.memory, plan);
  });
}

Result<uint64_t> Client::Impl::ReadInto(const ObjectLocation& loc,
                                        std::span<const MutableBuffer> parts) {
  auto plan = ScatterPlan(parts, loc.info.size);
  if (!plan.ok()) return plan.error();
  const ErrorCode rc = Read(loc, *plan);
  if (rc != ErrorCode::OK) return rc;
  return loc.info.size;
}

Result<std::string> Client::Impl::ReadToString(const ObjectLocation& loc) {
  std::string out;
  std::optional<StagingBlock> block;  // taken for the first MEMORY replica tried
  ErrorCode rc = ReadEach(loc, [&](const ReplicaDescriptor& r) {
    if (r.type == ReplicaType::LOCAL_DISK) {
      out.resize(loc.info.size);
      const MutableBuffer into{out.data(), out.size()};
      return ReadDiskReplica(loc, r.disk, ScatterPlan({&into, 1}, loc.info.size).value());
    }
    if (!block) block.emplace(this, loc.info.size);
    if (block->data() == nullptr) return block->error();
    const MutableBuffer into{block->data(), loc.info.size};
    ErrorCode read = ReadReplica(loc, r.memory, ScatterPlan({&into, 1}, loc.info.size).value());
    if (read == ErrorCode::OK) out.assign(reinterpret_cast<const char*>(block->data()), loc.info.size);
    return read;
  });
  if (rc != ErrorCode::OK) return rc;
  return out;
}

ErrorCode Client::Impl::WriteReplicas(const std::vector<ReplicaDescriptor>& replicas,
                                      const TransferPlan& plan, std::optional<uint64_t>* sum) {
  std::vector<TransferOp> ops;
  for (const ReplicaDescriptor& r : replicas) {
    if (r.type != ReplicaType::MEMORY) return ErrorCode::INVALID_REPLICA;
    AppendOps(plan, r.memory, &ops);
  }
  AskWriteChecksum(plan, ops, sum);
  return Move(TransferKind::WRITE, ops).code;
}

void Client::Impl::AskWriteChecksum(const TransferPlan& plan, std::span<TransferOp> first,
                                    std::optional<uint64_t>* sum) {
  if (sum != nullptr && plan.pieces.size() == 1 && !first.empty()) first.front().checksum = sum;
}

uint64_t Client::Impl::WrittenChecksum(const TransferPlan& plan,
                                       const std::optional<uint64_t>& sum) {
  return sum ? *sum : PlanChecksum(plan);
}

ErrorCode Client::Impl::PutPlanned(std::string_view tenant, std::string_view key,
                                   const TransferPlan& plan, const PutOptions& options) {
  if (this->options.reserve_puts && this->options.lookup_channel &&
      ReservableConfig(options.config)) {
    if (std::optional<ErrorCode> rc = PutReserved(tenant, key, plan, options)) return *rc;
  }
  return PutTwoSteps(tenant, key, plan, options);
}

bool Client::Impl::ReservableConfig(const PutConfig& config) {
  // Not an upsert (its PutStart places a pending version). A placement
  // preference may be reserved: the pool keeps reservations by placement,
  // and the master grants one only where the preference asks.
  return !config.replace;
}

std::optional<PutReservationPool::Held> Client::Impl::TakeReservation(std::string_view tenant,
                                                                      uint64_t size,
                                                                      const PutConfig& config) {
  MasterClient& m = master();
  PutReservationPool& pool = reservations();
  const int64_t now = clock->NowMs();
  if (auto held = pool.Take(size, config, m.ChannelConnection(), now)) return held;
  if (pool.paused(now)) return std::nullopt;
  auto grant = m.ReservePut(tenant, size, config);
  if (!grant.ok()) {
    PauseReservations(grant.error(), now);
    return std::nullopt;
  }
  const uint64_t connection = m.ChannelConnection();
  pool.Keep(size, config, std::move(*grant), connection, now);
  return pool.Take(size, config, connection, now);
}

void Client::Impl::PauseReservations(ErrorCode refusal, int64_t now) {
  // No channel, or a master too old to know the call: no reservations for
  // a while. No room for one now (or this client holds its most): none for
  // a moment (each ask would cost a round trip). Anything else (a
  // transport error): two steps this time.
  if (MasterClient::ReservationRefusalLasts(refusal)) {
    reservations().PauseUntil(now + kReservationPauseMs);
  } else if (refusal == ErrorCode::NO_AVAILABLE_HANDLE) {
    reservations().PauseUntil(now + kNoRoomPauseMs);
  }
}

std::optional<ErrorCode> Client::Impl::PutReserved(std::string_view tenant, std::string_view key,
                                                   const TransferPlan& plan,
                                                   const PutOptions& options) {
  const uint64_t size = PlanBytes(plan);
  std::optional<PutReservationPool::Held> held = TakeReservation(tenant, size, options.config);
  if (!held) return std::nullopt;
  std::optional<uint64_t> sum;
  ErrorCode rc = WriteReplicas(held->grant.replicas, plan, options.compute_checksum ? &sum : nullptr);
  // A failed write (the reservation may lie in a segment that went since:
  // its node restarted) leaves the reservation to its deadline, and the
  // put goes in two steps, placed anew.
  if (rc != ErrorCode::OK) return std::nullopt;
  PutConfig config = options.config;
  if (options.compute_checksum) config.checksum = WrittenChecksum(plan, sum);
  MasterClient& m = master();
  auto committed = m.CommitPut(tenant, key, held->grant.id, config, /*renew=*/true);
  if (committed.ok()) {
    if (*committed) {
      reservations().Keep(size, options.config, std::move(**committed), m.ChannelConnection(),
                          clock->NowMs());
    }
    reserved_puts.fetch_add(1, std::memory_order_relaxed);
    cache->Invalidate(tenant, key);  // a new object: a cached location would be of a removed one
    return ErrorCode::OK;
  }
  return CommitRefused(committed.error(), size, options.config, std::move(*held));
}

std::optional<ErrorCode> Client::Impl::CommitRefused(ErrorCode rc, uint64_t size,
                                                     const PutConfig& config,
                                                     PutReservationPool::Held&& held) {
  switch (rc) {
    case ErrorCode::LEASE_EXPIRED:                  // given back: put in two steps
    case ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS:  // the channel is not usable now
    case ErrorCode::NOT_LEADER:                     // granted by a master no longer leading
      return std::nullopt;
    case ErrorCode::RPC_FAIL:  // it may have been committed: not repeated
      return ErrorCode::RPC_FAIL;
    default:  // refused and kept by the master (OBJECT_ALREADY_EXISTS, bad input)
      reservations().Return(size, config, std::move(held));
      return rc;
  }
}

ErrorCode Client::Impl::PutTwoSteps(std::string_view tenant, std::string_view key,
                                    const TransferPlan& plan, const PutOptions& options) {
  MasterClient& m = master();
  auto replicas = m.PutStart(tenant, key, PlanBytes(plan), options.config);
  if (!replicas.ok()) return replicas.error();
  std::optional<uint64_t> sum;
  ErrorCode rc = WriteReplicas(*replicas, plan, options.compute_checksum ? &sum : nullptr);
  if (rc != ErrorCode::OK) {
    (void)m.PutRevoke(tenant, key);
    return rc;
  }
  std::optional<uint64_t> checksum;
  if (options.compute_checksum) checksum = WrittenChecksum(plan, sum);
  rc = m.PutEnd(tenant, key, ReplicaType::MEMORY, checksum);
  // A new object: a cached location of the key would be of a removed one.
  if (rc == ErrorCode::OK) cache->Invalidate(tenant, key);
  return rc;
}

// --- Client ------------------------------------------------------------------

Result<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  return Create(std::move(options), {});
}

Result<std::unique_ptr<Client>> Client::Create(
    ClientOptions options, std::vector<std::unique_ptr<TransportEngine>> engines) {
  if (!ha::MasterFlagError("master", options.master, options.cluster_id).empty()) {
    return ErrorCode::INVALID_PARAMS;
  }
  auto impl = std::make_unique<Impl>(options.stream_local_reads);
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

uint64_t Client::reserved_puts() const { return impl_->reserved_puts.load(); }

std::optional<EngineCounters> Client::TransferCounters(std::string_view protocol) const {
  const TransportEngine* e = impl_->transports.For(protocol);
  if (e == nullptr) return std::nullopt;
  if (auto own = e->transfer_counters()) return own;
  if (!impl_->options.engine_counters) return std::nullopt;
  return impl_->options.engine_counters(*e);
}

ErrorCode Client::Put(std::string_view tenant, std::string_view key, std::string_view value,
                      const PutOptions& options) {
  StagingBlock block(impl_.get(), value.size());
  if (block.data() == nullptr) return block.error();
  std::memcpy(block.data(), value.data(), value.size());
  const ConstBuffer staged{block.data(), value.size()};
  return impl_->PutPlanned(tenant, key, GatherPlan({&staged, 1}).value(), options);
}

ErrorCode Client::PutFrom(std::string_view tenant, std::string_view key, const void* buffer,
                          uint64_t size, const PutOptions& options) {
  return PutParts(tenant, key, {ConstBuffer{buffer, size}}, options);
}

ErrorCode Client::PutParts(std::string_view tenant, std::string_view key,
                           const std::vector<ConstBuffer>& parts, const PutOptions& options) {
  if (ErrorCode rc = impl_->CheckRegistered(parts); rc != ErrorCode::OK) return rc;
  auto plan = GatherPlan(parts);
  if (!plan.ok()) return plan.error();
  return impl_->PutPlanned(tenant, key, *plan, options);
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
  return impl_->ReadFound<std::string>(
      tenant, key, options, *found,
      [this](const ObjectLocation& loc) { return impl_->ReadToString(loc); });
}

Result<uint64_t> Client::GetInto(std::string_view tenant, std::string_view key, void* dst,
                                 uint64_t capacity, const GetOptions& options) {
  const MutableBuffer into{dst, capacity};
  if (!impl_->Registered(dst, capacity)) return ErrorCode::INVALID_PARAMS;
  auto found = impl_->Locate(tenant, key, options);
  if (!found.ok()) return found.error();
  if (capacity < found->location->info.size) return ErrorCode::BUFFER_OVERFLOW;
  return impl_->ReadFound<uint64_t>(
      tenant, key, options, *found,
      [&](const ObjectLocation& loc) { return impl_->ReadInto(loc, {&into, 1}); });
}

ErrorCode Client::GetIntoRanges(std::string_view tenant, std::string_view key,
                                const std::vector<ReadRange>& ranges, const GetOptions& options) {
  for (const ReadRange& r : ranges) {
    if (!impl_->Registered(r.dst, r.length)) return ErrorCode::INVALID_PARAMS;
  }
  auto found = impl_->Locate(tenant, key, options);
  if (!found.ok()) return found.error();
  auto read = [&](const ObjectLocation& loc) -> Result<bool> {
    auto plan = RangePlan(ranges, loc.info.size);
    if (!plan.ok()) return plan.error();
    const ErrorCode rc = impl_->Read(loc, *plan);
    if (rc != ErrorCode::OK) return rc;
    return true;
  };
  // A range past the end is the caller's error, not the location's.
  if (auto plan = RangePlan(ranges, found->location->info.size); !plan.ok()) return plan.error();
  auto got = impl_->ReadFound<bool>(tenant, key, options, *found, read);
  return got.ok() ? ErrorCode::OK : got.error();
}

Result<uint64_t> Client::GetSize(std::string_view tenant, std::string_view key) {
  auto found = impl_->Locate(tenant, key, {});
  if (!found.ok()) return found.error();
  return found->location->info.size;
}

ErrorCode Client::Read(const ObjectLocation& location, void* dst, uint64_t capacity) {
  const MutableBuffer into{dst, capacity};
  auto read = impl_->ReadInto(location, {&into, 1});
  if (!read.ok() && read.error() != ErrorCode::BUFFER_OVERFLOW) {
    impl_->cache->Invalidate(location.tenant, location.key);
  }
  return read.ok() ? ErrorCode::OK : read.error();
}

ErrorCode Client::DrainSegment(const UUID& segment_id) {
  return impl_->master().DrainSegment(segment_id);
}

ErrorCode Client::Remove(std::string_view tenant, std::string_view key, bool force) {
  const ErrorCode rc = impl_->master().Remove(tenant, key, force);
  // After the RPC: a lookup racing with it cannot bring the entry back
  // (LocationCache's epochs).
  impl_->cache->Invalidate(tenant, key);
  return rc;
}

std::vector<ErrorCode> Client::BatchRemove(std::string_view tenant,
                                           const std::vector<std::string>& keys, bool force) {
  auto answers = impl_->master().BatchRemove(tenant, keys, force);
  for (const std::string& key : keys) impl_->cache->Invalidate(tenant, key);  // as in Remove
  if (!answers.ok()) return std::vector<ErrorCode>(keys.size(), answers.error());
  return std::move(answers).value();
}

Result<uint64_t> Client::RemoveAll(std::string_view tenant, bool force) {
  auto removed = impl_->master().RemoveAll(tenant, /*all_tenants=*/false, force);
  impl_->cache->InvalidateAll();
  return removed;
}

Result<uint64_t> Client::RemoveByRegex(std::string_view tenant, std::string_view pattern,
                                       bool force) {
  auto removed = impl_->master().RemoveByRegex(tenant, pattern, force);
  impl_->cache->InvalidateAll();
  return removed;
}

LocationCacheStats Client::location_cache_stats() const { return impl_->cache->stats(); }

ErrorCode Client::AttachLocalSegment(const UUID& segment_id, void* base, uint64_t size) {
  return impl_->local.Attach(segment_id, base, size);
}

void Client::DetachLocalSegment(const UUID& segment_id) { impl_->local.Detach(segment_id); }

LocalCopyStats Client::local_stats() const { return impl_->local.stats(); }

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
  // Gets write into registered memory (on UCX's thread, or by memcpy from a
  // local segment): memory that would fault there is refused now, with a
  // code, instead of killing the process at the first read.
  if (!MappedWith(addr, size, RangeAccess::kReadWrite)) return ErrorCode::INVALID_PARAMS;
  auto regions = impl_->RegisterAll(addr, size);
  if (!regions.ok()) return regions.error();
  MutexLock lock(&impl_->buffers_mu);
  auto [it, inserted] = impl_->buffers.try_emplace(static_cast<uint8_t*>(addr),
                                                   Impl::Registration{size, *regions});
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
    auto it = impl_->buffers.find(static_cast<uint8_t*>(addr));
    if (it == impl_->buffers.end()) return;
    regions = std::move(it->second.regions);
    impl_->buffers.erase(it);
  }
  for (auto& [e, r] : regions) e->UnregisterMemory(r);
}

}  // namespace shelfmark
