#include "snapshot/snapshot_catalog.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "snapshot/codec.h"

namespace shelfmark {
namespace {

// Keys under the cluster prefix, grouped by snapshot id: id -> object names.
using ObjectsById = std::map<std::string, std::vector<std::string>, std::greater<>>;

ObjectsById GroupById(const std::vector<std::string>& keys, std::string_view prefix) {
  ObjectsById by_id;
  for (const std::string& key : keys) {
    if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string_view rest = std::string_view(key).substr(prefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) continue;  // latest.txt and other loose files
    std::string_view id = rest.substr(0, slash);
    if (!ValidSnapshotId(id)) continue;
    by_id[std::string(id)].emplace_back(rest.substr(slash + 1));
  }
  return by_id;
}

bool Complete(const std::vector<std::string>& names) {
  return std::all_of(std::begin(kSnapshotObjects), std::end(kSnapshotObjects),
                     [&](std::string_view want) {
                       return std::find(names.begin(), names.end(), want) != names.end();
                     });
}

std::string_view TrimLine(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

SnapshotCatalog::SnapshotCatalog(ObjectStore* store, std::string cluster_id)
    : store_(store), cluster_id_(std::move(cluster_id)) {}

std::string SnapshotCatalog::ClusterPrefix() const {
  return std::string(kSnapshotRoot) + "/" + cluster_id_ + "/";
}

std::string SnapshotCatalog::ObjectKey(std::string_view snapshot_id,
                                       std::string_view name) const {
  return ClusterPrefix() + std::string(snapshot_id) + "/" + std::string(name);
}

std::string SnapshotCatalog::LatestKey() const {
  return ClusterPrefix() + std::string(kLatestObject);
}

Result<std::string> SnapshotCatalog::ReadId(const std::string& key, std::string* problem) const {
  Result<std::string> text = store_->Get(key);
  if (!text.ok()) {
    if (text.error() == ErrorCode::FILE_NOT_FOUND) return std::string();
    return text.error();
  }
  std::string_view id = TrimLine(*text);
  if (ValidSnapshotId(id)) return std::string(id);
  if (problem != nullptr) {
    *problem = key + " holds no valid snapshot id (" + std::to_string(text->size()) + " bytes)";
  }
  return std::string();
}

Result<std::string> SnapshotCatalog::Latest(std::string* problem) const {
  return ReadId(LatestKey(), problem);
}

std::string SnapshotCatalog::ProtectedKey() const {
  return ClusterPrefix() + std::string(kProtectedObject);
}

Result<std::string> SnapshotCatalog::Protected(std::string* problem) const {
  return ReadId(ProtectedKey(), problem);
}

ErrorCode SnapshotCatalog::WriteId(const std::string& key, std::string_view snapshot_id) const {
  if (!ValidSnapshotId(snapshot_id)) return ErrorCode::INVALID_PARAMS;
  return store_->Put(key, std::string(snapshot_id) + "\n");
}

ErrorCode SnapshotCatalog::SetProtected(std::string_view snapshot_id) const {
  return WriteId(ProtectedKey(), snapshot_id);
}

ErrorCode SnapshotCatalog::ClearProtected() const { return store_->Remove(ProtectedKey()); }

ErrorCode SnapshotCatalog::SetLatest(std::string_view snapshot_id) const {
  return WriteId(LatestKey(), snapshot_id);
}

Result<std::vector<SnapshotCatalog::Listed>> SnapshotCatalog::List() const {
  std::string prefix = ClusterPrefix();
  Result<std::vector<std::string>> keys = store_->List(prefix);
  if (!keys.ok()) return keys.error();
  std::vector<Listed> listed;
  for (const auto& [id, names] : GroupById(*keys, prefix)) {
    listed.push_back(Listed{id, Complete(names)});
  }
  return listed;
}

Result<std::vector<std::string>> SnapshotCatalog::Candidates(std::string* problem,
                                                             std::string_view first) const {
  Result<std::string> latest = Latest(problem);
  if (!latest.ok()) return latest.error();
  Result<std::vector<Listed>> listed = List();
  if (!listed.ok()) return listed.error();
  std::vector<std::string> ids;
  const bool first_listed = std::any_of(listed->begin(), listed->end(),
                                        [&](const Listed& l) { return l.id == first; });
  if (first_listed) ids.emplace_back(first);
  if (!latest->empty() && (ids.empty() || ids.front() != *latest)) ids.push_back(*latest);
  bool latest_listed = false;
  for (const Listed& l : *listed) {
    if (l.id != *latest && l.id != first) ids.push_back(l.id);
    latest_listed = latest_listed || l.id == *latest;
  }
  if (problem != nullptr && !latest->empty() && !latest_listed) {
    *problem = LatestKey() + " names " + *latest + ", which is not in the store";
  }
  return ids;
}

ErrorCode SnapshotCatalog::Discard(std::string_view id) const {
  if (!ValidSnapshotId(id)) return ErrorCode::INVALID_PARAMS;
  for (std::string_view name : kSnapshotObjects) {
    ErrorCode rc = store_->Remove(ObjectKey(id, name));
    if (rc != ErrorCode::OK) return rc;
  }
  return ErrorCode::OK;
}

Result<std::vector<std::string>> SnapshotCatalog::ApplyRetention(size_t keep) const {
  if (keep == 0) return ErrorCode::INVALID_PARAMS;
  Result<std::string> latest = Latest();
  if (!latest.ok()) return latest.error();
  Result<std::string> kept = Protected();
  if (!kept.ok()) return kept.error();
  std::string prefix = ClusterPrefix();
  Result<std::vector<std::string>> keys = store_->List(prefix);
  if (!keys.ok()) return keys.error();
  std::vector<std::string> deleted;
  size_t complete_kept = 0;
  for (const auto& [id, names] : GroupById(*keys, prefix)) {  // newest first
    bool complete = Complete(names);
    if (id == *kept) continue;  // never counted against `keep`
    if (id == *latest || (complete && complete_kept < keep)) {
      complete_kept += complete ? 1 : 0;
      continue;
    }
    for (const std::string& name : names) {
      ErrorCode rc = store_->Remove(ObjectKey(id, name));
      if (rc != ErrorCode::OK) return rc;
    }
    deleted.push_back(id);
  }
  return deleted;
}

}  // namespace shelfmark
