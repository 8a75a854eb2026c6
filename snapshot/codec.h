// Snapshot payload codecs: MessagePack (msgpack-c) compressed with zstd
// level 3, and the small text files of a snapshot.
//
// Payloads of one snapshot (object names under <snapshot_id>/):
//  - "metadata": [version, [[shard index, bin], ...]], one pair per non-empty
//    shard, where bin = EncodeShard(...); this outer MessagePack is not
//    compressed, so shards can be decompressed and decoded in parallel;
//  - "segments": zstd(msgpack(SegmentsState));
//  - "task_manager": zstd(msgpack(TasksState)).
// Every zstd frame is a single frame that records its content size and
// carries its content checksum.
//
// MessagePack layout: explicit arrays (no maps), fields in this order; UUIDs
// are bin of 16 bytes (hi then lo, big-endian), Segment::rkey is bin, other
// strings are str, enums are their unsigned values:
//   shard    [version, index, [object...], [group...]]
//   object   [tenant, key, writer, size, has_checksum, checksum, data_type,
//             hard_pin, lease_remaining_ms, soft_pin_remaining_ms,
//             put_age_ms, group, [replica...]]
//   replica  [id, status, type, owner, offset]
//   group    [tenant, group, [member...]]
//   segments [version, view_version, next_replica_id, [segment state...],
//             [disk...]]
//   segment state [owner, [id, name, base, size, endpoint, protocol, rkey],
//                  alignment, [[offset, length]...]]
//   disk     [client, endpoint, enable_offloading]
//   tasks    [version, [[client, [[tenant, key, size]...]]...]]
// `version` is kSnapshotVersion; a new field means a new version.
//
// Contracts: Encode* never fail (strings are < 4 GiB: keys and names are far
// shorter). Decode* never crash, never read out of bounds and never allocate
// more than the input can justify: any input that is not exactly what
// Encode* produce (truncated, bit-flipped, wrong types, trailing bytes, enum
// values out of range, UUIDs not 16 bytes) is DATA_CORRUPTED; a format
// version this build does not read is VERSION_MISMATCH. A compressed payload
// is decompressed only when its declared size is at most 4 GiB and within
// zstd's largest possible ratio of its compressed size; decoding then needs
// memory proportional to that decompressed size.
//
// Thread safety: every function may be called from many threads at once
// (each thread keeps its own zstd contexts and scratch buffers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "directory/directory_state.h"

namespace shelfmark {

inline constexpr std::string_view kSnapshotFormat = "shelfmark-master-snapshot";
inline constexpr uint32_t kSnapshotVersion = 1;

// Precondition: shard.index < 1024 (DecodeShard rejects other indexes).
std::string EncodeShard(const ShardState& shard);
Result<ShardState> DecodeShard(std::string_view bytes);
// DecodeShard into *shard, overwriting all of it while reusing the memory its
// strings and vectors hold (a caller decoding many shards keeps one
// ShardState per thread). Same codes; on an error *shard holds an
// unspecified valid state.
ErrorCode DecodeShardInto(std::string_view bytes, ShardState* shard);

// The "metadata" payload from already-encoded shards (index, EncodeShard
// bytes). Precondition: indexes < 1024 and strictly increasing.
std::string EncodeMetadata(const std::vector<std::pair<uint32_t, std::string>>& shards);
// Splits "metadata" into (index, encoded shard) views into `bytes`; indexes
// must be < 1024 and strictly increasing.
Result<std::vector<std::pair<uint32_t, std::string_view>>> SplitMetadata(std::string_view bytes);

std::string EncodeSegments(const SegmentsState& segments);
Result<SegmentsState> DecodeSegments(std::string_view bytes);
std::string EncodeTasks(const TasksState& tasks);
Result<TasksState> DecodeTasks(std::string_view bytes);

// The zstd framing of every compressed payload (level 3, content checksum),
// exposed for tests and the fuzzer: CompressPayload(msgpack bytes) is what
// DecodeShard/DecodeSegments/DecodeTasks read.
std::string CompressPayload(std::string_view plain);
// The same framing without compression, appended to *out: one zstd frame
// of raw blocks (its content size and checksum as above), which the same
// decoders read at the cost of a copy. Costs a copy and a checksum where
// compressing costs far more CPU.
void AppendStored(std::string_view plain, std::string* out);
// EncodeShard's payload stored, not compressed (AppendStored): what
// replication batches carry, where the leader's CPU, not the link, is what
// a put waits for. DecodeShard reads it.
std::string EncodeShardStored(const ShardState& shard);
// EncodeShardStored appended to *out (no string of its own).
void AppendShardStored(const ShardState& shard, std::string* out);

// manifest.txt: "format=...\nversion=1\nsnapshot_id=...\n" then
// "<payload>_bytes=N\n" for metadata, segments and task_manager.
// Text files are "key=value\n" lines with exactly the documented keys, in
// any order; numbers are plain decimal (no sign on unsigned values, no
// leading zeros, no spaces).
struct Manifest {
  std::string format{kSnapshotFormat};
  uint32_t version = kSnapshotVersion;
  std::string snapshot_id;
  uint64_t metadata_bytes = 0;
  uint64_t segments_bytes = 0;
  uint64_t task_manager_bytes = 0;
};
std::string EncodeManifest(const Manifest& m);
// DATA_CORRUPTED for a malformed file (or a snapshot_id that is not
// ValidSnapshotId), VERSION_MISMATCH for another format name or version
// (checked before the key set, so a later version's new keys do not matter).
Result<Manifest> DecodeManifest(std::string_view text);

// descriptor.txt: "sequence_boundary=N\nview_version=N\ncreated_unix_ms=N\n".
struct SnapshotDescriptor {
  uint64_t sequence_boundary = 0;  // next replica id at the snapshot
  uint64_t view_version = 0;
  int64_t created_unix_ms = 0;
};
std::string EncodeDescriptor(const SnapshotDescriptor& d);
Result<SnapshotDescriptor> DecodeDescriptor(std::string_view text);

// Snapshot ids sort by creation time: "YYYYMMDD_HHMMSS_mmm" (UTC). unix_ms
// is clamped to [0, the last millisecond of year 9999] so ids keep their shape.
std::string SnapshotIdAt(int64_t unix_ms);
// True for exactly the ids SnapshotIdAt produces (a real UTC date and time).
bool ValidSnapshotId(std::string_view id);

}  // namespace shelfmark
