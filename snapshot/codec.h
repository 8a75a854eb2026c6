// Snapshot payload codecs: MessagePack (msgpack-c) compressed with zstd
// level 3, and the small text files of a snapshot.
//
// Payloads of one snapshot (object names under <snapshot_id>/):
//  - "metadata": a MessagePack array of [shard index, bin] pairs, one per
//    non-empty shard, where bin = zstd(msgpack(ShardState)); the outer array
//    is not compressed, so shards can be decompressed and decoded in parallel;
//  - "segments": zstd(msgpack(SegmentsState));
//  - "task_manager": zstd(msgpack(TasksState)).
// Every zstd frame carries its content checksum.
//
// Contracts: Encode* never fail. Decode* never crash, never read out of
// bounds and never allocate more than the input can justify: any input that
// is not exactly what Encode* produce (truncated, bit-flipped, wrong types,
// trailing bytes) is DATA_CORRUPTED; a format version this build does not
// read is VERSION_MISMATCH.
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

std::string EncodeShard(const ShardState& shard);
Result<ShardState> DecodeShard(std::string_view bytes);

// The "metadata" payload from already-encoded shards (index, EncodeShard bytes).
std::string EncodeMetadata(const std::vector<std::pair<uint32_t, std::string>>& shards);
// Splits "metadata" into (index, encoded shard) views into `bytes`; indexes
// must be < 1024 and strictly increasing.
Result<std::vector<std::pair<uint32_t, std::string_view>>> SplitMetadata(std::string_view bytes);

std::string EncodeSegments(const SegmentsState& segments);
Result<SegmentsState> DecodeSegments(std::string_view bytes);
std::string EncodeTasks(const TasksState& tasks);
Result<TasksState> DecodeTasks(std::string_view bytes);

// manifest.txt: "format=...\nversion=1\nsnapshot_id=...\n" then
// "<payload>_bytes=N\n" for metadata, segments and task_manager.
struct Manifest {
  std::string format{kSnapshotFormat};
  uint32_t version = kSnapshotVersion;
  std::string snapshot_id;
  uint64_t metadata_bytes = 0;
  uint64_t segments_bytes = 0;
  uint64_t task_manager_bytes = 0;
};
std::string EncodeManifest(const Manifest& m);
// DATA_CORRUPTED for a malformed file, VERSION_MISMATCH for another format
// name or version.
Result<Manifest> DecodeManifest(std::string_view text);

// descriptor.txt: "sequence_boundary=N\nview_version=N\ncreated_unix_ms=N\n".
struct SnapshotDescriptor {
  uint64_t sequence_boundary = 0;  // next replica id at the snapshot
  uint64_t view_version = 0;
  int64_t created_unix_ms = 0;
};
std::string EncodeDescriptor(const SnapshotDescriptor& d);
Result<SnapshotDescriptor> DecodeDescriptor(std::string_view text);

// Snapshot ids sort by creation time: "YYYYMMDD_HHMMSS_mmm" (UTC).
std::string SnapshotIdAt(int64_t unix_ms);
bool ValidSnapshotId(std::string_view id);

}  // namespace shelfmark
