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

// has_checksums u8 | (has_checksums: count x checksum u64) into *out.
bool GetChecksums(wire::Reader& r, uint32_t count, std::vector<uint64_t>* out) {
  bool has_checksums = false;
  if (!GetBool(r, &has_checksums)) return false;
  out->clear();
  if (!has_checksums) return true;
  if (count > r.left() / 8) return false;
  for (uint32_t i = 0; i < count; ++i) out->push_back(r.Get<uint64_t>());
  return true;
}

void PutChecksums(wire::Appender& a, const std::vector<uint64_t>& checksums) {
  a.Put(static_cast<uint8_t>(!checksums.empty()));
  for (uint64_t c : checksums) a.Put(c);
}

// count u32 | count x (key bytes | value u64) | has_checksums u8 |
// (has_checksums: count x checksum u64): a batch put's keys, each with its
// size or reservation (*values).
bool GetKeyedBatch(wire::Reader& r, size_t max_batch, LookupRequest* out,
                   std::vector<uint64_t>* values) {
  const uint32_t count = r.Get<uint32_t>();
  if (count > max_batch || count > r.left() / kMinSizedKeyBytes) return false;
  out->keys.clear();
  values->clear();
  for (uint32_t i = 0; i < count; ++i) {
    out->keys.push_back(r.BytesView());
    values->push_back(r.Get<uint64_t>());
  }
  return GetChecksums(r, count, &out->checksums);
}

// Writes what GetKeyedBatch reads; a key without a value gets 0 (refused by
// the master as a zero size or an unknown reservation).
void PutKeyedBatch(wire::Appender& a, const std::vector<std::string>& keys,
                   const std::vector<uint64_t>& values, const std::vector<uint64_t>& checksums) {
  a.Put(static_cast<uint32_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) a.Bytes(keys[i]).Put(i < values.size() ? values[i] : 0);
  PutChecksums(a, checksums);
}

bool GetBatchPutStart(wire::Reader& r, size_t max_batch, LookupRequest* out) {
  out->client = GetUuid(r);
  out->tenant = r.BytesView();
  return GetConfig(r, &out->config) && GetKeyedBatch(r, max_batch, out, &out->sizes);
}

void PutGrant(wire::Appender& a, const PutReservationGrant& g) {
  a.Put(g.id).Put(g.ttl_ms);
  PutReplicas(a, g.replicas);
}

bool GetGrant(wire::Reader& r, PutReservationGrant* g) {
  g->id = r.Get<uint64_t>();
  g->ttl_ms = r.Get<int64_t>();
  return GetReplicas(r, &g->replicas);
}

// A commit's renewal: has_next u8 | (has_next: grant).
void PutNext(wire::Appender& a, const std::optional<PutReservationGrant>& next) {
  a.Put(static_cast<uint8_t>(next.has_value()));
  if (next) PutGrant(a, *next);
}

bool GetNext(wire::Reader& r, std::optional<PutReservationGrant>* next) {
  bool has_next = false;
  if (!GetBool(r, &has_next)) return false;
  next->reset();
  return !has_next || GetGrant(r, &next->emplace());
}

bool GetBatchReservePut(wire::Reader& r, size_t max_batch, LookupRequest* out) {
  out->client = GetUuid(r);
  out->tenant = r.BytesView();
  if (!GetConfig(r, &out->config)) return false;
  const uint32_t count = r.Get<uint32_t>();
  if (count > max_batch || count > r.left() / 8) return false;
  out->sizes.clear();
  for (uint32_t i = 0; i < count; ++i) out->sizes.push_back(r.Get<uint64_t>());
  return true;
}

bool GetBatchCommitPut(wire::Reader& r, size_t max_batch, LookupRequest* out) {
  out->client = GetUuid(r);
  out->tenant = r.BytesView();
  return GetConfig(r, &out->config) && GetBool(r, &out->renew) &&
         GetKeyedBatch(r, max_batch, out, &out->reservations);
}

// The reply's whole-call code; on OK the payload follows. `*code` is the
// code read (RPC_FAIL when it is not OK and bytes follow it).
bool ReplyHead(wire::Reader& r, ErrorCode* code) {
  *code = ErrorCodeFromInt(r.Get<int32_t>());
  if (*code == ErrorCode::OK) return true;
  if (!r.done()) *code = ErrorCode::RPC_FAIL;
  return false;
}

// A batch reply of one item per key (each a code, then a T when OK).
template <typename T, typename GetOne>
Result<std::vector<Result<T>>> DecodeItemsReply(std::string_view body, size_t expected,
                                                GetOne&& get_one) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  return GetItems<T>(r, expected, get_one);
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
  PutKeyedBatch(a, keys, sizes, checksums);
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

void AppendReservePutRequest(const UUID& client, std::string_view tenant, uint64_t size,
                             const PutConfig& config, std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kReservePut, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant).Put(size);
  PutConfigFields(a, config);
  EndLookupFrame(out, start);
}

void AppendCommitPutRequest(const UUID& client, std::string_view tenant, std::string_view key,
                            uint64_t reservation, bool renew, const PutConfig& config,
                            std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kCommitPut, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant).Bytes(key).Put(reservation).Put(static_cast<uint8_t>(renew));
  PutConfigFields(a, config);
  EndLookupFrame(out, start);
}

void AppendBatchReservePutRequest(const UUID& client, std::string_view tenant,
                                  const std::vector<uint64_t>& sizes, const PutConfig& config,
                                  std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kBatchReservePut, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant);
  PutConfigFields(a, config);
  a.Put(static_cast<uint32_t>(sizes.size()));
  for (uint64_t size : sizes) a.Put(size);
  EndLookupFrame(out, start);
}

void AppendBatchCommitPutRequest(const UUID& client, std::string_view tenant,
                                 const std::vector<std::string>& keys,
                                 const std::vector<uint64_t>& reservations,
                                 const std::vector<uint64_t>& checksums, bool renew,
                                 const PutConfig& config, std::string* out) {
  size_t start = 0;
  wire::Appender a = Begin(LookupOp::kBatchCommitPut, out, &start);
  PutUuid(a, client);
  a.Bytes(tenant);
  PutConfigFields(a, config);
  a.Put(static_cast<uint8_t>(renew));
  PutKeyedBatch(a, keys, reservations, checksums);
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
    case LookupOp::kReservePut:
      out->client = GetUuid(r);
      out->tenant = r.BytesView();
      out->size = r.Get<uint64_t>();
      return GetConfig(r, &out->config);
    case LookupOp::kCommitPut:
      out->client = GetUuid(r);
      out->tenant = r.BytesView();
      out->key = r.BytesView();
      out->reservation = r.Get<uint64_t>();
      return GetBool(r, &out->renew) && GetConfig(r, &out->config);
    case LookupOp::kBatchReservePut:
      return GetBatchReservePut(r, max_batch, out);
    case LookupOp::kBatchCommitPut:
      return GetBatchCommitPut(r, max_batch, out);
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

void AppendReservePutReply(const Result<PutReservationGrant>& result, std::string* out) {
  if (!result.ok()) return AppendCodeReply(result.error(), out);
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK));
  PutGrant(a, *result);
  EndLookupFrame(out, start);
}

void AppendCommitPutReply(const CommitPutResult& result, std::string* out) {
  if (result.code != ErrorCode::OK) return AppendCodeReply(result.code, out);
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK));
  PutNext(a, result.next);
  EndLookupFrame(out, start);
}

void AppendBatchReservePutReply(const Result<std::vector<PutReservationGrant>>& result,
                                std::string* out) {
  if (!result.ok()) return AppendCodeReply(result.error(), out);
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK)).Put(static_cast<uint32_t>(result->size()));
  for (const PutReservationGrant& g : *result) PutGrant(a, g);
  EndLookupFrame(out, start);
}

void AppendBatchCommitPutReply(const std::vector<CommitPutResult>& results, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(ErrorCode::OK)).Put(static_cast<uint32_t>(results.size()));
  for (const CommitPutResult& r : results) {
    a.Put(static_cast<int32_t>(r.code));
    if (r.code == ErrorCode::OK) PutNext(a, r.next);
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
  return DecodeItemsReply<std::vector<ReplicaDescriptor>>(body, expected, GetReplicas);
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
  return DecodeItemsReply<bool>(body, expected, GetBool);
}


Result<PutReservationGrant> DecodeReservePutReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  PutReservationGrant grant;
  if (!GetGrant(r, &grant) || !r.done()) return ErrorCode::RPC_FAIL;
  return grant;
}

Result<std::optional<PutReservationGrant>> DecodeCommitPutReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  std::optional<PutReservationGrant> next;
  if (!GetNext(r, &next) || !r.done()) return ErrorCode::RPC_FAIL;
  return next;
}

Result<std::vector<PutReservationGrant>> DecodeBatchReservePutReply(std::string_view body,
                                                                    size_t expected) {
  wire::Reader r(body.data(), body.size());
  ErrorCode code;
  if (!ReplyHead(r, &code)) return code;
  constexpr size_t kMinGrantBytes = 8 + 8 + 4;  // id | ttl | no replicas
  const uint32_t count = r.Get<uint32_t>();
  if (count != expected || count > r.left() / kMinGrantBytes) return ErrorCode::RPC_FAIL;
  std::vector<PutReservationGrant> grants(count);
  for (PutReservationGrant& g : grants) {
    if (!GetGrant(r, &g)) return ErrorCode::RPC_FAIL;
  }
  if (!r.done()) return ErrorCode::RPC_FAIL;
  return grants;
}

Result<std::vector<Result<std::optional<PutReservationGrant>>>> DecodeBatchCommitPutReply(
    std::string_view body, size_t expected) {
  return DecodeItemsReply<std::optional<PutReservationGrant>>(body, expected, GetNext);
}

}  // namespace shelfmark
