#include "python/native/store.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "client/client.h"
#include "rpc/master_client.h"

namespace shelfmark::python {
namespace {

constexpr int kOk = 0;
int Code(ErrorCode code) { return static_cast<int>(code); }

// The key probed by HealthCheck (and by Setup): any answer of the master,
// found or not, proves it is up.
constexpr std::string_view kHealthKey = "__shelfmark_health_check__";

// The smallest staging buffer the Client accepts is 64 bytes; with
// local_buffer_bytes = 0 the staging calls are refused above the Client,
// which still needs one for its own use.
constexpr uint64_t kMinStagingBytes = 64 << 10;

PutOptions MakePutOptions(const PutConfig& config) {
  PutOptions options;
  options.config = config;
  return options;
}

}  // namespace

struct Store::Impl {
  StoreOptions options;
  std::unique_ptr<Client> client;

  Mutex buffers_mu;
  std::map<uint64_t, uint64_t> buffers GUARDED_BY(buffers_mu);  // start -> size

  bool staging() const { return options.local_buffer_bytes > 0; }
  const std::string& tenant() const { return options.tenant; }

  // [ptr, ptr + size) lies inside one registered buffer.
  bool Registered(uint64_t ptr, uint64_t size) {
    MutexLock lock(&buffers_mu);
    auto it = buffers.upper_bound(ptr);
    if (it == buffers.begin()) return false;
    --it;
    const uint64_t end = it->first + it->second;
    return ptr >= it->first && ptr <= end && size <= end - ptr;
  }

  // The bytes of registered memory, or nullopt.
  std::optional<std::string_view> View(uint64_t ptr, uint64_t size) {
    if (size == 0 || !Registered(ptr, size)) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(ptr), size);
  }

  // Today: Locate + Read into the registered destination.
  // Becomes Client::GetInto once it lands.
  int64_t GetInto(const std::string& key, uint64_t ptr, uint64_t size) {
    if (!Registered(ptr, size)) return Code(ErrorCode::INVALID_PARAMS);
    auto location = client->Locate(tenant(), key);
    if (!location.ok()) return Code(location.error());
    const uint64_t object_size = location->info.size;
    if (object_size > size) return Code(ErrorCode::BUFFER_OVERFLOW);
    const ErrorCode rc = client->Read(*location, reinterpret_cast<void*>(ptr), size);
    if (rc != ErrorCode::OK) return Code(rc);
    return static_cast<int64_t>(object_size);
  }
};

Store::Store(RdmaPlugin rdma) : rdma_(std::move(rdma)) {}

Store::~Store() { Close(); }

std::shared_ptr<Store::Impl> Store::Acquire() const {
  MutexLock lock(&mu_);
  return impl_;
}

int Store::Setup(const StoreOptions& options) {
  Close();
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  ClientOptions client_options;
  client_options.master = options.master;
  client_options.protocol = options.protocol;
  client_options.transport.device = options.device;
  client_options.transport.cluster_token = options.cluster_token;
  client_options.master_token = options.master_token;
  client_options.staging_bytes = std::max(options.local_buffer_bytes, kMinStagingBytes);
  client_options.rpc_timeout_ms = options.rpc_timeout_ms;
  client_options.transfer_timeout_ms = options.transfer_timeout_ms;
  client_options.rdma_factory = rdma_.factory;
  client_options.rdma_device_present = rdma_.device_present;
  client_options.engine_counters = rdma_.counters;
  if (options.protocol == "rdma" && !rdma_.factory) return Code(ErrorCode::INVALID_PARAMS);
  auto client = Client::Create(std::move(client_options));
  if (!client.ok()) return Code(client.error());
  impl->client = std::move(client).value();
  if (options.check_master) {
    auto probe = impl->client->Exist(impl->tenant(), kHealthKey);
    if (!probe.ok()) return Code(probe.error());
  }
  MutexLock lock(&mu_);
  impl_ = std::move(impl);
  return kOk;
}

int Store::Close() {
  std::shared_ptr<Impl> impl;
  {
    MutexLock lock(&mu_);
    impl = std::move(impl_);
    impl_.reset();
  }
  return kOk;  // the client goes with the last call holding it
}

bool Store::is_open() const { return Acquire() != nullptr; }

std::string Store::hostname() const {
  auto impl = Acquire();
  return impl ? impl->options.local_hostname : std::string();
}

uint64_t Store::global_segment_bytes() const {
  auto impl = Acquire();
  return impl ? impl->options.global_segment_bytes : 0;
}

#define SHELFMARK_STORE_OR(impl, value)    \
  auto impl = Acquire();                   \
  if (impl == nullptr) return value

int Store::HealthCheck() {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto probe = impl->client->Exist(impl->tenant(), kHealthKey);
  return probe.ok() ? kOk : Code(probe.error());
}

// --- writes ----------------------------------------------------------------

int Store::Put(const std::string& key, const char* data, uint64_t size, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (!impl->staging()) return Code(ErrorCode::NO_AVAILABLE_HANDLE);
  return Code(impl->client->Put(impl->tenant(), key, std::string_view(data, size),
                                MakePutOptions(config)));
}

// Today: the parts joined, then Put. Becomes Client::PutParts.
int Store::PutParts(const std::string& key, const std::vector<const char*>& datas,
                    const std::vector<uint64_t>& sizes, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (!impl->staging()) return Code(ErrorCode::NO_AVAILABLE_HANDLE);
  if (datas.size() != sizes.size()) return Code(ErrorCode::INVALID_PARAMS);
  std::string value;
  for (size_t i = 0; i < datas.size(); ++i) value.append(datas[i], sizes[i]);
  return Code(impl->client->Put(impl->tenant(), key, value, MakePutOptions(config)));
}

std::vector<int> Store::PutBatch(const std::vector<std::string>& keys,
                                 const std::vector<const char*>& datas,
                                 const std::vector<uint64_t>& sizes, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (!impl->staging()) return std::vector<int>(keys.size(), Code(ErrorCode::NO_AVAILABLE_HANDLE));
  if (datas.size() != keys.size() || sizes.size() != keys.size()) {
    return std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  std::vector<std::string_view> values;
  values.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) values.emplace_back(datas[i], sizes[i]);
  std::vector<int> out;
  for (ErrorCode rc : impl->client->BatchPut(impl->tenant(), keys, values, MakePutOptions(config))) {
    out.push_back(Code(rc));
  }
  return out;
}

// Today: Put of the registered bytes (copied through staging).
// Becomes Client::PutFrom(buffer).
int Store::PutFrom(const std::string& key, uint64_t ptr, uint64_t size, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto value = impl->View(ptr, size);
  if (!value) return Code(ErrorCode::INVALID_PARAMS);
  return Code(impl->client->Put(impl->tenant(), key, *value, MakePutOptions(config)));
}

// Today: BatchPut of the registered bytes. Becomes Client::BatchPutFrom.
std::vector<int> Store::BatchPutFrom(const std::vector<std::string>& keys,
                                     const std::vector<uint64_t>& ptrs,
                                     const std::vector<uint64_t>& sizes,
                                     const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<int> out(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  std::vector<std::string> batch_keys;
  std::vector<std::string_view> values;
  std::vector<size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto value = impl->View(ptrs[i], sizes[i]);
    if (!value) continue;
    batch_keys.push_back(keys[i]);
    values.push_back(*value);
    index.push_back(i);
  }
  if (batch_keys.empty()) return out;
  auto answers = impl->client->BatchPut(impl->tenant(), batch_keys, values, MakePutOptions(config));
  for (size_t i = 0; i < index.size(); ++i) out[index[i]] = Code(answers[i]);
  return out;
}

// Today: each key's parts joined, then BatchPut. Becomes Client::BatchPutParts.
std::vector<int> Store::BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<uint64_t>>& ptrs,
                                                 const std::vector<std::vector<uint64_t>>& sizes,
                                                 const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<int> out(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  std::vector<std::string> batch_keys;
  std::vector<std::string> joined;
  std::vector<size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ptrs[i].size() != sizes[i].size() || ptrs[i].empty()) continue;
    std::string value;
    bool ok = true;
    for (size_t j = 0; j < ptrs[i].size() && ok; ++j) {
      auto part = impl->View(ptrs[i][j], sizes[i][j]);
      if (part) value.append(*part);
      ok = part.has_value();
    }
    if (!ok) continue;
    batch_keys.push_back(keys[i]);
    joined.push_back(std::move(value));
    index.push_back(i);
  }
  if (batch_keys.empty()) return out;
  std::vector<std::string_view> values(joined.begin(), joined.end());
  auto answers = impl->client->BatchPut(impl->tenant(), batch_keys, values, MakePutOptions(config));
  for (size_t i = 0; i < index.size(); ++i) out[index[i]] = Code(answers[i]);
  return out;
}

// --- reads -----------------------------------------------------------------

int Store::Get(const std::string& key, std::string* value) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (!impl->staging()) return Code(ErrorCode::NO_AVAILABLE_HANDLE);
  auto bytes = impl->client->Get(impl->tenant(), key);
  if (!bytes.ok()) return Code(bytes.error());
  *value = std::move(bytes).value();
  return kOk;
}

std::vector<int> Store::GetBatch(const std::vector<std::string>& keys,
                                 std::vector<std::string>* values) {
  values->assign(keys.size(), std::string());
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (!impl->staging()) return std::vector<int>(keys.size(), Code(ErrorCode::NO_AVAILABLE_HANDLE));
  std::vector<int> out;
  auto answers = impl->client->BatchGet(impl->tenant(), keys);
  for (size_t i = 0; i < answers.size(); ++i) {
    out.push_back(Code(answers[i].error()));
    if (answers[i].ok()) (*values)[i] = std::move(answers[i]).value();
  }
  return out;
}

int64_t Store::GetInto(const std::string& key, uint64_t ptr, uint64_t size) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  return impl->GetInto(key, ptr, size);
}

// Today: GetInto per key. Becomes Client::BatchGetInto.
std::vector<int64_t> Store::BatchGetInto(const std::vector<std::string>& keys,
                                         const std::vector<uint64_t>& ptrs,
                                         const std::vector<uint64_t>& sizes) {
  SHELFMARK_STORE_OR(impl, std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) {
    return std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  std::vector<int64_t> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) out.push_back(impl->GetInto(keys[i], ptrs[i], sizes[i]));
  return out;
}

// Today: Get, then the bytes copied over the key's buffers in order.
// Becomes Client::BatchGetIntoParts.
std::vector<int64_t> Store::BatchGetIntoMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<uint64_t>>& ptrs,
    const std::vector<std::vector<uint64_t>>& sizes) {
  SHELFMARK_STORE_OR(impl, std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<int64_t> out(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) return out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ptrs[i].size() != sizes[i].size()) continue;
    uint64_t capacity = 0;
    bool ok = true;
    for (size_t j = 0; j < ptrs[i].size() && ok; ++j) {
      ok = impl->Registered(ptrs[i][j], sizes[i][j]);
      capacity += sizes[i][j];
    }
    if (!ok) continue;
    auto value = impl->client->Get(impl->tenant(), keys[i]);
    if (!value.ok()) {
      out[i] = Code(value.error());
      continue;
    }
    if (value->size() > capacity) {
      out[i] = Code(ErrorCode::BUFFER_OVERFLOW);
      continue;
    }
    uint64_t done = 0;
    for (size_t j = 0; j < ptrs[i].size() && done < value->size(); ++j) {
      const uint64_t n = std::min<uint64_t>(sizes[i][j], value->size() - done);
      std::memcpy(reinterpret_cast<void*>(ptrs[i][j]), value->data() + done, n);
      done += n;
    }
    out[i] = static_cast<int64_t>(value->size());
  }
  return out;
}

// Today: each key read whole once per call (Get), then the ranges copied.
// Becomes Client::GetIntoRanges(ranges of {offset, length, dst}).
std::vector<std::vector<std::vector<int64_t>>> Store::GetIntoRanges(
    const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
    const std::vector<std::vector<std::vector<uint64_t>>>& dst_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& src_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& lengths) {
  const int64_t invalid = Code(ErrorCode::INVALID_PARAMS);
  // The answers' shape: that of `lengths` where it matches, else one code per key.
  std::vector<std::vector<std::vector<int64_t>>> out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i].resize(keys[i].size());
    for (size_t j = 0; j < keys[i].size(); ++j) {
      const size_t n = i < lengths.size() && j < lengths[i].size() ? lengths[i][j].size() : 1;
      out[i][j].assign(std::max<size_t>(n, 1), invalid);
    }
  }
  auto impl = Acquire();
  if (impl == nullptr) return out;
  const bool shape_ok = ptrs.size() == keys.size() && dst_offsets.size() == keys.size() &&
                        src_offsets.size() == keys.size() && lengths.size() == keys.size();
  if (!shape_ok) return out;
  std::map<std::string, Result<std::string>> objects;  // read once per call
  for (size_t i = 0; i < keys.size(); ++i) {
    if (dst_offsets[i].size() != keys[i].size() || src_offsets[i].size() != keys[i].size() ||
        lengths[i].size() != keys[i].size()) {
      continue;
    }
    for (size_t j = 0; j < keys[i].size(); ++j) {
      const auto& dst = dst_offsets[i][j];
      const auto& src = src_offsets[i][j];
      const auto& len = lengths[i][j];
      if (dst.size() != len.size() || src.size() != len.size() || len.empty()) continue;
      auto it = objects.find(keys[i][j]);
      if (it == objects.end()) {
        it = objects.emplace(keys[i][j], impl->client->Get(impl->tenant(), keys[i][j])).first;
      }
      const Result<std::string>& object = it->second;
      for (size_t k = 0; k < len.size(); ++k) {
        if (!object.ok()) {
          out[i][j][k] = Code(object.error());
        } else if (src[k] > object->size() || len[k] > object->size() - src[k]) {
          out[i][j][k] = Code(ErrorCode::BUFFER_OVERFLOW);  // past the object's end
        } else if (ptrs[i] > UINT64_MAX - dst[k] || !impl->Registered(ptrs[i] + dst[k], len[k])) {
          out[i][j][k] = invalid;
        } else {
          std::memcpy(reinterpret_cast<void*>(ptrs[i] + dst[k]), object->data() + src[k], len[k]);
          out[i][j][k] = static_cast<int64_t>(len[k]);
        }
      }
    }
  }
  return out;
}

// --- registered memory -----------------------------------------------------

int Store::RegisterBuffer(uint64_t ptr, uint64_t size) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (ptr == 0 || size == 0 || ptr > UINT64_MAX - size) return Code(ErrorCode::INVALID_PARAMS);
  {
    // Overlapping registrations would make UnregisterBuffer ambiguous.
    MutexLock lock(&impl->buffers_mu);
    auto next = impl->buffers.lower_bound(ptr);
    if (next != impl->buffers.end() && next->first < ptr + size) {
      return Code(ErrorCode::INVALID_PARAMS);
    }
    if (next != impl->buffers.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > ptr) return Code(ErrorCode::INVALID_PARAMS);
    }
    impl->buffers.emplace(ptr, size);
  }
  const ErrorCode rc = impl->client->RegisterBuffer(reinterpret_cast<void*>(ptr), size);
  if (rc != ErrorCode::OK) {
    MutexLock lock(&impl->buffers_mu);
    impl->buffers.erase(ptr);
  }
  return Code(rc);
}

int Store::UnregisterBuffer(uint64_t ptr) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  {
    MutexLock lock(&impl->buffers_mu);
    if (impl->buffers.erase(ptr) == 0) return Code(ErrorCode::INVALID_PARAMS);
  }
  impl->client->UnregisterBuffer(reinterpret_cast<void*>(ptr));
  return kOk;
}

bool Store::IsRegistered(uint64_t ptr, uint64_t size) const {
  auto impl = Acquire();
  return impl != nullptr && impl->Registered(ptr, size);
}

// --- metadata --------------------------------------------------------------

int Store::IsExist(const std::string& key) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto exists = impl->client->Exist(impl->tenant(), key);
  if (!exists.ok()) return Code(exists.error());
  return *exists ? 1 : 0;
}

std::vector<int> Store::BatchIsExist(const std::vector<std::string>& keys) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<int> out;
  for (const Result<bool>& exists : impl->client->BatchExist(impl->tenant(), keys)) {
    out.push_back(exists.ok() ? (*exists ? 1 : 0) : Code(exists.error()));
  }
  return out;
}

// Today: from Locate (which also takes a read lease). Becomes Client::GetSize.
int64_t Store::GetSize(const std::string& key) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto location = impl->client->Locate(impl->tenant(), key);
  if (!location.ok()) return Code(location.error());
  return static_cast<int64_t>(location->info.size);
}

int Store::GetReplicas(const std::string& key, std::vector<ReplicaInfo>* replicas) {
  replicas->clear();
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto location = impl->client->Locate(impl->tenant(), key);
  if (!location.ok()) return Code(location.error());
  for (const ReplicaDescriptor& r : location->info.replicas) {
    ReplicaInfo info;
    info.status = ReplicaStatusName(r.status);
    info.memory = r.type == ReplicaType::MEMORY;
    if (info.memory) {
      info.endpoint = r.memory.endpoint;
      info.protocol = r.memory.protocol;
      info.buffer_address = r.memory.buffer_address;
      info.size = r.memory.size;
      info.segment_id = r.memory.segment_id.ToString();
    } else {
      info.endpoint = r.disk.endpoint;
      info.size = r.disk.object_size;
    }
    replicas->push_back(std::move(info));
  }
  return kOk;
}

int Store::Remove(const std::string& key, bool force) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  return Code(impl->client->Remove(impl->tenant(), key, force));
}

// Today: Remove per key. Becomes Client::BatchRemove.
std::vector<int> Store::BatchRemove(const std::vector<std::string>& keys, bool force) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<int> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) {
    out.push_back(Code(impl->client->Remove(impl->tenant(), key, force)));
  }
  return out;
}

// Today: the master's RemoveAll through a MasterClient of this call's own
// (the Client has no such call yet). Becomes Client::RemoveAll.
int64_t Store::RemoveAll(bool force) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  MasterClientOptions options;
  options.address = impl->options.master;
  options.call_timeout_ms = impl->options.rpc_timeout_ms;
  options.token = impl->options.master_token.empty() ? impl->options.cluster_token
                                                     : impl->options.master_token;
  MasterClient master(std::move(options));
  auto removed = master.RemoveAll(impl->tenant(), /*all_tenants=*/false, force);
  if (!removed.ok()) return Code(removed.error());
  return static_cast<int64_t>(*removed);
}

#undef SHELFMARK_STORE_OR

}  // namespace shelfmark::python
