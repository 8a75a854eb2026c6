// The replication stream between a leading master and its hot standbys
// (docs/ha.md, "Replication"): framing, the handshake, state batches and
// acknowledgements. Little-endian (common/wire_bytes.h).
//
//   frame  = tag u32 (kReplicationFrameTag, "SMRP") | body_bytes u32 | body
// The tag tells the master's RPC port that a standby connects (a Cap'n Proto
// stream never starts with it, nor does a lookup channel frame).
//
// standby -> leader:
//   hello  = kHello u8 | version u8 | cluster_id bytes | client_nonce bytes
//            [| flags u8 [| id bytes]] (kHelloWatch: a watch connection;
//                                       id: the standby's published address,
//                                       its name in the in-sync set)
//   proof  = kProof u8 | proof bytes        (Prove(token, kMasterClientLabel,
//                                            {server_nonce, client_nonce}))
//   ack    = kAck u8 | seq u64              (every batch up to seq applied)
// leader -> standby:
//   challenge = kChallenge u8 | code i32 | required u8 | server_nonce bytes
//   welcome   = kWelcome u8 | code i32 | server_proof bytes
//   batch     = kBatch u8 | flags u8 | seq u64 | has_segments u8 |
//               [segments bytes (snapshot/codec.h EncodeSegments)] |
//               shard_count u32 | shard_count x (EncodeShard bytes) |
//               removed_count u32 | removed_count x (tenant bytes | key bytes) |
//               held_count u32 | held_count x (id u64 | segment hi u64 | lo u64 |
//                                              offset u64 | size u64 | remaining_ms i64) |
//               released_count u32 | released_count x id u64
//               (held ranges added and released: directory/held_ranges.h)
// A batch's objects may come in any shard's ShardState (the leader ships one
// per batch); the standby files each by its own key. Batch flags: kReset (the standby drops its
// state first: a full copy follows), kSynced (the full copy is complete with this batch).
//   bytes = length u32 | the bytes
//
// Decoding never reads out of bounds and never trusts a count beyond what
// the bytes can hold; anything malformed is DATA_CORRUPTED (the connection
// then ends).
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "directory/directory_state.h"

namespace shelfmark {

inline constexpr uint32_t kReplicationFrameTag = 0x50524d53;  // "SMRP"
inline constexpr size_t kReplicationHeaderBytes = 8;
// 2: batches carry held ranges.
inline constexpr uint8_t kReplicationVersion = 2;
inline constexpr size_t kHeldRangeBytes = 48;  // id, segment (2 x u64), offset, size, remaining

enum class ReplicationMsg : uint8_t {
  kHello = 1,
  kProof = 2,
  kAck = 3,
  kChallenge = 4,
  kWelcome = 5,
  kBatch = 6,
};

inline constexpr uint8_t kBatchReset = 1;
inline constexpr uint8_t kBatchSynced = 2;

// A watch connection (after the handshake neither side sends anything):
// the leader holds it open while it ships, so the standby sees it end in
// order (FIN) when the leader's process dies. The data stream cannot tell
// as surely: a process killed with unread acknowledgements in its socket
// resets it (docs/ha.md, "A dead leader's lease").
inline constexpr uint8_t kHelloWatch = 1;

struct ReplicationHello {
  std::string cluster_id;
  std::string client_nonce;
  uint8_t flags = 0;  // kHelloWatch
  std::string id;     // "" : none given
};
struct ReplicationChallenge {
  ErrorCode code = ErrorCode::OK;
  bool required = false;
  std::string server_nonce;
};
struct ReplicationWelcome {
  ErrorCode code = ErrorCode::OK;
  std::string server_proof;
};
struct ReplicationBatch {
  uint8_t flags = 0;
  ChangeSet changes;
};

// Each Append* adds one whole frame to *out.
void AppendHello(const ReplicationHello& hello, std::string* out);
void AppendProof(std::string_view proof, std::string* out);
void AppendAck(uint64_t seq, std::string* out);
void AppendChallenge(const ReplicationChallenge& c, std::string* out);
void AppendWelcome(const ReplicationWelcome& w, std::string* out);
// A batch's shards are stored zstd frames (snapshot/codec.h,
// EncodeShardStored: a put waits for the leader to encode them); a full
// copy's (AppendCopyBatch) are compressed: the whole directory travels once.
// DecodeBatch reads both.
void AppendBatch(const ReplicationBatch& batch, std::string* out);
void AppendCopyBatch(const ReplicationBatch& batch, std::string* out);

// The body size of the frame whose header starts `header`; false when it
// does not start with the tag (or is shorter than a header).
bool ParseReplicationHeader(std::string_view header, uint32_t* body_bytes);
// The message type of a frame body (its first byte); DATA_CORRUPTED when empty.
Result<ReplicationMsg> MessageOf(std::string_view body);

Result<ReplicationHello> DecodeHello(std::string_view body);
Result<std::string> DecodeProof(std::string_view body);
Result<uint64_t> DecodeAck(std::string_view body);
Result<ReplicationChallenge> DecodeChallenge(std::string_view body);
Result<ReplicationWelcome> DecodeWelcome(std::string_view body);
Result<ReplicationBatch> DecodeBatch(std::string_view body);

}  // namespace shelfmark
