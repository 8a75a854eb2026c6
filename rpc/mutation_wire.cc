#include "rpc/mutation_wire.h"

#include <utility>

namespace shelfmark {

using namespace lookup_wire_internal;  // NOLINT: the shared encodings

namespace {

constexpr size_t kMinSizedKeyBytes = kMinKeyBytes + 8;  // key bytes | size u64

wire::Appender Begin(LookupOp op, std::string* out, size_t* start) {
  *start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<uint8_t>(op));
  return a;
}

void PutKeys(wire::Appender& a, const std::vector<std::string>& keys) {
  a.Put(static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) a.Bytes(key);
}

void PutConfigFields(wire::Appender& a, const PutConfig& c) {
  a.Put(c.replica_num).Put(static_cast<uint32_t>(c.preferred_segments.size()));
  for (const std::string& s : c.preferred_segments) a.Bytes(s);
  a.Bytes(c.prefer_host).Put(static_cast<uint8_t>(c.checksum.has_value()));
  a.Put(c.checksum.value_or(0)).Put(static_cast<uint8_t>(c.data_type));
  a.Put(static_cast<uint8_t>(c.hard_pin)).Put(c.soft_pin_ttl_ms).Bytes(c.group_id);
  a.Put(static_cast<uint8_t>(c.replace));
}

bool GetBool(wire::Reader& r, bool* out) {
  const uint8_t v = r.Get<uint8_t>();
  *out = v == 1;
  return v <= 1;
}

bool GetConfig(wire::Reader& r, PutConfig* c) {
  c->replica_num = r.Get<uint32_t>();
  const uint32_t preferred = r.Get<uint32_t>();
  if (preferred > r.left() / kMinKeyBytes) return false;
  c->preferred_segments.resize(preferred);
  for (std::string& s : c->preferred_segments) s = r.Bytes();
  c->prefer_host = r.Bytes();
  bool has_checksum = false;
  if (!GetBool(r, &has_checksum)) return false;
  const uint64_t checksum = r.Get<uint64_t>();
  c->checksum = has_checksum ? std::optional<uint64_t>(checksum) : std::nullopt;
  if (!GetEnum(r, static_cast<uint8_t>(DataType::WEIGHT), &c->data_type)) return false;
  if (!GetBool(r, &c->hard_pin)) return false;
  c->soft_pin_ttl_ms = r.Get<int64_t>();
  c->group_id = r.Bytes();
  return GetBool(r, &c->replace);
}

void PutReplicas(wire::Appender& a, const std::vector<ReplicaDescriptor>& replicas) {
  a.Put(static_cast<uint32_t>(replicas.size()));
  for (const ReplicaDescriptor& d : replicas) PutReplica(a, d);
}

bool GetReplicas(wire::Reader& r, std::vector<ReplicaDescriptor>* out) {
  const uint32_t count = r.Get<uint32_t>();
  if (count > r.left() / kMinReplicaBytes) return false;
  out->resize(count);
  for (ReplicaDescriptor& d : *out) {
    if (!GetReplica(r, &d)) return false;
  }
  return true;
}

bool GetBatchPutStart(wire::Reader& r, size_t max_batch, LookupRequest* out) {
  out->client = GetUuid(r);
  out->tenant = r.BytesView();
  if (!GetConfig(r, &out->config)) return false;
  const uint32_t count = r.Get<uint32_t>();
  if (count > max_batch || count > r.left() / kMinSizedKeyBytes) return false;
  out->keys.clear();
  out->sizes.clear();
  for (uint32_t i = 0; i < count; ++i) {
    out->keys.push_back(r.BytesView());
    out->sizes.push_back(r.Get<uint64_t>());
  }
  bool has_checksums = false;
  if (!GetBool(r, &has_checksums)) return false;
  out->checksums.clear();
  if (!has_checksums) return true;
  if (count > r.left() / 8) return false;
  for (uint32_t i = 0; i < count; ++i) out->checksums.push_back(r.Get<uint64_t>());
  return true;
}

// The reply's whole-call code; on OK the payload follows. `*code` is the
// code read (RPC_FAIL when it is not OK and bytes follow it).
bool ReplyHead(wire::Reader& r, ErrorCode* code) {
  *code = ErrorCodeFromInt(r.Get<int32_t>());
  if (*code == ErrorCode::OK) return true;
  if (!r.done()) *code = ErrorCode::RPC_FAIL;
  return false;
}

}  // namespace

// --- requests --------------------------------------------------------------------

void AppendPutStartRequest(const UUID& client, std::string_view tenant, std::string_view key,
                           uint64_t size, const PutConfig& config, std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kPutStart, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant).Bytes(key).Put(size);
  PutConfigFields(a, config);
  EndLookupFrame(out, start);
}

void AppendPutFinishRequest(LookupOp op, const UUID& client, std::string_view tenant,
                            std::string_view key, ReplicaType type, std::string* out,
                            std::optional<uint64_t> checksum) {
  size_t start = 0;
  wire::Appender a = Begin(op, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant).Bytes(key).Put(static_cast<uint8_t>(type));
  if (checksum) a.Put(*checksum);
  EndLookupFrame(out, start);
}

void AppendBatchPutStartRequest(const UUID& client, std::string_view tenant,
                                const std::vector<std::string>& keys,
                                const std::vector<uint64_t>& sizes, const PutConfig& config,
                                const std::vector<uint64_t>& checksums, std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kBatchPutStart, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant);
  PutConfigFields(a, config);
  a.Put(static_cast<uint32_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) a.Bytes(keys[i]).Put(i < sizes.size() ? sizes[i] : 0);
  a.Put(static_cast<uint8_t>(!checksums.empty()));
  for (uint64_t c : checksums) a.Put(c);
  EndLookupFrame(out, start);
}

void AppendBatchPutFinishRequest(LookupOp op, const UUID& client, std::string_view tenant,
                                 const std::vector<std::string>& keys, std::string* out,
                                 const std::vector<uint64_t>& checksums) {
  size_t start = 0;
  wire::Appender a = Begin(op, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant);
  PutKeys(a, keys);
  for (uint64_t c : checksums) a.Put(c);
  EndLookupFrame(out, start);
}

void AppendExistRequest(std::string_view tenant, std::string_view key, std::string* out) {
  size_t start = 0;
  Begin(LookupOp::kExist, out, &start).Bytes(tenant).Bytes(key);
  EndLookupFrame(out, start);
}

void AppendBatchExistRequest(std::string_view tenant, const std::vector<std::string>& keys,
                             std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kBatchExist, out, &start);
  a.Bytes(tenant);
  PutKeys(a, keys);
  EndLookupFrame(out, start);
}

void AppendRemoveRequest(std::string_view tenant, std::string_view key, bool force,
                         std::string* out) {
  size_t start = 0;
  Begin(LookupOp::kRemove, out, &start).Bytes(tenant).Bytes(key).Put(static_cast<uint8_t>(force));
  EndLookupFrame(out, start);
}

void AppendBatchRemoveRequest(std::string_view tenant, const std::vector<std::string>& keys,
                              bool force, std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kBatchRemove, out, &start);
  a.Bytes(tenant).Put(static_cast<uint8_t>(force));
  PutKeys(a, keys);
  EndLookupFrame(out, start);
}

bool DecodeMutationPayload(LookupOp op, wire::Reader& r, size_t max_batch, LookupRequest* out) {
  switch (op) {
    case LookupOp::kPutStart:
      out->client = GetUuid(r);
      out->tenant = r.BytesView();
      out->key = r.BytesView();
      out->size = r.Get<uint64_t>();
      return GetConfig(r, &out->config);
    case LookupOp::kPutEnd:
    case LookupOp::kPutRevoke:
      out->client = GetUuid(r);
      out->tenant = r.BytesView();
      out->key = r.BytesView();
      if (!GetEnum(r, static_cast<uint8_t>(ReplicaType::LOCAL_DISK), &out->type)) return false;
      out->end_checksum.reset();
      if (op == LookupOp::kPutEnd && r.left() > 0) out->end_checksum = r.Get<uint64_t>();
      return true;
    case LookupOp::kBatchPutStart:
      return GetBatchPutStart(r, max_batch, out);
    case LookupOp::kBatchPutEnd:
    case LookupOp::kBatchPutRevoke:
      out->client = GetUuid(r);
      out->tenant = r.BytesView();
      if (!GetKeys(r, max_batch, &out->keys)) return false;
      out->checksums.clear();
      if (op == LookupOp::kBatchPutEnd && r.left() > 0) {
        if (r.left() / 8 < out->keys.size()) return false;
        for (size_t i = 0; i < out->keys.size(); ++i) out->checksums.push_back(r.Get<uint64_t>());
      }
      return true;
    case LookupOp::kExist:
      out->tenant = r.BytesView();
      out->key = r.BytesView();
      return true;
    case LookupOp::kBatchExist:
      out->tenant = r.BytesView();
      return GetKeys(r, max_batch, &out->keys);
    case LookupOp::kRemove:
      out->tenant = r.BytesView();
      out->key = r.BytesView();
      return GetBool(r, &out->force);
    case LookupOp::kBatchRemove:
      out->tenant = r.BytesView();
      return GetBool(r, &out->force) && GetKeys(r, max_batch, &out->keys);
    default:
      return false;
  }
}

// --- replies -----------------------------------------------------------------------

void AppendPutStartReply(const Result<std::vector<ReplicaDescriptor>>& result, std::string* out) {
  if (!result.ok()) return AppendCodeReply(result.error(), out);
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK));
  PutReplicas(a, *result);
  EndLookupFrame(out, start);
}

void AppendBatchPutStartReply(const std::vector<Result<std::vector<ReplicaDescriptor>>>& results,
                              std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK)).Put(static_cast<uint32_t>(results.size()));
  for (const auto& r : results) {
    a.Put(static_cast<int32_t>(r.ok() ? ErrorCode::OK : r.error()));
    if (r.ok()) PutReplicas(a, *r);
  }
  EndLookupFrame(out, start);
}

void AppendCodesReply(const std::vector<ErrorCode>& codes, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK)).Put(static_cast<uint32_t>(codes.size()));
  for (ErrorCode c : codes) a.Put(static_cast<int32_t>(c));
  EndLookupFrame(out, start);
}

void AppendExistReply(const Result<bool>& result, std::string* out) {
  if (!result.ok()) return AppendCodeReply(result.error(), out);
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<int32_t>(ErrorCode::OK)).Put(static_cast<uint8_t>(*result));
  EndLookupFrame(out, start);
}

void AppendBatchExistReply(const std::vector<Result<bool>>& results, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK)).Put(static_cast<uint32_t>(results.size()));
  for (const Result<bool>& r : results) {
    a.Put(static_cast<int32_t>(r.ok() ? ErrorCode::OK : r.error()));
    if (r.ok()) a.Put(static_cast<uint8_t>(*r));
  }
  EndLookupFrame(out, start);
}

// --- reply decoding ----------------------------------------------------------------

Result<std::vector<ReplicaDescriptor>> DecodePutStartReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  std::vector<ReplicaDescriptor> replicas;
  if (!GetReplicas(r, &replicas) || !r.done()) return ErrorCode::RPC_FAIL;
  return replicas;
}

Result<std::vector<Result<std::vector<ReplicaDescriptor>>>> DecodeBatchPutStartReply(
    std::string_view body, size_t expected) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  return GetItems<std::vector<ReplicaDescriptor>>(r, expected, GetReplicas);
}

ErrorCode DecodeCodeReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  const ErrorCode code = ErrorCodeFromInt(r.Get<int32_t>());
  return r.done() ? code : ErrorCode::RPC_FAIL;
}

Result<std::vector<ErrorCode>> DecodeCodesReply(std::string_view body, size_t expected) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  const uint32_t count = r.Get<uint32_t>();
  if (count != expected || count > r.left() / kMinItemBytes) return ErrorCode::RPC_FAIL;
  std::vector<ErrorCode> codes(count);
  for (ErrorCode& c : codes) c = ErrorCodeFromInt(r.Get<int32_t>());
  if (!r.done()) return ErrorCode::RPC_FAIL;
  return codes;
}

Result<bool> DecodeExistReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  bool exists = false;
  if (!GetBool(r, &exists) || !r.done()) return ErrorCode::RPC_FAIL;
  return exists;
}

Result<std::vector<Result<bool>>> DecodeBatchExistReply(std::string_view body, size_t expected) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  return GetItems<bool>(r, expected, GetBool);
}

}  // namespace shelfmark
