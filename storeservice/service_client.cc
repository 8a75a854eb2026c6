#include "storeservice/service_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <type_traits>

#include "common/wire_bytes.h"
#include "common/work_splitter.h"
#include "rpc/lookup_wire.h"
#include "storeservice/task_wire.h"

namespace shelfmark::storeservice {
namespace {

int Code(ErrorCode code) { return static_cast<int>(code); }

std::string Request(Op op) { return wire::Writer().Put(static_cast<uint8_t>(op)).Take(); }

// The handshake on a fresh connection (service_wire.h); OK or the code.
ErrorCode Handshake(int fd, const ServiceClientOptions& o) {
  std::string body;
  std::vector<UniqueFd> fds;
  auth::Nonce service_nonce{};
  if (ReadFrame(fd, &body, &fds, o.timeout_ms, o.timeout_ms, kMaxHandshakeBytes) !=
          ReadStatus::kOk ||
      !DecodeChallenge(body, &service_nonce)) {
    return ErrorCode::RPC_FAIL;
  }
  Hello hello;
  hello.client_nonce = auth::NewNonce();
  hello.tenant = o.tenant;
  hello.proof = std::string(
      auth::BytesOf(ClientProof(o.cluster_token, service_nonce, hello.client_nonce, o.tenant)));
  Welcome welcome;
  if (!SendFrame(fd, EncodeHello(hello), o.timeout_ms) ||
      ReadFrame(fd, &body, &fds, o.timeout_ms, o.timeout_ms, kMaxHandshakeBytes) !=
          ReadStatus::kOk ||
      !DecodeWelcome(body, &welcome)) {
    return ErrorCode::RPC_FAIL;
  }
  if (welcome.code == Code(ErrorCode::UNAUTHENTICATED)) return ErrorCode::UNAUTHENTICATED;
  // Nothing the service says counts before it proved the token.
  const auth::Proof expected =
      ServerProof(o.cluster_token, service_nonce, hello.client_nonce, o.tenant, welcome.code);
  if (!auth::ProofMatches(expected, welcome.proof)) return ErrorCode::UNAUTHENTICATED;
  return ErrorCodeFromInt(welcome.code);
}

std::string RegisterRequest(uint64_t base, uint64_t size) {
  return wire::Writer()
      .Put(static_cast<uint8_t>(Op::kRegister))
      .Put(base)
      .Put(size)
      .Take();
}

// The bytes a request's items name: what the service copies for it
// (Call's `moves`; a sum that wraps only makes the call poll).
uint64_t BytesOf(const std::vector<Item>& items) {
  uint64_t n = 0;
  for (const Item& item : items) n += item.size;
  return n;
}
template <typename WithPieces>  // PartsItem, RangedItem
uint64_t BytesOf(const std::vector<WithPieces>& items) {
  uint64_t n = 0;
  for (const WithPieces& item : items) {
    for (const auto& piece : item.pieces) n += piece.size;
  }
  return n;
}

std::string KeyRequest(Op op, std::string_view key) {
  return wire::Writer().Put(static_cast<uint8_t>(op)).Bytes(key).Take();
}

}  // namespace

Result<std::unique_ptr<ServiceClient>> ServiceClient::Connect(ServiceClientOptions options) {
  if (options.socket.empty() || options.timeout_ms <= 0) return ErrorCode::INVALID_PARAMS;
  std::unique_ptr<ServiceClient> client(new ServiceClient(std::move(options)));
  MutexLock lock(&client->mu_);
  if (ErrorCode rc = client->Reconnect(); rc != ErrorCode::OK) return rc;
  return client;
}

ErrorCode ServiceClient::Reconnect() {
  fd_.Reset();
  UniqueFd fd = ConnectUnix(options_.socket);
  if (!fd.valid()) return ErrorCode::RPC_FAIL;
  if (ErrorCode rc = Handshake(fd.get(), options_); rc != ErrorCode::OK) return rc;
  fd_ = std::move(fd);
  reader_.emplace(fd_.get());
  for (const auto& [base, shm] : shms_) {
    std::string answer;
    ErrorCode rc = Call(RegisterRequest(base, shm.size), &answer, shm.fd.get());
    wire::Reader r(answer.data(), answer.size());
    if (rc == ErrorCode::OK) rc = ErrorCodeFromInt(r.Get<int32_t>());
    if (rc != ErrorCode::OK) {
      fd_.Reset();
      return rc;
    }
  }
  return ErrorCode::OK;
}

ErrorCode ServiceClient::Call(std::string_view request, std::string* answer, int fd_to_pass,
                              uint64_t moves) {
  if (!fd_.valid()) {
    if (ErrorCode rc = Reconnect(); rc != ErrorCode::OK) return rc;
  }
  // A request the service would refuse as a protocol error (and drop the
  // connection over) is refused here.
  if (request.size() > kMaxFrameBytes) return ErrorCode::INVALID_PARAMS;
  std::vector<UniqueFd> fds;
  const bool sent = SendFrame(fd_.get(), request, options_.timeout_ms, fd_to_pass);
  // A small call's answer usually comes within the poll, sparing a
  // blocked wake-up.
  ReplyWait wait;
  if (sent && moves < kSplitCopyBytes) poller_.Await(wait, fd_.get());
  if (!sent ||
      reader_->Read(answer, &fds, options_.timeout_ms, options_.timeout_ms) != ReadStatus::kOk) {
    fd_.Reset();  // the next call connects afresh
    return ErrorCode::RPC_FAIL;
  }
  return ErrorCode::OK;
}

template <typename Wire, typename Out>
std::vector<Out> ServiceClient::CallValues(std::string_view request, size_t n, uint64_t moves) {
  MutexLock lock(&mu_);
  std::string answer;
  std::vector<Wire> values;
  if (ErrorCode rc = Call(request, &answer, -1, moves); rc != ErrorCode::OK) {
    return std::vector<Out>(n, Code(rc));
  }
  if (!DecodeValues(answer, n, &values)) return std::vector<Out>(n, Code(ErrorCode::RPC_FAIL));
  if constexpr (std::is_same_v<Wire, Out>) {
    return values;
  } else {
    return std::vector<Out>(values.begin(), values.end());
  }
}

template <typename T>
T ServiceClient::CallValue(std::string_view request, uint64_t moves) {
  MutexLock lock(&mu_);
  std::string answer;
  if (ErrorCode rc = Call(request, &answer, -1, moves); rc != ErrorCode::OK) return Code(rc);
  wire::Reader r(answer.data(), answer.size());
  const T value = r.Get<T>();
  return r.done() ? value : Code(ErrorCode::RPC_FAIL);
}

int ServiceClient::RegisterShm(uint64_t base, uint64_t size, int fd) {
  UniqueFd kept(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!kept.valid()) return Code(ErrorCode::INVALID_PARAMS);
  MutexLock lock(&mu_);
  if (shms_.count(base) != 0) return Code(ErrorCode::INVALID_PARAMS);
  std::string answer;
  if (ErrorCode rc = Call(RegisterRequest(base, size), &answer, kept.get()); rc != ErrorCode::OK) {
    return Code(rc);
  }
  wire::Reader r(answer.data(), answer.size());
  const int32_t rc = r.Get<int32_t>();
  if (!r.done()) return Code(ErrorCode::RPC_FAIL);
  if (rc == Code(ErrorCode::OK)) shms_[base] = Shm{size, std::move(kept)};
  return rc;
}

int ServiceClient::UnregisterShm(uint64_t base) {
  {
    MutexLock lock(&mu_);
    if (shms_.erase(base) == 0) return Code(ErrorCode::INVALID_PARAMS);
  }
  return CallValue<int32_t>(
      wire::Writer().Put(static_cast<uint8_t>(Op::kUnregister)).Put(base).Take());
}

int ServiceClient::Put(std::string_view key, std::string_view value, const PutConfig& config) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kPut)).Bytes(key);
  PutPutConfig(w, config);
  w.Bytes(value);
  return CallValue<int32_t>(w.Take(), value.size());
}

int ServiceClient::Get(std::string_view key, std::string* value) {
  MutexLock lock(&mu_);
  std::string answer;
  if (ErrorCode rc = Call(KeyRequest(Op::kGet, key), &answer); rc != ErrorCode::OK) {
    return Code(rc);
  }
  wire::Reader r(answer.data(), answer.size());
  const int32_t rc = r.Get<int32_t>();
  std::string bytes = r.Bytes();
  if (!r.done()) return Code(ErrorCode::RPC_FAIL);
  if (rc == Code(ErrorCode::OK)) *value = std::move(bytes);
  return rc;
}

std::vector<int> ServiceClient::BatchPutFrom(const std::vector<Item>& items,
                                             const PutConfig& config) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kBatchPutFrom));
  PutPutConfig(w, config);
  PutItems(w, items);
  return CallValues<int32_t, int>(w.Take(), items.size(), BytesOf(items));
}

std::vector<int64_t> ServiceClient::BatchGetInto(const std::vector<Item>& items) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kBatchGetInto));
  PutItems(w, items);
  return CallValues<int64_t, int64_t>(w.Take(), items.size(), BytesOf(items));
}

std::vector<int> ServiceClient::BatchPutParts(const std::vector<PartsItem>& items,
                                              const PutConfig& config) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kBatchPutParts));
  PutPutConfig(w, config);
  PutPartsItems(w, items);
  return CallValues<int32_t, int>(w.Take(), items.size(), BytesOf(items));
}

std::vector<int64_t> ServiceClient::BatchGetIntoParts(const std::vector<PartsItem>& items) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kBatchGetIntoParts));
  PutPartsItems(w, items);
  return CallValues<int64_t, int64_t>(w.Take(), items.size(), BytesOf(items));
}

std::vector<int> ServiceClient::BatchIsExist(const std::vector<std::string>& keys) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kBatchExist));
  PutKeys(w, keys);
  return CallValues<int32_t, int>(w.Take(), keys.size());
}

std::vector<int> ServiceClient::BatchRemove(const std::vector<std::string>& keys, bool force) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kBatchRemove)).Put(static_cast<uint8_t>(force));
  PutKeys(w, keys);
  return CallValues<int32_t, int>(w.Take(), keys.size());
}

int ServiceClient::Remove(std::string_view key, bool force) {
  return CallValue<int32_t>(wire::Writer()
                    .Put(static_cast<uint8_t>(Op::kRemove))
                    .Bytes(key)
                    .Put(static_cast<uint8_t>(force))
                    .Take());
}

int64_t ServiceClient::GetSize(std::string_view key) { return CallValue<int64_t>(KeyRequest(Op::kGetSize, key)); }

int ServiceClient::Health() { return CallValue<int32_t>(Request(Op::kHealth)); }

}  // namespace shelfmark::storeservice

namespace shelfmark::storeservice {

template <typename Decode>
int ServiceClient::CallDecoded(std::string_view request, Decode decode) {
  MutexLock lock(&mu_);
  std::string answer;
  if (ErrorCode rc = Call(request, &answer); rc != ErrorCode::OK) return Code(rc);
  wire::Reader r(answer.data(), answer.size());
  const int32_t rc = r.Get<int32_t>();
  if (rc != Code(ErrorCode::OK)) return rc;
  return decode(r) && r.done() ? 0 : Code(ErrorCode::RPC_FAIL);
}

std::vector<int> ServiceClient::PutBatch(const std::vector<std::string>& keys,
                                         const std::vector<std::string_view>& values,
                                         const PutConfig& config) {
  if (values.size() != keys.size()) {
    return std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kPutBatch));
  PutPutConfig(w, config);
  w.Put(static_cast<uint32_t>(keys.size()));
  uint64_t bytes = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    w.Bytes(keys[i]).Bytes(values[i]);
    bytes += values[i].size();
  }
  return CallValues<int32_t, int>(w.Take(), keys.size(), bytes);
}

std::vector<int> ServiceClient::GetBatch(const std::vector<std::string>& keys,
                                         std::vector<std::string>* values) {
  values->assign(keys.size(), std::string());
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kGetBatch));
  PutKeys(w, keys);
  MutexLock lock(&mu_);
  std::string answer;
  if (ErrorCode rc = Call(w.Take(), &answer); rc != ErrorCode::OK) {
    return std::vector<int>(keys.size(), Code(rc));
  }
  wire::Reader r(answer.data(), answer.size());
  std::vector<int> codes;
  if (r.Get<uint32_t>() == keys.size()) {
    for (size_t i = 0; i < keys.size(); ++i) {
      codes.push_back(r.Get<int32_t>());
      (*values)[i] = r.Bytes();
    }
  }
  if (!r.done() || codes.size() != keys.size()) {
    values->assign(keys.size(), std::string());
    return std::vector<int>(keys.size(), Code(ErrorCode::RPC_FAIL));
  }
  return codes;
}

std::vector<int64_t> ServiceClient::GetIntoRanges(const std::string& key,
                                                  const std::vector<Fragment>& fragments) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kGetIntoRanges)).Bytes(key);
  w.Put(static_cast<uint32_t>(fragments.size()));
  uint64_t bytes = 0;
  for (const Fragment& f : fragments) {
    w.Put(f.src_offset).Put(f.length).Put(f.dst);
    bytes += f.length;
  }
  return CallValues<int64_t, int64_t>(w.Take(), fragments.size(), bytes);
}

int ServiceClient::GetReplicas(std::string_view key, std::vector<ReplicaDescriptor>* replicas) {
  replicas->clear();
  return CallDecoded(KeyRequest(Op::kGetReplicas, key), [&](wire::Reader& r) {
    const uint32_t n = r.Get<uint32_t>();
    if (n > r.left() / lookup_wire_internal::kMinReplicaBytes) return false;
    replicas->resize(n);
    for (ReplicaDescriptor& d : *replicas) {
      if (!lookup_wire_internal::GetReplica(r, &d)) return false;
    }
    return true;
  });
}

int64_t ServiceClient::RemoveAll(bool force) {
  return CallValue<int64_t>(wire::Writer()
                                .Put(static_cast<uint8_t>(Op::kRemoveAll))
                                .Put(static_cast<uint8_t>(force))
                                .Take());
}

int64_t ServiceClient::RemoveByRegex(std::string_view pattern, bool force) {
  return CallValue<int64_t>(wire::Writer()
                                .Put(static_cast<uint8_t>(Op::kRemoveByRegex))
                                .Bytes(pattern)
                                .Put(static_cast<uint8_t>(force))
                                .Take());
}

int ServiceClient::CreateTask(const TaskSpec& spec, std::string* id) {
  std::string request = Request(Op::kCreateTask);
  wire::Appender a(&request);
  PutTaskSpec(a, spec);
  return CallDecoded(request, [&](wire::Reader& r) {
    *id = r.Bytes();
    return true;
  });
}

int ServiceClient::RunTask(std::string_view id) {
  return CallValue<int32_t>(KeyRequest(Op::kRunTask, id));
}

int ServiceClient::QueryTask(std::string_view id, TaskInfo* info) {
  return CallDecoded(KeyRequest(Op::kQueryTask, id),
                     [&](wire::Reader& r) { return GetTaskInfo(r, info); });
}

std::vector<int> ServiceClient::PutStart(const std::vector<std::string>& keys,
                                         const std::vector<uint64_t>& sizes,
                                         const PutConfig& config) {
  if (sizes.size() != keys.size()) {
    return std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kPutStart));
  PutPutConfig(w, config);
  w.Put(static_cast<uint32_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) w.Bytes(keys[i]).Put(sizes[i]);
  return CallValues<int32_t, int>(w.Take(), keys.size());
}

std::vector<int64_t> ServiceClient::SessionRanges(Op op, const std::vector<RangedItem>& items) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(op));
  PutRangedItems(w, items);
  return CallValues<int64_t, int64_t>(w.Take(), items.size(), BytesOf(items));
}

std::vector<int> ServiceClient::SessionKeys(Op op, const std::vector<std::string>& keys) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(op));
  PutKeys(w, keys);
  return CallValues<int32_t, int>(w.Take(), keys.size());
}

int ServiceClient::GetEnd(const std::vector<std::string>& keys) {
  wire::Writer w;
  w.Put(static_cast<uint8_t>(Op::kGetEnd));
  PutKeys(w, keys);
  return CallValue<int32_t>(w.Take());
}

uint64_t ServiceClient::reply_polls() const {
  MutexLock lock(&mu_);
  return poller_.polls();
}

}  // namespace shelfmark::storeservice
