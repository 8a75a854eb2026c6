#include "python/native/service_store.h"

#include "storeservice/host_mem_allocator.h"
#include "storeservice/ranged_read.h"
#include "storeservice/service_client.h"
#include "storeservice/service_wire.h"

namespace shelfmark::python {
namespace {

using storeservice::Item;

int Code(ErrorCode code) { return static_cast<int>(code); }

// The batch items of parallel lists; empty when their lengths differ.
std::vector<Item> Items(const std::vector<std::string>& keys, const std::vector<uint64_t>& ptrs,
                        const std::vector<uint64_t>& sizes) {
  std::vector<Item> items;
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return items;
  items.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) items.push_back(Item{keys[i], ptrs[i], sizes[i]});
  return items;
}

// The parts items of per-key lists of buffers; empty when the shapes differ.
std::vector<storeservice::PartsItem> PartsItems(const std::vector<std::string>& keys,
                                                const std::vector<std::vector<uint64_t>>& ptrs,
                                                const std::vector<std::vector<uint64_t>>& sizes) {
  std::vector<storeservice::PartsItem> items;
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return items;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ptrs[i].size() != sizes[i].size()) return {};
    storeservice::PartsItem item{keys[i], {}};
    for (size_t j = 0; j < ptrs[i].size(); ++j) item.pieces.push_back({ptrs[i][j], sizes[i][j]});
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace

ServiceStore::ServiceStore() = default;
ServiceStore::~ServiceStore() { Close(); }

std::shared_ptr<storeservice::ServiceClient> ServiceStore::Acquire() const {
  MutexLock lock(&mu_);
  return client_;
}

int ServiceStore::Setup(const ServiceStoreOptions& options) {
  Close();
  storeservice::ServiceClientOptions o;
  o.socket = storeservice::SocketOf(options.server_address);
  if (o.socket.empty() || options.timeout_ms <= 0 || options.timeout_ms > INT32_MAX) {
    return Code(ErrorCode::INVALID_PARAMS);
  }
  o.cluster_token = options.cluster_token;
  o.tenant = options.tenant;
  o.timeout_ms = static_cast<int>(options.timeout_ms);
  auto client = storeservice::ServiceClient::Connect(o);
  if (!client.ok()) return Code(client.error());
  MutexLock lock(&mu_);
  client_ = std::move(client).value();
  socket_ = o.socket;
  return 0;
}

int ServiceStore::Close() {
  MutexLock lock(&mu_);
  client_.reset();  // calls in flight keep theirs
  socket_.clear();
  buffers_.clear();
  allocations_.clear();
  return 0;
}

bool ServiceStore::is_open() const { return Acquire() != nullptr; }

std::string ServiceStore::hostname() const {
  MutexLock lock(&mu_);
  return socket_;
}

#define SHELFMARK_SERVICE_OR(client, value) \
  auto client = Acquire();                  \
  if (client == nullptr) return value

int ServiceStore::HealthCheck() {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->Health();
}

int ServiceStore::Put(const std::string& key, const char* data, uint64_t size,
                      const PutConfig& config) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  if (size == 0) return Code(ErrorCode::INVALID_PARAMS);
  return client->Put(key, std::string_view(data, size), config);
}

int ServiceStore::Get(const std::string& key, std::string* value) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->Get(key, value);
}

int ServiceStore::PutFrom(const std::string& key, uint64_t ptr, uint64_t size,
                          const PutConfig& config) {
  return BatchPutFrom({key}, {ptr}, {size}, config)[0];
}

std::vector<int> ServiceStore::BatchPutFrom(const std::vector<std::string>& keys,
                                            const std::vector<uint64_t>& ptrs,
                                            const std::vector<uint64_t>& sizes,
                                            const PutConfig& config) {
  const std::vector<int> invalid(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  SHELFMARK_SERVICE_OR(client, invalid);
  std::vector<Item> items = Items(keys, ptrs, sizes);
  if (items.size() != keys.size()) return invalid;
  return client->BatchPutFrom(items, config);
}

int64_t ServiceStore::GetInto(const std::string& key, uint64_t ptr, uint64_t size) {
  return BatchGetInto({key}, {ptr}, {size})[0];
}

std::vector<int64_t> ServiceStore::BatchGetInto(const std::vector<std::string>& keys,
                                                const std::vector<uint64_t>& ptrs,
                                                const std::vector<uint64_t>& sizes) {
  const std::vector<int64_t> invalid(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  SHELFMARK_SERVICE_OR(client, invalid);
  std::vector<Item> items = Items(keys, ptrs, sizes);
  if (items.size() != keys.size()) return invalid;
  return client->BatchGetInto(items);
}

std::vector<int> ServiceStore::BatchPutFromMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<uint64_t>>& ptrs,
    const std::vector<std::vector<uint64_t>>& sizes, const PutConfig& config) {
  const std::vector<int> invalid(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  SHELFMARK_SERVICE_OR(client, invalid);
  std::vector<storeservice::PartsItem> items = PartsItems(keys, ptrs, sizes);
  if (items.size() != keys.size()) return invalid;
  return client->BatchPutParts(items, config);
}

std::vector<int64_t> ServiceStore::BatchGetIntoMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<uint64_t>>& ptrs,
    const std::vector<std::vector<uint64_t>>& sizes) {
  const std::vector<int64_t> invalid(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  SHELFMARK_SERVICE_OR(client, invalid);
  std::vector<storeservice::PartsItem> items = PartsItems(keys, ptrs, sizes);
  if (items.size() != keys.size()) return invalid;
  return client->BatchGetIntoParts(items);
}

int ServiceStore::RegisterBuffer(uint64_t ptr, uint64_t size) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  if (ptr == 0 || size == 0) return Code(ErrorCode::INVALID_PARAMS);
  std::optional<storeservice::ShmRegion> region = storeservice::FindShm(ptr, size);
  if (!region) return Code(ErrorCode::INVALID_PARAMS);  // not memory the service can map
  MutexLock lock(&mu_);
  if (buffers_.count(ptr) != 0) return Code(ErrorCode::INVALID_PARAMS);
  if (allocations_[region->base]++ == 0) {
    const int rc = client->RegisterShm(region->base, region->size, region->fd.get());
    if (rc != 0) {
      allocations_.erase(region->base);
      return rc;
    }
  }
  buffers_[ptr] = {size, region->base};
  return 0;
}

int ServiceStore::UnregisterBuffer(uint64_t ptr) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  MutexLock lock(&mu_);
  auto it = buffers_.find(ptr);
  if (it == buffers_.end()) return Code(ErrorCode::INVALID_PARAMS);
  const uint64_t allocation = it->second.second;
  buffers_.erase(it);
  if (--allocations_[allocation] > 0) return 0;
  allocations_.erase(allocation);
  return client->UnregisterShm(allocation);
}

uint64_t ServiceStore::Room(uint64_t ptr) const {
  MutexLock lock(&mu_);
  auto it = buffers_.upper_bound(ptr);
  if (it == buffers_.begin()) return 0;
  --it;
  const uint64_t offset = ptr - it->first;
  return offset <= it->second.first ? it->second.first - offset : 0;
}

bool ServiceStore::IsRegistered(uint64_t ptr, uint64_t size) const {
  const uint64_t room = Room(ptr);
  return room > 0 && size <= room;
}

int ServiceStore::IsExist(const std::string& key) { return BatchIsExist({key})[0]; }

std::vector<int> ServiceStore::BatchIsExist(const std::vector<std::string>& keys) {
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->BatchIsExist(keys);
}

int64_t ServiceStore::GetSize(const std::string& key) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->GetSize(key);
}

int ServiceStore::Remove(const std::string& key, bool force) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->Remove(key, force);
}

std::vector<int> ServiceStore::BatchRemove(const std::vector<std::string>& keys, bool force) {
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->BatchRemove(keys, force);
}

int ServiceStore::PutParts(const std::string& key, const std::vector<const char*>& datas,
                           const std::vector<uint64_t>& sizes, const PutConfig& config) {
  if (datas.size() != sizes.size()) return Code(ErrorCode::INVALID_PARAMS);
  std::string value;
  for (size_t i = 0; i < datas.size(); ++i) value.append(datas[i], sizes[i]);
  return Put(key, value.data(), value.size(), config);
}

std::vector<int> ServiceStore::PutBatch(const std::vector<std::string>& keys,
                                        const std::vector<const char*>& datas,
                                        const std::vector<uint64_t>& sizes,
                                        const PutConfig& config) {
  const std::vector<int> invalid(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  SHELFMARK_SERVICE_OR(client, invalid);
  if (datas.size() != keys.size() || sizes.size() != keys.size()) return invalid;
  std::vector<std::string_view> values;
  for (size_t i = 0; i < keys.size(); ++i) values.emplace_back(datas[i], sizes[i]);
  return client->PutBatch(keys, values, config);
}

std::vector<int> ServiceStore::GetBatch(const std::vector<std::string>& keys,
                                        std::vector<std::string>* values) {
  values->assign(keys.size(), std::string());
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->GetBatch(keys, values);
}

std::vector<std::vector<std::vector<int64_t>>> ServiceStore::GetIntoRanges(
    const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
    const std::vector<std::vector<std::vector<uint64_t>>>& dst_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& src_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& lengths) {
  auto client = Acquire();
  return storeservice::ShapeRanges(
      client != nullptr, ptrs, keys, dst_offsets, src_offsets, lengths,
      [&](uint64_t ptr) { return Room(ptr); },
      [&](const std::string& key, const std::vector<storeservice::Fragment>& fragments) {
        return client->GetIntoRanges(key, fragments);
      });
}

int ServiceStore::GetReplicas(const std::string& key, std::vector<ReplicaInfo>* replicas) {
  replicas->clear();
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  std::vector<ReplicaDescriptor> found;
  const int rc = client->GetReplicas(key, &found);
  for (const ReplicaDescriptor& r : found) replicas->push_back(ReplicaInfoOf(r));
  return rc;
}

int64_t ServiceStore::RemoveAll(bool force) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->RemoveAll(force);
}

int64_t ServiceStore::RemoveByRegex(const std::string& pattern, bool force) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->RemoveByRegex(pattern, force);
}

int ServiceStore::CreateTask(const TaskSpec& spec, std::string* id) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->CreateTask(spec, id);
}

int ServiceStore::RunTask(const std::string& id) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->RunTask(id);
}

int ServiceStore::QueryTask(const std::string& id, TaskInfo* out) {
  SHELFMARK_SERVICE_OR(client, Code(ErrorCode::INVALID_PARAMS));
  return client->QueryTask(id, out);
}

std::vector<int> ServiceStore::PutStart(const std::vector<std::string>& keys,
                                        const std::vector<uint64_t>& sizes,
                                        const PutConfig& config) {
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->PutStart(keys, sizes, config);
}

std::vector<int64_t> ServiceStore::SessionRanges(
    int op, const std::vector<std::string>& keys, const std::vector<std::vector<uint64_t>>& ptrs,
    const std::vector<std::vector<uint64_t>>& sizes,
    const std::vector<std::vector<uint64_t>>& offsets) {
  std::vector<int64_t> out(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  SHELFMARK_SERVICE_OR(client, out);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size() || offsets.size() != keys.size()) {
    return out;
  }
  std::vector<storeservice::RangedItem> items;
  std::vector<size_t> which;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ptrs[i].size() != sizes[i].size() || offsets[i].size() != sizes[i].size()) continue;
    storeservice::RangedItem item{keys[i], {}};
    for (size_t j = 0; j < ptrs[i].size(); ++j) {
      item.pieces.push_back({ptrs[i][j], sizes[i][j], offsets[i][j]});
    }
    items.push_back(std::move(item));
    which.push_back(i);
  }
  if (items.empty()) return out;
  const std::vector<int64_t> got = client->SessionRanges(static_cast<storeservice::Op>(op), items);
  for (size_t k = 0; k < which.size(); ++k) out[which[k]] = got[k];
  return out;
}

std::vector<int64_t> ServiceStore::PutRanges(const std::vector<std::string>& keys,
                                             const std::vector<std::vector<uint64_t>>& ptrs,
                                             const std::vector<std::vector<uint64_t>>& sizes,
                                             const std::vector<std::vector<uint64_t>>& offsets) {
  return SessionRanges(static_cast<int>(storeservice::Op::kPutRanges), keys, ptrs, sizes, offsets);
}

std::vector<int64_t> ServiceStore::GetRanges(const std::vector<std::string>& keys,
                                             const std::vector<std::vector<uint64_t>>& ptrs,
                                             const std::vector<std::vector<uint64_t>>& sizes,
                                             const std::vector<std::vector<uint64_t>>& offsets) {
  return SessionRanges(static_cast<int>(storeservice::Op::kGetRanges), keys, ptrs, sizes, offsets);
}

std::vector<int> ServiceStore::PutEnd(const std::vector<std::string>& keys) {
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->SessionKeys(storeservice::Op::kPutEnd, keys);
}

std::vector<int> ServiceStore::PutRevoke(const std::vector<std::string>& keys) {
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->SessionKeys(storeservice::Op::kPutRevoke, keys);
}

std::vector<int> ServiceStore::GetStart(const std::vector<std::string>& keys) {
  SHELFMARK_SERVICE_OR(client, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return client->SessionKeys(storeservice::Op::kGetStart, keys);
}

int ServiceStore::GetEnd(const std::vector<std::string>& keys) {
  SHELFMARK_SERVICE_OR(client, 0);  // nothing to forget
  return client->GetEnd(keys);
}

#undef SHELFMARK_SERVICE_OR

}  // namespace shelfmark::python
