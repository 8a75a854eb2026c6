#include "storeservice/service_session.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <iterator>
#include <optional>

#include "common/wire_bytes.h"
#include "rpc/lookup_wire.h"
#include "storeservice/ranged_read.h"
#include "storeservice/task_wire.h"

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
  mappings_[base] =
      Mapping{static_cast<char*>(local), size, std::make_unique<PagePopulator>(local, size)};
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
  if (size == 0) return nullptr;
  auto it = mappings_.upper_bound(ptr);
  if (it == mappings_.begin()) return nullptr;
  --it;
  const uint64_t offset = ptr - it->first;
  if (offset > it->second.size || size > it->second.size - offset) return nullptr;
  it->second.populator->Touch(offset, size);
  return it->second.local + offset;
}

namespace {

// Answers of a batch whose items are served only when their memory
// translates: `translate(i)` adds item i to the call's inputs (true) or
// refuses it (false: INVALID_PARAMS, untouched); `call()` answers the
// items added, in order.
template <typename T, typename Translate, typename Call>
std::string Translated(size_t n, Translate translate, Call call) {
  std::vector<T> answers(n, Code(ErrorCode::INVALID_PARAMS));
  std::vector<size_t> which;
  for (size_t i = 0; i < n; ++i) {
    if (translate(i)) which.push_back(i);
  }
  if (!which.empty()) {
    const std::vector<T> got = call();
    for (size_t j = 0; j < which.size(); ++j) answers[which[j]] = got[j];
  }
  return EncodeValues(answers);
}

// A size or count, or its code, as i64.
int64_t SizeOrCode(const Result<uint64_t>& n) {
  return n.ok() ? static_cast<int64_t>(*n) : static_cast<int64_t>(n.error());
}

std::vector<int32_t> Codes(const std::vector<ErrorCode>& codes) {
  std::vector<int32_t> out;
  for (ErrorCode c : codes) out.push_back(Code(c));
  return out;
}

std::vector<int64_t> Sizes(const std::vector<Result<uint64_t>>& got) {
  std::vector<int64_t> out;
  for (const Result<uint64_t>& g : got) out.push_back(SizeOrCode(g));
  return out;
}

}  // namespace

std::string ServiceSession::BatchPutFrom(const PutConfig& config, std::vector<Item>& items) {
  std::vector<std::string> keys;
  std::vector<ConstBuffer> buffers;
  keys.reserve(items.size());
  buffers.reserve(items.size());
  auto translate = [&](size_t i) {
    const char* local = Translate(items[i].ptr, items[i].size);
    if (local == nullptr) return false;
    keys.push_back(std::move(items[i].key));
    buffers.push_back(ConstBuffer{local, items[i].size});
    return true;
  };
  return Translated<int32_t>(items.size(), translate, [&] {
    return Codes(client_->BatchPutFrom(tenant_, keys, buffers, WithChecksum(config)));
  });
}

std::string ServiceSession::BatchGetInto(std::vector<Item>& items) {
  std::vector<std::string> keys;
  std::vector<MutableBuffer> dsts;
  keys.reserve(items.size());
  dsts.reserve(items.size());
  auto translate = [&](size_t i) {
    char* local = Translate(items[i].ptr, items[i].size);
    if (local == nullptr) return false;
    keys.push_back(std::move(items[i].key));
    dsts.push_back(MutableBuffer{local, items[i].size});
    return true;
  };
  return Translated<int64_t>(items.size(), translate,
                             [&] { return Sizes(client_->BatchGetInto(tenant_, keys, dsts)); });
}

template <typename Buffer>
bool ServiceSession::TranslatePieces(const PartsItem& item, std::vector<Buffer>* out) const {
  out->clear();
  for (const Piece& p : item.pieces) {
    char* local = Translate(p.ptr, p.size);
    if (local == nullptr) return false;
    out->push_back(Buffer{local, p.size});
  }
  return !out->empty();
}

std::string ServiceSession::BatchPutParts(const PutConfig& config, std::vector<PartsItem>& items) {
  std::vector<std::string> keys;
  std::vector<std::vector<ConstBuffer>> parts;
  auto translate = [&](size_t i) {
    std::vector<ConstBuffer> pieces;
    if (!TranslatePieces(items[i], &pieces)) return false;
    keys.push_back(std::move(items[i].key));
    parts.push_back(std::move(pieces));
    return true;
  };
  return Translated<int32_t>(items.size(), translate, [&] {
    return Codes(client_->BatchPutParts(tenant_, keys, parts, WithChecksum(config)));
  });
}

std::string ServiceSession::BatchGetIntoParts(std::vector<PartsItem>& items) {
  std::vector<std::string> keys;
  std::vector<std::vector<MutableBuffer>> parts;
  auto translate = [&](size_t i) {
    std::vector<MutableBuffer> pieces;
    if (!TranslatePieces(items[i], &pieces)) return false;
    keys.push_back(std::move(items[i].key));
    parts.push_back(std::move(pieces));
    return true;
  };
  return Translated<int64_t>(items.size(), translate,
                             [&] { return Sizes(client_->BatchGetIntoParts(tenant_, keys, parts)); });
}

std::string ServiceSession::PutBatch(wire::Reader& r) {
  PutConfig config;
  if (!GetPutConfig(r, &config)) return Answer32(Code(ErrorCode::INVALID_PARAMS));
  const uint32_t n = r.Get<uint32_t>();
  // An item takes at least 8 bytes (a key's length and a value's).
  if (n > kMaxBatchItems || n > r.left() / 8) return Answer32(Code(ErrorCode::INVALID_PARAMS));
  std::vector<std::string> keys(n);
  std::vector<std::string_view> values(n);
  for (uint32_t i = 0; i < n; ++i) {
    keys[i] = r.Bytes();
    values[i] = r.BytesView();
  }
  if (!r.done()) return Answer32(Code(ErrorCode::INVALID_PARAMS));
  return EncodeValues(Codes(client_->BatchPut(tenant_, keys, values, WithChecksum(config))));
}

namespace {

// Appends a read's (code, bytes) to an answer of at most kMaxFrameBytes:
// a value that would make it longer answers INVALID_PARAMS, no bytes (the
// client could not read the frame).
void AppendValue(std::string* answer, const Result<std::string>& v) {
  constexpr size_t kItemBytes = 8;  // the code and the length
  const bool fits = v.ok() && answer->size() + kItemBytes + v->size() <= kMaxFrameBytes;
  wire::Appender(answer)
      .Put(Code(!v.ok() ? v.error()
                : fits  ? ErrorCode::OK
                        : ErrorCode::INVALID_PARAMS))
      .Bytes(fits ? std::string_view(*v) : std::string_view());
}

}  // namespace

std::string ServiceSession::GetBatch(const std::vector<std::string>& keys) {
  std::string out = wire::Writer().Put(static_cast<uint32_t>(keys.size())).Take();
  for (const Result<std::string>& v : client_->BatchGet(tenant_, keys)) AppendValue(&out, v);
  return out;
}

std::string ServiceSession::GetIntoRanges(wire::Reader& r) {
  const std::string key = r.Bytes();
  const uint32_t n = r.Get<uint32_t>();
  if (n > kMaxBatchItems || n > r.left() / 24) return Answer32(Code(ErrorCode::INVALID_PARAMS));
  std::vector<ReadRange> ranges(n);
  std::vector<bool> readable(n);
  for (uint32_t k = 0; k < n; ++k) {
    ranges[k].offset = r.Get<uint64_t>();
    ranges[k].length = r.Get<uint64_t>();
    const uint64_t ptr = r.Get<uint64_t>();
    ranges[k].dst = Translate(ptr, ranges[k].length);
    readable[k] = ranges[k].dst != nullptr;
  }
  if (!r.done() || n == 0) return Answer32(Code(ErrorCode::INVALID_PARAMS));
  return EncodeValues(ReadFragments(*client_, tenant_, key, ranges, readable));
}

std::string ServiceSession::GetReplicas(const std::string& key) {
  std::string out;
  wire::Appender a(&out);
  auto location = client_->Locate(tenant_, key);
  a.Put(Code(location.ok() ? ErrorCode::OK : location.error()));
  if (!location.ok()) return out;
  a.Put(static_cast<uint32_t>(location->info.replicas.size()));
  for (const ReplicaDescriptor& d : location->info.replicas) {
    lookup_wire_internal::PutReplica(a, d);
  }
  return out;
}

std::string ServiceSession::CreateTask(wire::Reader& r) {
  TaskSpec spec;
  if (!GetTaskSpec(r, &spec) || !r.done()) {
    return wire::Writer().Put(Code(ErrorCode::INVALID_PARAMS)).Bytes("").Take();
  }
  auto id = client_->CreateTask(tenant_, spec);
  return wire::Writer()
      .Put(Code(id.ok() ? ErrorCode::OK : id.error()))
      .Bytes(id.ok() ? id->ToString() : std::string())
      .Take();
}

std::string ServiceSession::QueryTask(const std::string& id) {
  std::optional<UUID> uuid = UUID::Parse(id);
  if (!uuid) return Answer32(Code(ErrorCode::INVALID_PARAMS));
  auto info = client_->QueryTask(tenant_, *uuid);
  if (!info.ok()) return Answer32(Code(info.error()));
  std::string out;
  wire::Appender a(&out);
  a.Put(Code(ErrorCode::OK));
  PutTaskInfo(a, *info);
  return out;
}

std::string ServiceSession::SessionRanges(Op op, const std::vector<RangedItem>& items) {
  std::vector<std::string> keys;
  std::vector<std::vector<uint64_t>> ptrs(items.size()), sizes(items.size()), offsets(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    keys.push_back(items[i].key);
    for (const RangedPiece& p : items[i].pieces) {
      ptrs[i].push_back(reinterpret_cast<uint64_t>(Translate(p.ptr, p.size)));
      sizes[i].push_back(p.size);
      offsets[i].push_back(p.offset);
    }
  }
  return EncodeValues(op == Op::kPutRanges ? sessions_.PutRanges(keys, ptrs, sizes, offsets)
                                           : sessions_.GetRanges(keys, ptrs, sizes, offsets));
}

std::string ServiceSession::HandleSessions(Op op, wire::Reader& r) {
  const std::string invalid = Answer32(Code(ErrorCode::INVALID_PARAMS));
  if (op == Op::kPutRanges || op == Op::kGetRanges) {
    std::vector<RangedItem> items;
    if (!GetRangedItems(r, &items) || !r.done()) return invalid;
    return SessionRanges(op, items);
  }
  PutConfig config;
  if (op == Op::kPutStart && !GetPutConfig(r, &config)) return invalid;
  std::vector<std::string> keys;
  std::vector<uint64_t> sizes;
  const uint32_t n = op == Op::kPutStart ? r.Get<uint32_t>() : 0;
  if (op == Op::kPutStart) {
    // An item takes at least 12 bytes (a key's length and its size).
    if (n > kMaxBatchItems || n > r.left() / 12) return invalid;
    for (uint32_t i = 0; i < n; ++i) {
      keys.push_back(r.Bytes());
      sizes.push_back(r.Get<uint64_t>());
    }
  } else if (!GetKeys(r, &keys)) {
    return invalid;
  }
  if (!r.done()) return invalid;
  switch (op) {
    case Op::kPutStart:
      return EncodeValues(sessions_.PutStart(keys, sizes, config));
    case Op::kPutEnd:
      return EncodeValues(sessions_.PutEnd(keys));
    case Op::kPutRevoke:
      return EncodeValues(sessions_.PutRevoke(keys));
    case Op::kGetStart:
      return EncodeValues(sessions_.GetStart(keys));
    default:  // kGetEnd
      return Answer32(sessions_.GetEnd(keys));
  }
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
      std::string answer;
      AppendValue(&answer, client_->Get(tenant_, key));
      return answer;
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
    case Op::kBatchPutParts: {
      PutConfig config;
      std::vector<PartsItem> items;
      if (!GetPutConfig(r, &config) || !GetPartsItems(r, &items) || !r.done()) return invalid;
      return BatchPutParts(config, items);
    }
    case Op::kBatchGetIntoParts: {
      std::vector<PartsItem> items;
      if (!GetPartsItems(r, &items) || !r.done()) return invalid;
      return BatchGetIntoParts(items);
    }
    case Op::kBatchRemove: {
      const bool force = r.Get<uint8_t>() != 0;
      std::vector<std::string> keys;
      if (!GetKeys(r, &keys) || !r.done()) return invalid;
      return EncodeValues(Codes(client_->BatchRemove(tenant_, keys, force)));
    }
    case Op::kBatchExist: {
      std::vector<std::string> keys;
      if (!GetKeys(r, &keys) || !r.done()) return invalid;
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
      return Answer64(SizeOrCode(client_->GetSize(tenant_, key)));
    }
    case Op::kPutBatch:
      return PutBatch(r);
    case Op::kGetBatch: {
      std::vector<std::string> keys;
      if (!GetKeys(r, &keys) || !r.done()) return invalid;
      return GetBatch(keys);
    }
    case Op::kGetIntoRanges:
      return GetIntoRanges(r);
    case Op::kGetReplicas: {
      const std::string key = r.Bytes();
      return r.done() ? GetReplicas(key) : invalid;
    }
    case Op::kRemoveAll: {
      const bool force = r.Get<uint8_t>() != 0;
      if (!r.done()) return Answer64(Code(ErrorCode::INVALID_PARAMS));
      return Answer64(SizeOrCode(client_->RemoveAll(tenant_, force)));
    }
    case Op::kRemoveByRegex: {
      const std::string pattern = r.Bytes();
      const bool force = r.Get<uint8_t>() != 0;
      if (!r.done()) return Answer64(Code(ErrorCode::INVALID_PARAMS));
      return Answer64(SizeOrCode(client_->RemoveByRegex(tenant_, pattern, force)));
    }
    case Op::kCreateTask:
      return CreateTask(r);
    case Op::kRunTask: {
      const std::string id = r.Bytes();
      std::optional<UUID> uuid = UUID::Parse(id);
      if (!r.done() || !uuid) return invalid;
      return Answer32(Code(client_->RunTask(tenant_, *uuid)));
    }
    case Op::kQueryTask: {
      const std::string id = r.Bytes();
      return r.done() ? QueryTask(id) : invalid;
    }
    case Op::kPutStart:
    case Op::kPutRanges:
    case Op::kPutEnd:
    case Op::kPutRevoke:
    case Op::kGetStart:
    case Op::kGetRanges:
    case Op::kGetEnd:
      return HandleSessions(op, r);
    case Op::kHealth: {
      if (!r.done()) return invalid;
      auto probe = client_->Exist(tenant_, "__shelfmark_health_check__");
      return Answer32(Code(probe.ok() ? ErrorCode::OK : probe.error()));
    }
  }
  return invalid;
}

}  // namespace shelfmark::storeservice
