#include "storeservice/service_session.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <iterator>

#include "common/wire_bytes.h"

namespace shelfmark::storeservice {
namespace {

int32_t Code(ErrorCode code) { return static_cast<int32_t>(code); }

std::string Answer32(int32_t value) { return wire::Writer().Put(value).Take(); }
std::string Answer64(int64_t value) { return wire::Writer().Put(value).Take(); }

// Every put carries the object's checksum, as the embedded store's do
// (python/native/store.cc).
PutOptions WithChecksum(const PutConfig& config) {
  PutOptions options;
  options.config = config;
  options.compute_checksum = true;
  return options;
}

// A descriptor the service may map `size` bytes of: a regular file (a
// memfd is one) at least that long, sealed against shrinking, so a mapped
// page never loses its backing under the service.
bool Mappable(int fd, uint64_t size) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (static_cast<uint64_t>(st.st_size) < size) return false;
  const int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_SHRINK) != 0;
}

}  // namespace

ServiceSession::~ServiceSession() {
  for (const auto& [base, m] : mappings_) Unmap(m);
}

void ServiceSession::Unmap(const Mapping& m) {
  client_->UnregisterBuffer(m.local);
  munmap(m.local, m.size);
  if (mapped_bytes_ != nullptr) mapped_bytes_->fetch_sub(m.size);
}

int32_t ServiceSession::Register(uint64_t base, uint64_t size, std::vector<UniqueFd>& fds) {
  if (fds.size() != 1 || size == 0 || base == 0 || base > UINT64_MAX - size ||
      !Mappable(fds[0].get(), size)) {
    return Code(ErrorCode::INVALID_PARAMS);
  }
  // Overlapping client ranges would make a translation ambiguous.
  auto next = mappings_.lower_bound(base);
  if (next != mappings_.end() && next->first < base + size) return Code(ErrorCode::INVALID_PARAMS);
  if (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second.size > base) {
    return Code(ErrorCode::INVALID_PARAMS);
  }
  void* local = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0].get(), 0);
  if (local == MAP_FAILED) return Code(ErrorCode::INVALID_PARAMS);
  if (ErrorCode rc = client_->RegisterBuffer(local, size); rc != ErrorCode::OK) {
    munmap(local, size);
    return Code(rc);
  }
  mappings_[base] = Mapping{static_cast<char*>(local), size};
  if (mapped_bytes_ != nullptr) mapped_bytes_->fetch_add(size);
  return Code(ErrorCode::OK);
}

int32_t ServiceSession::Unregister(uint64_t base) {
  auto it = mappings_.find(base);
  if (it == mappings_.end()) return Code(ErrorCode::INVALID_PARAMS);
  Unmap(it->second);
  mappings_.erase(it);
  return Code(ErrorCode::OK);
}

char* ServiceSession::Translate(uint64_t ptr, uint64_t size) const {
  auto it = mappings_.upper_bound(ptr);
  if (it == mappings_.begin()) return nullptr;
  --it;
  const uint64_t offset = ptr - it->first;
  if (offset > it->second.size || size > it->second.size - offset) return nullptr;
  return it->second.local + offset;
}

std::string ServiceSession::BatchPutFrom(const PutConfig& config, const std::vector<Item>& items) {
  std::vector<int32_t> codes(items.size(), Code(ErrorCode::INVALID_PARAMS));
  std::vector<size_t> which;
  std::vector<std::string> keys;
  std::vector<ConstBuffer> buffers;
  for (size_t i = 0; i < items.size(); ++i) {
    const char* local = items[i].size == 0 ? nullptr : Translate(items[i].ptr, items[i].size);
    if (local == nullptr) continue;
    which.push_back(i);
    keys.push_back(items[i].key);
    buffers.push_back(ConstBuffer{local, items[i].size});
  }
  if (!keys.empty()) {
    const std::vector<ErrorCode> rcs =
        client_->BatchPutFrom(tenant_, keys, buffers, WithChecksum(config));
    for (size_t j = 0; j < which.size(); ++j) codes[which[j]] = Code(rcs[j]);
  }
  return EncodeValues(codes);
}

std::string ServiceSession::BatchGetInto(const std::vector<Item>& items) {
  std::vector<int64_t> sizes(items.size(), Code(ErrorCode::INVALID_PARAMS));
  std::vector<size_t> which;
  std::vector<std::string> keys;
  std::vector<MutableBuffer> dsts;
  for (size_t i = 0; i < items.size(); ++i) {
    char* local = items[i].size == 0 ? nullptr : Translate(items[i].ptr, items[i].size);
    if (local == nullptr) continue;
    which.push_back(i);
    keys.push_back(items[i].key);
    dsts.push_back(MutableBuffer{local, items[i].size});
  }
  if (!keys.empty()) {
    const std::vector<Result<uint64_t>> got = client_->BatchGetInto(tenant_, keys, dsts);
    for (size_t j = 0; j < which.size(); ++j) {
      sizes[which[j]] = got[j].ok() ? static_cast<int64_t>(*got[j]) : Code(got[j].error());
    }
  }
  return EncodeValues(sizes);
}

std::string ServiceSession::Handle(std::string_view request, std::vector<UniqueFd> fds) {
  const std::string invalid = Answer32(Code(ErrorCode::INVALID_PARAMS));
  wire::Reader r(request.data(), request.size());
  const auto op = static_cast<Op>(r.Get<uint8_t>());
  // Only a Register brings a descriptor.
  if (op != Op::kRegister && !fds.empty()) return invalid;
  switch (op) {
    case Op::kRegister: {
      const uint64_t base = r.Get<uint64_t>(), size = r.Get<uint64_t>();
      return r.done() ? Answer32(Register(base, size, fds)) : invalid;
    }
    case Op::kUnregister: {
      const uint64_t base = r.Get<uint64_t>();
      return r.done() ? Answer32(Unregister(base)) : invalid;
    }
    case Op::kPut: {
      PutConfig config;
      const std::string key = r.Bytes();
      if (!GetPutConfig(r, &config)) return invalid;
      const std::string_view value = r.BytesView();
      if (!r.done() || value.empty()) return invalid;
      return Answer32(Code(client_->Put(tenant_, key, value, WithChecksum(config))));
    }
    case Op::kGet: {
      const std::string key = r.Bytes();
      if (!r.done()) return wire::Writer().Put(Code(ErrorCode::INVALID_PARAMS)).Bytes("").Take();
      auto value = client_->Get(tenant_, key);
      return wire::Writer()
          .Put(Code(value.ok() ? ErrorCode::OK : value.error()))
          .Bytes(value.ok() ? std::string_view(*value) : std::string_view())
          .Take();
    }
    case Op::kBatchPutFrom: {
      PutConfig config;
      std::vector<Item> items;
      if (!GetPutConfig(r, &config) || !GetItems(r, &items) || !r.done()) return invalid;
      return BatchPutFrom(config, items);
    }
    case Op::kBatchGetInto: {
      std::vector<Item> items;
      if (!GetItems(r, &items) || !r.done()) return invalid;
      return BatchGetInto(items);
    }
    case Op::kBatchExist: {
      const uint32_t n = r.Get<uint32_t>();
      if (n > kMaxBatchItems || n > r.left() / 4) return invalid;
      std::vector<std::string> keys(n);
      for (std::string& key : keys) key = r.Bytes();
      if (!r.done()) return invalid;
      std::vector<int32_t> answers;
      for (const Result<bool>& e : client_->BatchExist(tenant_, keys)) {
        answers.push_back(e.ok() ? (*e ? 1 : 0) : Code(e.error()));
      }
      return EncodeValues(answers);
    }
    case Op::kRemove: {
      const std::string key = r.Bytes();
      const bool force = r.Get<uint8_t>() != 0;
      return r.done() ? Answer32(Code(client_->Remove(tenant_, key, force))) : invalid;
    }
    case Op::kGetSize: {
      const std::string key = r.Bytes();
      if (!r.done()) return Answer64(Code(ErrorCode::INVALID_PARAMS));
      auto size = client_->GetSize(tenant_, key);
      return Answer64(size.ok() ? static_cast<int64_t>(*size) : Code(size.error()));
    }
    case Op::kHealth: {
      if (!r.done()) return invalid;
      auto probe = client_->Exist(tenant_, "__shelfmark_health_check__");
      return Answer32(Code(probe.ok() ? ErrorCode::OK : probe.error()));
    }
  }
  return invalid;
}

}  // namespace shelfmark::storeservice
