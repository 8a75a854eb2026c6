// The framed channel's mutation and existence messages (rpc/lookup_wire.h
// frames them; docs/client.md, "The lookup channel"): the calls an engine
// makes on every request besides lookups: PutStart, PutEnd, PutRevoke and
// their batch forms (an upsert is a PutStart whose config says `replace`),
// ExistKey and BatchExistKey, Remove and BatchRemove. Each mirrors the Cap'n
// Proto method of the same name (schemas/master.capnp) field for field.
// ReservePut and CommitPut (the one-round-trip put, Directory::ReservePut)
// and their batch forms exist on this channel only.
//
//   request payloads (after the op byte; uuid = hi u64 | lo u64):
//     kPutStart       client uuid | tenant bytes | key bytes | size u64 | config
//     kPutEnd         client uuid | tenant bytes | key bytes | type u8 |
//                     (optional: checksum u64, present when bytes follow)
//     kPutRevoke      client uuid | tenant bytes | key bytes | type u8
//     kBatchPutStart  client uuid | tenant bytes | config | count u32 |
//                     count x (key bytes | size u64) | has_checksums u8 |
//                     (has_checksums: count x checksum u64)
//     kBatchPutEnd    client uuid | tenant bytes | count u32 | count x key bytes |
//                     (optional: count x checksum u64, present when bytes follow)
//     kBatchPutRevoke client uuid | tenant bytes | count u32 | count x key bytes
//     kExist          tenant bytes | key bytes
//     kBatchExist     tenant bytes | count u32 | count x key bytes
//     kRemove         tenant bytes | key bytes | force u8
//     kBatchRemove    tenant bytes | force u8 | count u32 | count x key bytes
//     kReservePut     client uuid | tenant bytes | size u64 | config
//                     (the tenant is only checked against the token: a
//                     reservation belongs to no tenant until its commit)
//     kCommitPut      client uuid | tenant bytes | key bytes | reservation u64 |
//                     renew u8 | config
//     kBatchReservePut client uuid | tenant bytes | config | count u32 |
//                     count x size u64
//     kBatchCommitPut client uuid | tenant bytes | config | renew u8 | count u32 |
//                     count x (key bytes | reservation u64) | has_checksums u8 |
//                     (has_checksums: count x checksum u64)
//   config = replica_num u32 | count u32 | count x preferred segment bytes |
//            prefer_host bytes | has_checksum u8 | checksum u64 |
//            data_type u8 | hard_pin u8 | soft_pin_ttl_ms i64 |
//            group_id bytes | replace u8
//   reply payloads (after the whole call's code i32, when it is OK):
//     kPutStart       replicas
//     kBatchPutStart  count u32 | count x (code i32 | replicas when OK)
//     kPutEnd, kPutRevoke, kRemove: none
//     kBatch{PutEnd,PutRevoke,Remove}: count u32 | count x code i32
//     kExist          exists u8
//     kBatchExist     count u32 | count x (code i32 | exists u8 when OK)
//     kReservePut     grant
//     kCommitPut      has_next u8 | (has_next: grant)
//     kBatchReservePut count u32 | count x grant
//     kBatchCommitPut count u32 | count x (code i32 | when OK: has_next u8 |
//                     (has_next: grant))
//   grant = id u64 | ttl_ms i64 | replicas
//   replicas = count u32 | count x replica (rpc/lookup_wire.h)
//
// Decoding follows lookup_wire.h's rules: nothing out of bounds, counts
// bounded by the bytes left, anything not exactly what the encoders write
// is INVALID_PARAMS for a request and RPC_FAIL for a reply.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "common/uuid.h"
#include "common/wire_bytes.h"
#include "rpc/lookup_wire.h"

namespace shelfmark {

// --- requests (the client writes) --------------------------------------------
void AppendPutStartRequest(const UUID& client, std::string_view tenant, std::string_view key,
                           uint64_t size, const PutConfig& config, std::string* out);
// kPutEnd or kPutRevoke; `checksum` only with kPutEnd (PutEnd's optional
// checksum; without one the frame is what masters before it read).
void AppendPutFinishRequest(LookupOp op, const UUID& client, std::string_view tenant,
                            std::string_view key, ReplicaType type, std::string* out,
                            std::optional<uint64_t> checksum = std::nullopt);
void AppendBatchPutStartRequest(const UUID& client, std::string_view tenant,
                                const std::vector<std::string>& keys,
                                const std::vector<uint64_t>& sizes, const PutConfig& config,
                                const std::vector<uint64_t>& checksums, std::string* out);
// kBatchPutEnd or kBatchPutRevoke; `checksums` (empty or one per key)
// only with kBatchPutEnd.
void AppendBatchPutFinishRequest(LookupOp op, const UUID& client, std::string_view tenant,
                                 const std::vector<std::string>& keys, std::string* out,
                                 const std::vector<uint64_t>& checksums = {});
void AppendExistRequest(std::string_view tenant, std::string_view key, std::string* out);
void AppendBatchExistRequest(std::string_view tenant, const std::vector<std::string>& keys,
                             std::string* out);
void AppendRemoveRequest(std::string_view tenant, std::string_view key, bool force,
                         std::string* out);
void AppendBatchRemoveRequest(std::string_view tenant, const std::vector<std::string>& keys,
                              bool force, std::string* out);
void AppendReservePutRequest(const UUID& client, std::string_view tenant, uint64_t size,
                             const PutConfig& config, std::string* out);
void AppendCommitPutRequest(const UUID& client, std::string_view tenant, std::string_view key,
                            uint64_t reservation, bool renew, const PutConfig& config,
                            std::string* out);
void AppendBatchReservePutRequest(const UUID& client, std::string_view tenant,
                                  const std::vector<uint64_t>& sizes, const PutConfig& config,
                                  std::string* out);
// `checksums`: empty or one per key (each key's, replacing the config's).
void AppendBatchCommitPutRequest(const UUID& client, std::string_view tenant,
                                 const std::vector<std::string>& keys,
                                 const std::vector<uint64_t>& reservations,
                                 const std::vector<uint64_t>& checksums, bool renew,
                                 const PutConfig& config, std::string* out);

// The payload of a mutation or existence op (its op byte already read) into
// *out; false when malformed or a batch exceeds `max_batch`. The caller
// checks that nothing follows (Reader::done).
bool DecodeMutationPayload(LookupOp op, wire::Reader& r, size_t max_batch, LookupRequest* out);

// --- replies (the master writes) ---------------------------------------------
void AppendPutStartReply(const Result<std::vector<ReplicaDescriptor>>& result, std::string* out);
void AppendBatchPutStartReply(const std::vector<Result<std::vector<ReplicaDescriptor>>>& results,
                              std::string* out);
void AppendCodesReply(const std::vector<ErrorCode>& codes, std::string* out);
void AppendExistReply(const Result<bool>& result, std::string* out);
void AppendBatchExistReply(const std::vector<Result<bool>>& results, std::string* out);
void AppendReservePutReply(const Result<PutReservationGrant>& result, std::string* out);
void AppendCommitPutReply(const CommitPutResult& result, std::string* out);
void AppendBatchReservePutReply(const Result<std::vector<PutReservationGrant>>& result,
                                std::string* out);
void AppendBatchCommitPutReply(const std::vector<CommitPutResult>& results, std::string* out);

// --- reply decoding (the client reads one reply frame's body) ----------------
// The outer Result is the whole call's code, or RPC_FAIL when malformed;
// batch forms also RPC_FAIL when the reply does not hold `expected` items.
Result<std::vector<ReplicaDescriptor>> DecodePutStartReply(std::string_view body);
Result<std::vector<Result<std::vector<ReplicaDescriptor>>>> DecodeBatchPutStartReply(
    std::string_view body, size_t expected);
// A reply that is a code alone (kPutEnd, kPutRevoke, kRemove; any refusal).
ErrorCode DecodeCodeReply(std::string_view body);
Result<std::vector<ErrorCode>> DecodeCodesReply(std::string_view body, size_t expected);
Result<bool> DecodeExistReply(std::string_view body);
Result<std::vector<Result<bool>>> DecodeBatchExistReply(std::string_view body, size_t expected);
Result<PutReservationGrant> DecodeReservePutReply(std::string_view body);
// The commit's code as the error; when OK, the renewed grant if any.
Result<std::optional<PutReservationGrant>> DecodeCommitPutReply(std::string_view body);
Result<std::vector<PutReservationGrant>> DecodeBatchReservePutReply(std::string_view body,
                                                                    size_t expected);
// Each key's commit: its code as the error; when OK, its renewed grant if any.
Result<std::vector<Result<std::optional<PutReservationGrant>>>> DecodeBatchCommitPutReply(
    std::string_view body, size_t expected);

}  // namespace shelfmark
