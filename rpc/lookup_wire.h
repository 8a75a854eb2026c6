// The lookup channel's messages (docs/client.md, "The lookup channel"): a
// plain request/reply protocol on the master's RPC port for the one call
// every get makes, GetReplicaList (single and batched), plus the token
// handshake it needs. Cap'n Proto RPC costs a lookup several extra
// syscalls and wake-ups per call (a separate Finish message, a message read
// in pieces); here one request is one write and one reply one read.
//
// Framing, both directions, little-endian (common/wire_bytes.h):
//   frame   = tag u32 (kLookupFrameTag, "SMLK") | body_bytes u32 | body
// The tag is what the master's RPC port tells the two protocols apart by: a
// Cap'n Proto stream starts with its segment count minus one, which is never
// this large (Cap'n Proto refuses more than 512 segments).
//
//   request = op u8 | payload
//     kChallenge      (no payload)
//     kAuthenticate   client_nonce bytes | proof bytes
//     kGet            tenant bytes | key bytes
//     kBatchGet       tenant bytes | count u32 | count x key bytes
//   reply   = code i32 (the whole call's ErrorCode) | payload
//     kChallenge      required u8 | server_nonce bytes
//     kAuthenticate   server_proof bytes
//     kGet            response                      (when code is OK)
//     kBatchGet       count u32 | count x item      (when code is OK)
//   item     = code i32 | response (when that code is OK)
//   response = size u64 | has_checksum u8 | checksum u64 | data_type u8 |
//              lease_ttl_ms i64 | count u32 | count x replica
//   replica  = id u64 | status u8 | type u8 | then for MEMORY: endpoint
//              bytes | protocol bytes | buffer_address u64 | size u64 |
//              rkey bytes | segment_id (hi u64, lo u64); for LOCAL_DISK:
//              client_id (hi u64, lo u64) | object_size u64 | endpoint bytes
//   bytes    = length u32 | the bytes
// Replies come in request order; a client may send several requests before
// reading their replies.
//
// Decoding never reads out of bounds and never trusts a count beyond what
// the bytes can hold: anything that is not exactly what the encoders write
// (truncated, trailing bytes, an unknown op, enum values out of range) is
// INVALID_PARAMS for a request and RPC_FAIL for a reply; a reply code that
// is no ErrorCode decodes as INTERNAL_ERROR (ErrorCodeFromInt).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error_code.h"
#include "common/result.h"
#include "common/types.h"
#include "common/uuid.h"
#include "common/wire_bytes.h"

namespace shelfmark {

inline constexpr uint32_t kLookupFrameTag = 0x4b4c4d53;  // "SMLK"
inline constexpr size_t kLookupHeaderBytes = 8;

// Ops 1-4 are lookups and the handshake (this file); 5-14 are the
// mutations and existence checks of rpc/mutation_wire.h.
enum class LookupOp : uint8_t {
  kChallenge = 1,
  kAuthenticate = 2,
  kGet = 3,
  kBatchGet = 4,
  kPutStart = 5,
  kPutEnd = 6,
  kPutRevoke = 7,
  kBatchPutStart = 8,
  kBatchPutEnd = 9,
  kBatchPutRevoke = 10,
  kExist = 11,
  kBatchExist = 12,
  kRemove = 13,
  kBatchRemove = 14,
  kReservePut = 15,
  kCommitPut = 16,
  kBatchReservePut = 17,
  kBatchCommitPut = 18,
};

// --- frames ------------------------------------------------------------------
// Appends a frame header to *out and returns where the frame starts;
// EndLookupFrame then writes its body size (everything appended since).
size_t BeginLookupFrame(std::string* out);
void EndLookupFrame(std::string* out, size_t start);
// The body size of the frame whose header is the first kLookupHeaderBytes
// of `header`; false when they do not start with kLookupFrameTag (or are
// fewer).
bool ParseLookupHeader(std::string_view header, uint32_t* body_bytes);

// --- requests (the client writes, the master reads) --------------------------
// Each appends one whole frame.
void AppendChallengeRequest(std::string* out);
void AppendAuthenticateRequest(std::string_view client_nonce, std::string_view proof,
                               std::string* out);
void AppendGetRequest(std::string_view tenant, std::string_view key, std::string* out);
void AppendBatchGetRequest(std::string_view tenant, const std::vector<std::string>& keys,
                           std::string* out);

// A decoded request: views into the frame body it came from.
// Mutation ops (rpc/mutation_wire.h) fill the fields their payload has.
struct LookupRequest {
  LookupOp op = LookupOp::kGet;
  std::string_view client_nonce, proof;  // kAuthenticate
  std::string_view tenant;               // every op but the handshake's
  std::string_view key;                  // single-key ops
  std::vector<std::string_view> keys;    // batch ops (capacity reused across calls)
  UUID client;                           // the put ops
  uint64_t size = 0;                     // kPutStart, kReservePut
  uint64_t reservation = 0;              // kCommitPut
  std::vector<uint64_t> reservations;    // kBatchCommitPut (one per key)
  bool renew = false;                    // kCommitPut, kBatchCommitPut
  std::vector<uint64_t> sizes;           // kBatchPutStart, kBatchReservePut
  // kBatchPutStart, kBatchPutEnd, kBatchCommitPut (empty: none)
  std::vector<uint64_t> checksums;
  std::optional<uint64_t> end_checksum;  // kPutEnd
  PutConfig config;                      // the put ops but kPutEnd, kPutRevoke, kBatchPutEnd/Revoke
  ReplicaType type = ReplicaType::MEMORY;  // kPutEnd, kPutRevoke
  bool force = false;                    // kRemove, kBatchRemove
};
// INVALID_PARAMS for a malformed body or a batch of more than `max_batch`
// keys. Names are not validated here (the directory does that per key).
ErrorCode DecodeLookupRequest(std::string_view body, size_t max_batch, LookupRequest* out);

// --- replies (the master writes, the client reads) ---------------------------
void AppendChallengeReply(ErrorCode code, bool required, std::string_view server_nonce,
                          std::string* out);
void AppendAuthenticateReply(ErrorCode code, std::string_view server_proof, std::string* out);
// A reply that is only a code (a refused call of any op).
void AppendCodeReply(ErrorCode code, std::string* out);
void AppendGetReply(const Result<GetReplicaListResponse>& result, std::string* out);
// The same from a code and, when it is OK, the response.
void AppendGetReply(ErrorCode code, const GetReplicaListResponse& response, std::string* out);
// A batch reply, built item by item: BeginBatchGetReply, one AppendBatchItem
// per key in order, then EndLookupFrame(out, start).
size_t BeginBatchGetReply(uint32_t count, std::string* out);
void AppendBatchItem(const Result<GetReplicaListResponse>& result, std::string* out);
void AppendBatchItem(ErrorCode code, const GetReplicaListResponse& response, std::string* out);

struct ChallengeReply {
  bool required = false;
  std::string server_nonce;
};
// Each takes one reply frame's body. The outer Result is the whole call's
// code, or RPC_FAIL when the body is malformed.
Result<ChallengeReply> DecodeChallengeReply(std::string_view body);
Result<std::string> DecodeAuthenticateReply(std::string_view body);
Result<GetReplicaListResponse> DecodeGetReply(std::string_view body);
// RPC_FAIL also when the reply does not hold exactly `expected` items.
Result<std::vector<Result<GetReplicaListResponse>>> DecodeBatchGetReply(std::string_view body,
                                                                        size_t expected);

// The pieces rpc/mutation_wire.cc builds on (same encodings).
namespace lookup_wire_internal {
inline constexpr size_t kMinKeyBytes = 4;       // an empty length-prefixed string
inline constexpr size_t kMinItemBytes = 4;      // a code alone
inline constexpr size_t kMinReplicaBytes = 10;  // id, status, type
void PutUuid(wire::Appender& a, const UUID& id);
UUID GetUuid(wire::Reader& r);
// Reads an enum stored as u8 whose values run 0..max; false when out of range.
template <typename E>
bool GetEnum(wire::Reader& r, uint8_t max, E* out) {
  const uint8_t v = r.Get<uint8_t>();
  *out = static_cast<E>(v);
  return v <= max;
}
void PutReplica(wire::Appender& a, const ReplicaDescriptor& d);
bool GetReplica(wire::Reader& r, ReplicaDescriptor* d);
// A batch reply's items after its OK code: count u32 (must be `expected`) |
// count x (code i32 | a T, read by get_one(r, &t), when the code is OK);
// RPC_FAIL when malformed or followed by anything.
template <typename T, typename GetOne>
Result<std::vector<Result<T>>> GetItems(wire::Reader& r, size_t expected, GetOne&& get_one) {
  const uint32_t count = r.Get<uint32_t>();
  if (count != expected || count > r.left() / kMinItemBytes) return ErrorCode::RPC_FAIL;
  std::vector<Result<T>> items;
  items.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const ErrorCode code = ErrorCodeFromInt(r.Get<int32_t>());
    if (code != ErrorCode::OK) {
      items.emplace_back(code);
      continue;
    }
    T value{};
    if (!get_one(r, &value)) return ErrorCode::RPC_FAIL;
    items.emplace_back(std::move(value));
  }
  if (!r.done()) return ErrorCode::RPC_FAIL;
  return items;
}
// `count` keys into out->keys; false when over `max_batch` or the bytes left.
bool GetKeys(wire::Reader& r, size_t max_batch, std::vector<std::string_view>* keys);
}  // namespace lookup_wire_internal

}  // namespace shelfmark
