// SnapshotCatalog: where a cluster's snapshots lie in an ObjectStore, which
// of them restore should try, and which retention deletes.
//
// Key layout:
//   mooncake_master_snapshot/<cluster_id>/<snapshot_id>/metadata
//   mooncake_master_snapshot/<cluster_id>/<snapshot_id>/segments
//   mooncake_master_snapshot/<cluster_id>/<snapshot_id>/task_manager
//   mooncake_master_snapshot/<cluster_id>/<snapshot_id>/manifest.txt
//   mooncake_master_snapshot/<cluster_id>/<snapshot_id>/descriptor.txt
//   mooncake_master_snapshot/<cluster_id>/latest.txt   (the id, one line)
//   mooncake_master_snapshot/<cluster_id>/protected.txt (an id, one line;
//       only while a snapshot is protected, see SetProtected)
// A snapshot is complete when all five of its objects exist; they are
// written in the order above, then latest.txt.
//
// Contracts: the catalog never interprets payloads; ids that are not
// ValidSnapshotId are ignored (never listed, never deleted). Store errors
// come back as they are.
//
// Thread safety: a catalog holds no state of its own beyond its arguments;
// it is as thread-safe as its store.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "snapshot/object_store.h"

namespace shelfmark {

inline constexpr std::string_view kSnapshotRoot = "mooncake_master_snapshot";
inline constexpr std::string_view kLatestObject = "latest.txt";
inline constexpr std::string_view kProtectedObject = "protected.txt";
// The objects of one snapshot, in publish order.
inline constexpr std::string_view kSnapshotObjects[] = {
    "metadata", "segments", "task_manager", "manifest.txt", "descriptor.txt"};

class SnapshotCatalog {
 public:
  // `store` must outlive the catalog.
  SnapshotCatalog(ObjectStore* store, std::string cluster_id);

  // "mooncake_master_snapshot/<cluster>/".
  std::string ClusterPrefix() const;
  // "mooncake_master_snapshot/<cluster>/<id>/<name>".
  std::string ObjectKey(std::string_view snapshot_id, std::string_view name) const;
  std::string LatestKey() const;

  // The id latest.txt names; "" when there is no latest.txt or it does not
  // hold a valid id (a torn or foreign file is a reason to fall back, not to
  // fail: *problem, when given, then says what it holds).
  Result<std::string> Latest(std::string* problem = nullptr) const;
  ErrorCode SetLatest(std::string_view snapshot_id) const;

  // The protected snapshot: one that a master started serving without
  // (docs/snapshot.md, "A master that starts empty"). Retention never
  // deletes it, whoever runs retention, until ClearProtected. Protected()
  // is "" when none is (or protected.txt holds no valid id: *problem, when
  // given, then says so).
  std::string ProtectedKey() const;
  Result<std::string> Protected(std::string* problem = nullptr) const;
  ErrorCode SetProtected(std::string_view snapshot_id) const;
  ErrorCode ClearProtected() const;

  struct Listed {
    std::string id;
    bool complete = false;  // all five objects present
  };
  // Every snapshot id under the cluster prefix, newest first.
  Result<std::vector<Listed>> List() const;

  // Ids restore should try, best first: the one latest.txt names (when it
  // is valid), then every other listed id, newest first. A missing latest
  // or a latest naming a vanished snapshot only changes the order (*problem,
  // when given, says what was wrong with latest.txt); listing errors fail.
  // `first` (when not empty and listed) goes before all of them: an
  // operator's choice (--snapshot_restore_id).
  Result<std::vector<std::string>> Candidates(std::string* problem = nullptr,
                                              std::string_view first = {}) const;

  // Keeps the `keep` newest complete snapshots, the one latest.txt names and
  // the protected one;
  // deletes every object of the others (incomplete ones included). Returns
  // the ids deleted. Precondition: keep >= 1.
  Result<std::vector<std::string>> ApplyRetention(size_t keep) const;

  // Deletes every object of snapshot `id` that exists (a local store also
  // prunes the directories this leaves empty): what a snapshot that failed
  // before latest.txt named it leaves behind. OK when none exist.
  ErrorCode Discard(std::string_view id) const;

 private:
  // The valid id the one-line object `key` holds; "" when it is missing or
  // holds none (*problem then says so).
  Result<std::string> ReadId(const std::string& key, std::string* problem) const;
  // Writes `snapshot_id` as the one line of `key`; INVALID_PARAMS (nothing
  // written) unless it is a ValidSnapshotId.
  ErrorCode WriteId(const std::string& key, std::string_view snapshot_id) const;

  ObjectStore* store_;
  std::string cluster_id_;
};

}  // namespace shelfmark
