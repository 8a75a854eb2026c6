// The JSON bodies of etcd's v3 gRPC gateway (etcd 3.4: POST /v3/...): the
// requests EtcdClient sends and the decoding of the replies it gets, kept
// apart from the HTTP so that they are tested and fuzzed without a server.
//
// The gateway speaks protobuf's JSON mapping: `bytes` fields (keys, values)
// are base64, int64 fields are strings, and a field holding its default
// (0, false, empty) is left out, so an absent field reads as its default.
// Every decoder takes untrusted text and answers a value or DATA_CORRUPTED
// (ETCD_OPERATION_ERROR when the reply is a well-formed gateway error).
//
// Thread safety: reentrant, no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace shelfmark::ha {

// One key of etcd (mvccpb.KeyValue), key and value decoded.
struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_s = 0;  // as granted (or, after a keepalive, as renewed) by etcd
};

// What a create-if-absent transaction found.
struct EtcdCreateResult {
  bool created = false;
  // created: the new key's create_revision (the transaction's revision);
  // else the current holder's key.
  int64_t revision = 0;
  EtcdKeyValue holder;
};

namespace etcdwire {

// Request bodies.
std::string RangeRequest(std::string_view key);
std::string PutRequest(std::string_view key, std::string_view value, int64_t lease);
std::string LeaseGrantRequest(int64_t ttl_s);
std::string LeaseIdRequest(int64_t id);  // keepalive and revoke
// Txn: if create_revision(key) == 0 then put(key, value, lease) [and
// put(record_key, value) without a lease, when record_key is not empty]
// else range(key).
std::string CreateIfAbsentRequest(std::string_view key, std::string_view value, int64_t lease,
                                  std::string_view record_key = {});
// Txn: if create_revision(guard_key) == guard_create_revision then
// put(key, value) (no lease).
std::string PutIfCreatedAtRequest(std::string_view guard_key, int64_t guard_create_revision,
                                  std::string_view key, std::string_view value);
// Txn: if create_revision(key) == create_revision then delete(key).
std::string DeleteIfCreatedAtRequest(std::string_view key, int64_t create_revision);

// Reply decoders.
Result<std::optional<EtcdKeyValue>> DecodeRange(std::string_view body);
Result<EtcdLease> DecodeLeaseGrant(std::string_view body);
// ttl_s == 0: etcd no longer knows the lease (expired or revoked).
Result<EtcdLease> DecodeKeepAlive(std::string_view body);
Result<EtcdCreateResult> DecodeCreateIfAbsent(std::string_view body);
// Whether the transaction's compare held (the key was deleted).
Result<bool> DecodeTxnSucceeded(std::string_view body);
// Any reply without a gateway error (put, revoke).
ErrorCode DecodeEmpty(std::string_view body);

// A gateway error reply: {"error": "...", "code": N} on unary calls,
// {"error": {"grpc_code": N, "message": "..."}} on the streaming keepalive.
struct GatewayError {
  int64_t grpc_code = 0;  // 5: NOT_FOUND (e.g. an unknown lease)
  std::string message;
};
// nullopt when `body` is not a gateway error.
std::optional<GatewayError> DecodeGatewayError(std::string_view body);

}  // namespace etcdwire
}  // namespace shelfmark::ha
