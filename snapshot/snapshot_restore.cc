#include "snapshot/snapshot_restore.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string_view>
#include <thread>
#include <utility>

#include "directory/directory_state.h"
#include "snapshot/codec.h"
#include "snapshot/snapshot_catalog.h"

namespace shelfmark {
namespace {

// A failed step: which one and why.
struct Failure {
  std::string stage;
  ErrorCode code = ErrorCode::OK;
};

struct Payloads {
  std::string metadata, segments, tasks;
};

class CandidateRestore {
 public:
  CandidateRestore(Directory* d, ObjectStore* s, const SnapshotCatalog& c, unsigned threads)
      : directory_(d), store_(s), catalog_(c), threads_(threads) {}

  // OK when the whole snapshot `id` is in the directory; otherwise *failure.
  bool Run(const std::string& id, Failure* failure);

 private:
  Result<std::string> Read(const std::string& id, std::string_view name) {
    return store_->Get(catalog_.ObjectKey(id, name));
  }
  bool ReadChecked(const std::string& id, Payloads* p, Failure* f);
  bool RestoreShards(std::string_view metadata, Failure* f);

  Directory* directory_;
  ObjectStore* store_;
  const SnapshotCatalog& catalog_;
  unsigned threads_;
};

bool Check(ErrorCode code, std::string_view stage, Failure* f) {
  if (code == ErrorCode::OK) return true;
  *f = Failure{std::string(stage), code};
  return false;
}

bool CandidateRestore::ReadChecked(const std::string& id, Payloads* p, Failure* f) {
  Result<std::string> text = Read(id, "manifest.txt");
  if (!Check(text.error(), "manifest.txt", f)) return false;
  Result<Manifest> manifest = DecodeManifest(*text);
  if (!Check(manifest.error(), "manifest.txt", f)) return false;
  if (manifest->snapshot_id != id) return Check(ErrorCode::DATA_CORRUPTED, "manifest.txt", f);
  text = Read(id, "descriptor.txt");
  if (!Check(text.error(), "descriptor.txt", f)) return false;
  if (!Check(DecodeDescriptor(*text).error(), "descriptor.txt", f)) return false;
  struct Want {
    std::string_view name;
    uint64_t size;
    std::string* into;
  };
  for (const Want& w : {Want{"metadata", manifest->metadata_bytes, &p->metadata},
                        Want{"segments", manifest->segments_bytes, &p->segments},
                        Want{"task_manager", manifest->task_manager_bytes, &p->tasks}}) {
    Result<std::string> bytes = Read(id, w.name);
    if (!Check(bytes.error(), w.name, f)) return false;
    if (bytes->size() != w.size) return Check(ErrorCode::DATA_CORRUPTED, w.name, f);
    *w.into = std::move(*bytes);
  }
  return true;
}

bool CandidateRestore::RestoreShards(std::string_view metadata, Failure* f) {
  auto split = SplitMetadata(metadata);
  if (!Check(split.error(), "metadata", f)) return false;
  const auto& shards = *split;
  std::atomic<size_t> next{0};
  std::atomic<int32_t> first_error{0};
  auto worker = [&] {
    ShardState shard;  // reused: its strings and vectors keep their memory across shards
    for (size_t i = next++; i < shards.size() && first_error.load() == 0; i = next++) {
      ErrorCode rc = DecodeShardInto(shards[i].second, &shard);
      if (rc == ErrorCode::OK && shard.index != shards[i].first) rc = ErrorCode::DATA_CORRUPTED;
      if (rc == ErrorCode::OK) rc = directory_->RestoreShard(shard);
      if (rc != ErrorCode::OK) {
        int32_t expected = 0;
        first_error.compare_exchange_strong(expected, static_cast<int32_t>(rc));
      }
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(threads_, static_cast<unsigned>(shards.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return Check(ErrorCodeFromInt(first_error.load()), "metadata", f);
}

bool CandidateRestore::Run(const std::string& id, Failure* f) {
  Payloads p;
  if (!ReadChecked(id, &p, f)) return false;
  Result<SegmentsState> segments = DecodeSegments(p.segments);
  if (!Check(segments.error(), "segments", f)) return false;
  Result<TasksState> tasks = DecodeTasks(p.tasks);
  if (!Check(tasks.error(), "task_manager", f)) return false;
  if (!Check(directory_->RestoreSegments(*segments), "segments", f)) return false;
  if (!RestoreShards(p.metadata, f)) return false;
  return Check(directory_->RestoreTasks(*tasks), "task_manager", f);
}

}  // namespace

RestoreReport RestoreFromSnapshots(Directory* directory, ObjectStore* store,
                                   const RestoreOptions& options) {
  auto start = std::chrono::steady_clock::now();
  RestoreReport report;
  SnapshotCatalog catalog(store, options.cluster_id);
  unsigned threads = options.threads ? options.threads : std::thread::hardware_concurrency();
  Result<std::vector<std::string>> candidates = catalog.Candidates(&report.latest_problem, options.first_id);
  if (!candidates.ok()) {
    report.store_unavailable = true;
    report.rejected.push_back(catalog.ClusterPrefix() + ": list: " +
                              std::string(ErrorCodeName(candidates.error())));
  } else {
    CandidateRestore restore(directory, store, catalog, threads);
    for (const std::string& id : *candidates) {
      ++report.candidates_tried;
      Failure failure;
      if (restore.Run(id, &failure)) {
        report.restored = true;
        report.snapshot_id = id;
        break;
      }
      directory->Clear();
      if (failure.code == ErrorCode::STORE_UNAVAILABLE) report.store_unavailable = true;
      report.rejected.push_back(id + ": " + failure.stage + ": " +
                                std::string(ErrorCodeName(failure.code)));
    }
  }
  report.objects = directory->Stats().key_count;
  report.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  return report;
}

std::string DescribeRestore(const RestoreReport& r) {
  std::string text;
  if (r.restored) {
    text = "restored snapshot " + r.snapshot_id + ": " + std::to_string(r.objects) +
           " objects in " + std::to_string(static_cast<int64_t>(r.ms)) + " ms (" +
           std::to_string(r.candidates_tried) + " candidate(s) tried)";
  } else {
    text = "no usable snapshot (" + std::to_string(r.candidates_tried) +
           " candidate(s) tried); starting empty";
  }
  if (!r.latest_problem.empty()) text += "; " + r.latest_problem;
  for (const std::string& why : r.rejected) text += "; rejected " + why;
  return text;
}

}  // namespace shelfmark
