#include "ha/etcd_wire.h"

#include "common/json_line.h"
#include "ha/base64.h"
#include "ha/json_reader.h"

namespace shelfmark::ha::etcdwire {
namespace {

using Type = JsonValue::Type;

std::string B64(std::string_view bytes) { return JsonQuote(Base64Encode(bytes)); }
std::string Int(int64_t v) { return JsonQuote(std::to_string(v)); }

// The reply as a JSON object that carries no gateway error.
Result<JsonValue> ParseReply(std::string_view body) {
  Result<JsonValue> json = ParseJson(body);
  if (!json.ok()) return json.error();
  if (json->type != Type::kObject) return ErrorCode::DATA_CORRUPTED;
  if (json->Find("error") != nullptr) return ErrorCode::ETCD_OPERATION_ERROR;
  return json;
}

// A base64 `bytes` field; absent reads as empty.
Result<std::string> Bytes(const JsonValue* v) {
  if (v == nullptr) return std::string();
  if (v->type != Type::kString) return ErrorCode::DATA_CORRUPTED;
  std::optional<std::string> out = Base64Decode(v->text);
  if (!out) return ErrorCode::DATA_CORRUPTED;
  return std::move(*out);
}

ErrorCode ReadInt(const JsonValue& obj, std::string_view name, int64_t* out) {
  Result<int64_t> v = JsonInt64(obj.Find(name));
  if (!v.ok()) return v.error();
  *out = *v;
  return ErrorCode::OK;
}

Result<EtcdKeyValue> DecodeKv(const JsonValue& v) {
  if (v.type != Type::kObject) return ErrorCode::DATA_CORRUPTED;
  EtcdKeyValue kv;
  Result<std::string> key = Bytes(v.Find("key"));
  Result<std::string> value = Bytes(v.Find("value"));
  if (!key.ok() || !value.ok()) return ErrorCode::DATA_CORRUPTED;
  kv.key = std::move(*key);
  kv.value = std::move(*value);
  for (auto [name, field] : {std::pair{"create_revision", &kv.create_revision},
                             std::pair{"mod_revision", &kv.mod_revision},
                             std::pair{"version", &kv.version}, std::pair{"lease", &kv.lease}}) {
    if (ReadInt(v, name, field) != ErrorCode::OK) return ErrorCode::DATA_CORRUPTED;
  }
  return kv;
}

// A RangeResponse object: its first key, if any.
Result<std::optional<EtcdKeyValue>> DecodeRangeObject(const JsonValue& obj) {
  if (obj.type != Type::kObject) return ErrorCode::DATA_CORRUPTED;
  const JsonValue* kvs = obj.Find("kvs");
  if (kvs == nullptr) return std::optional<EtcdKeyValue>();
  if (kvs->type != Type::kArray) return ErrorCode::DATA_CORRUPTED;
  if (kvs->items.empty()) return std::optional<EtcdKeyValue>();
  Result<EtcdKeyValue> kv = DecodeKv(kvs->items[0]);
  if (!kv.ok()) return kv.error();
  return std::optional<EtcdKeyValue>(std::move(*kv));
}

Result<EtcdLease> DecodeLeaseObject(const JsonValue& obj) {
  if (obj.type != Type::kObject) return ErrorCode::DATA_CORRUPTED;
  EtcdLease lease;
  if (ReadInt(obj, "ID", &lease.id) != ErrorCode::OK ||
      ReadInt(obj, "TTL", &lease.ttl_s) != ErrorCode::OK) {
    return ErrorCode::DATA_CORRUPTED;
  }
  return lease;
}

// The revision of a reply's "header"; 0 when absent.
Result<int64_t> HeaderRevision(const JsonValue& reply) {
  const JsonValue* header = reply.Find("header");
  if (header == nullptr) return int64_t{0};
  if (header->type != Type::kObject) return ErrorCode::DATA_CORRUPTED;
  return JsonInt64(header->Find("revision"));
}

}  // namespace

std::string RangeRequest(std::string_view key) { return "{\"key\":" + B64(key) + "}"; }

std::string PutRequest(std::string_view key, std::string_view value, int64_t lease) {
  return "{\"key\":" + B64(key) + ",\"value\":" + B64(value) + ",\"lease\":" + Int(lease) + "}";
}

std::string LeaseGrantRequest(int64_t ttl_s) { return "{\"TTL\":" + Int(ttl_s) + "}"; }

std::string LeaseIdRequest(int64_t id) { return "{\"ID\":" + Int(id) + "}"; }

std::string CreateIfAbsentRequest(std::string_view key, std::string_view value, int64_t lease,
                                  std::string_view record_key) {
  std::string success = "{\"request_put\":" + PutRequest(key, value, lease) + "}";
  if (!record_key.empty()) {
    success += ",{\"request_put\":" + PutRequest(record_key, value, 0) + "}";
  }
  return "{\"compare\":[{\"key\":" + B64(key) +
         ",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
         "\"success\":[" + success + "],"
         "\"failure\":[{\"request_range\":" + RangeRequest(key) + "}]}";
}

std::string PutIfCreatedAtRequest(std::string_view guard_key, int64_t guard_create_revision,
                                  std::string_view key, std::string_view value) {
  return "{\"compare\":[{\"key\":" + B64(guard_key) +
         ",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":" +
         Int(guard_create_revision) + "}],\"success\":[{\"request_put\":" +
         PutRequest(key, value, 0) + "}]}";
}

std::string DeleteIfCreatedAtRequest(std::string_view key, int64_t create_revision) {
  return "{\"compare\":[{\"key\":" + B64(key) +
         ",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":" +
         Int(create_revision) + "}],\"success\":[{\"request_delete_range\":" +
         RangeRequest(key) + "}]}";
}

Result<std::optional<EtcdKeyValue>> DecodeRange(std::string_view body) {
  Result<JsonValue> reply = ParseReply(body);
  if (!reply.ok()) return reply.error();
  return DecodeRangeObject(*reply);
}

Result<EtcdLease> DecodeLeaseGrant(std::string_view body) {
  Result<JsonValue> reply = ParseReply(body);
  if (!reply.ok()) return reply.error();
  Result<EtcdLease> lease = DecodeLeaseObject(*reply);
  if (lease.ok() && (lease->id == 0 || lease->ttl_s <= 0)) return ErrorCode::DATA_CORRUPTED;
  return lease;
}

Result<EtcdLease> DecodeKeepAlive(std::string_view body) {
  // The keepalive is a stream: the gateway wraps each message in "result".
  Result<JsonValue> reply = ParseReply(body);
  if (!reply.ok()) return reply.error();
  const JsonValue* result = reply->Find("result");
  if (result == nullptr) return ErrorCode::DATA_CORRUPTED;
  return DecodeLeaseObject(*result);
}

Result<EtcdCreateResult> DecodeCreateIfAbsent(std::string_view body) {
  Result<JsonValue> reply = ParseReply(body);
  if (!reply.ok()) return reply.error();
  Result<bool> succeeded = JsonBool(reply->Find("succeeded"));
  Result<int64_t> revision = HeaderRevision(*reply);
  if (!succeeded.ok() || !revision.ok()) return ErrorCode::DATA_CORRUPTED;
  EtcdCreateResult out;
  out.created = *succeeded;
  if (out.created) {
    if (*revision <= 0) return ErrorCode::DATA_CORRUPTED;
    out.revision = *revision;
    return out;
  }
  // responses[0].response_range holds the current holder.
  const JsonValue* responses = reply->Find("responses");
  if (responses == nullptr || responses->type != Type::kArray || responses->items.empty()) {
    return ErrorCode::DATA_CORRUPTED;
  }
  const JsonValue* range = responses->items[0].Find("response_range");
  if (range == nullptr) return ErrorCode::DATA_CORRUPTED;
  Result<std::optional<EtcdKeyValue>> holder = DecodeRangeObject(*range);
  if (!holder.ok()) return holder.error();
  // The compare failed, so the key existed in the same revision.
  if (!holder->has_value()) return ErrorCode::DATA_CORRUPTED;
  out.holder = std::move(**holder);
  out.revision = out.holder.create_revision;
  return out;
}

Result<bool> DecodeTxnSucceeded(std::string_view body) {
  Result<JsonValue> reply = ParseReply(body);
  if (!reply.ok()) return reply.error();
  return JsonBool(reply->Find("succeeded"));
}

ErrorCode DecodeEmpty(std::string_view body) { return ParseReply(body).error(); }

std::optional<GatewayError> DecodeGatewayError(std::string_view body) {
  Result<JsonValue> json = ParseJson(body);
  if (!json.ok()) return std::nullopt;
  const JsonValue* error = json->Find("error");
  if (error == nullptr) return std::nullopt;
  GatewayError out;
  const JsonValue* holder = error->type == Type::kObject ? error : &*json;
  const JsonValue* code = holder->Find(error->type == Type::kObject ? "grpc_code" : "code");
  out.grpc_code = JsonInt64(code).ok() ? *JsonInt64(code) : 0;
  const JsonValue* message = error->type == Type::kString ? error : error->Find("message");
  out.message = message != nullptr && message->type == Type::kString ? message->text
                                                                      : WriteJson(*error);
  return out;
}

}  // namespace shelfmark::ha::etcdwire
