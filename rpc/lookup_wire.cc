#include "rpc/lookup_wire.h"

#include <cstring>

#include "common/wire_bytes.h"
#include "rpc/mutation_wire.h"

namespace shelfmark {
namespace lookup_wire_internal {

void PutUuid(wire::Appender& a, const UUID& id) { a.Put(id.hi).Put(id.lo); }
UUID GetUuid(wire::Reader& r) {
  UUID id;
  id.hi = r.Get<uint64_t>();
  id.lo = r.Get<uint64_t>();
  return id;
}

void PutReplica(wire::Appender& a, const ReplicaDescriptor& d) {
  a.Put(d.id).Put(static_cast<uint8_t>(d.status)).Put(static_cast<uint8_t>(d.type));
  if (d.type == ReplicaType::MEMORY) {
    const MemoryDescriptor& m = d.memory;
    a.Bytes(m.endpoint).Bytes(m.protocol).Put(m.buffer_address).Put(m.size).Bytes(m.rkey);
    PutUuid(a, m.segment_id);
  } else {
    PutUuid(a, d.disk.client_id);
    a.Put(d.disk.object_size).Bytes(d.disk.endpoint);
  }
}

namespace {
void PutResponse(wire::Appender& a, const GetReplicaListResponse& r) {
  a.Put(r.size).Put(static_cast<uint8_t>(r.checksum.has_value())).Put(r.checksum.value_or(0));
  a.Put(static_cast<uint8_t>(r.data_type)).Put(r.lease_ttl_ms);
  a.Put(static_cast<uint32_t>(r.replicas.size()));
  for (const ReplicaDescriptor& d : r.replicas) PutReplica(a, d);
}

}  // namespace

bool GetReplica(wire::Reader& r, ReplicaDescriptor* d) {
  d->id = r.Get<uint64_t>();
  if (!GetEnum(r, static_cast<uint8_t>(ReplicaStatus::FAILED), &d->status)) return false;
  if (!GetEnum(r, static_cast<uint8_t>(ReplicaType::LOCAL_DISK), &d->type)) return false;
  if (d->type == ReplicaType::MEMORY) {
    MemoryDescriptor& m = d->memory;
    m.endpoint = r.Bytes();
    m.protocol = r.Bytes();
    m.buffer_address = r.Get<uint64_t>();
    m.size = r.Get<uint64_t>();
    m.rkey = r.Bytes();
    m.segment_id = GetUuid(r);
  } else {
    d->disk.client_id = GetUuid(r);
    d->disk.object_size = r.Get<uint64_t>();
    d->disk.endpoint = r.Bytes();
  }
  return true;
}

bool GetKeys(wire::Reader& r, size_t max_batch, std::vector<std::string_view>* keys) {
  const uint32_t count = r.Get<uint32_t>();
  if (count > max_batch || count > r.left() / kMinKeyBytes) return false;
  keys->clear();
  for (uint32_t i = 0; i < count; ++i) keys->push_back(r.BytesView());
  return true;
}

namespace {
bool GetResponse(wire::Reader& r, GetReplicaListResponse* out) {
  out->size = r.Get<uint64_t>();
  const uint8_t has_checksum = r.Get<uint8_t>();
  const uint64_t checksum = r.Get<uint64_t>();
  if (has_checksum > 1) return false;
  if (has_checksum == 1) out->checksum = checksum;
  if (!GetEnum(r, static_cast<uint8_t>(DataType::WEIGHT), &out->data_type)) return false;
  out->lease_ttl_ms = r.Get<int64_t>();
  const uint32_t count = r.Get<uint32_t>();
  if (count > r.left() / kMinReplicaBytes) return false;
  out->replicas.resize(count);
  for (ReplicaDescriptor& d : out->replicas) {
    if (!GetReplica(r, &d)) return false;
  }
  return true;
}

}  // namespace
}  // namespace lookup_wire_internal

using namespace lookup_wire_internal;  // NOLINT: this file's own helpers

size_t BeginLookupFrame(std::string* out) {
  const size_t start = out->size();
  wire::Appender(out).Put(kLookupFrameTag).Put(uint32_t{0});
  return start;
}

void EndLookupFrame(std::string* out, size_t start) {
  const uint32_t body = static_cast<uint32_t>(out->size() - start - kLookupHeaderBytes);
  std::memcpy(out->data() + start + 4, &body, sizeof(body));
}

bool ParseLookupHeader(std::string_view header, uint32_t* body_bytes) {
  if (header.size() < kLookupHeaderBytes) return false;
  wire::Reader r(header.data(), kLookupHeaderBytes);
  if (r.Get<uint32_t>() != kLookupFrameTag) return false;
  *body_bytes = r.Get<uint32_t>();
  return true;
}

// --- requests ------------------------------------------------------------------

void AppendChallengeRequest(std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<uint8_t>(LookupOp::kChallenge));
  EndLookupFrame(out, start);
}

void AppendAuthenticateRequest(std::string_view client_nonce, std::string_view proof,
                               std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<uint8_t>(LookupOp::kAuthenticate)).Bytes(client_nonce).Bytes(proof);
  EndLookupFrame(out, start);
}

void AppendGetRequest(std::string_view tenant, std::string_view key, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<uint8_t>(LookupOp::kGet)).Bytes(tenant).Bytes(key);
  EndLookupFrame(out, start);
}

void AppendBatchGetRequest(std::string_view tenant, const std::vector<std::string>& keys,
                           std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender a(out);
  a.Put(static_cast<uint8_t>(LookupOp::kBatchGet)).Bytes(tenant);
  a.Put(static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) a.Bytes(key);
  EndLookupFrame(out, start);
}

ErrorCode DecodeLookupRequest(std::string_view body, size_t max_batch, LookupRequest* out) {
  wire::Reader r(body.data(), body.size());
  const uint8_t op = r.Get<uint8_t>();
  out->op = static_cast<LookupOp>(op);
  switch (out->op) {
    case LookupOp::kChallenge:
      break;
    case LookupOp::kAuthenticate:
      out->client_nonce = r.BytesView();
      out->proof = r.BytesView();
      break;
    case LookupOp::kGet:
      out->tenant = r.BytesView();
      out->key = r.BytesView();
      break;
    case LookupOp::kBatchGet:
      out->tenant = r.BytesView();
      if (!GetKeys(r, max_batch, &out->keys)) return ErrorCode::INVALID_PARAMS;
      break;
    default:
      if (!DecodeMutationPayload(out->op, r, max_batch, out)) return ErrorCode::INVALID_PARAMS;
  }
  return r.done() ? ErrorCode::OK : ErrorCode::INVALID_PARAMS;
}

// --- replies -------------------------------------------------------------------

void AppendChallengeReply(ErrorCode code, bool required, std::string_view server_nonce,
                          std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<int32_t>(code)).Put(static_cast<uint8_t>(required)).Bytes(server_nonce);
  EndLookupFrame(out, start);
}

void AppendAuthenticateReply(ErrorCode code, std::string_view server_proof, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<int32_t>(code)).Bytes(server_proof);
  EndLookupFrame(out, start);
}

void AppendCodeReply(ErrorCode code, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<int32_t>(code));
  EndLookupFrame(out, start);
}

void AppendGetReply(ErrorCode code, const GetReplicaListResponse& response, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  AppendBatchItem(code, response, out);  // a reply body is one item
  EndLookupFrame(out, start);
}

void AppendGetReply(const Result<GetReplicaListResponse>& result, std::string* out) {
  if (result.ok()) return AppendGetReply(ErrorCode::OK, *result, out);
  AppendGetReply(result.error(), GetReplicaListResponse{}, out);
}

size_t BeginBatchGetReply(uint32_t count, std::string* out) {
  const size_t start = BeginLookupFrame(out);
  wire::Appender(out).Put(static_cast<int32_t>(ErrorCode::OK)).Put(count);
  return start;
}

void AppendBatchItem(ErrorCode code, const GetReplicaListResponse& response, std::string* out) {
  wire::Appender a(out);
  a.Put(static_cast<int32_t>(code));
  if (code == ErrorCode::OK) PutResponse(a, response);
}

void AppendBatchItem(const Result<GetReplicaListResponse>& result, std::string* out) {
  if (result.ok()) return AppendBatchItem(ErrorCode::OK, *result, out);
  AppendBatchItem(result.error(), GetReplicaListResponse{}, out);
}

Result<ChallengeReply> DecodeChallengeReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  const ErrorCode code = ErrorCodeFromInt(r.Get<int32_t>());
  ChallengeReply reply;
  const uint8_t required = r.Get<uint8_t>();
  reply.server_nonce = r.Bytes();
  if (!r.done() || required > 1) return ErrorCode::RPC_FAIL;
  if (code != ErrorCode::OK) return code;
  reply.required = required == 1;
  return reply;
}

Result<std::string> DecodeAuthenticateReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  const ErrorCode code = ErrorCodeFromInt(r.Get<int32_t>());
  std::string proof = r.Bytes();
  if (!r.done()) return ErrorCode::RPC_FAIL;
  if (code != ErrorCode::OK) return code;
  return proof;
}

Result<GetReplicaListResponse> DecodeGetReply(std::string_view body) {
  wire::Reader r(body.data(), body.size());
  const ErrorCode code = ErrorCodeFromInt(r.Get<int32_t>());
  if (code != ErrorCode::OK) return r.done() ? code : ErrorCode::RPC_FAIL;
  GetReplicaListResponse out;
  if (!GetResponse(r, &out) || !r.done()) return ErrorCode::RPC_FAIL;
  return out;
}

Result<std::vector<Result<GetReplicaListResponse>>> DecodeBatchGetReply(std::string_view body,
                                                                        size_t expected) {
  wire::Reader r(body.data(), body.size());
  const ErrorCode code = ErrorCodeFromInt(r.Get<int32_t>());
  if (code != ErrorCode::OK) return r.done() ? code : ErrorCode::RPC_FAIL;
  return GetItems<GetReplicaListResponse>(r, expected, GetResponse);
}

}  // namespace shelfmark
