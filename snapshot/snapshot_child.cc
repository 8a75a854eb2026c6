#include "snapshot/snapshot_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "directory/directory_state.h"
#include "directory/shard.h"
#include "snapshot/codec.h"
#include "snapshot/snapshot_catalog.h"

namespace shelfmark {
namespace {

// A message to stderr with write(2) only (no stdio in the child).
void ChildLog(std::string_view text) {
  std::string line = "shelfmark-master snapshot child: " + std::string(text) + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

class Publisher {
 public:
  Publisher(Directory& d, ObjectStore& s, const PublishParams& p, ChildReport* r)
      : directory_(d), store_(s), params_(p), report_(r), catalog_(&s, p.cluster_id) {}

  ErrorCode Run();

 private:
  // Runs the hook, then `step`; records the stage on failure.
  template <typename Step>
  ErrorCode Stage(SnapshotStage stage, Step step) {
    report_->stage = static_cast<int32_t>(stage);
    if (params_.stage_hook) params_.stage_hook(SnapshotStageName(stage));
    ErrorCode rc = step();
    report_->code = static_cast<int32_t>(rc);
    return rc;
  }
  ErrorCode Write(std::string_view name, std::string_view bytes) {
    report_->snapshot_bytes += bytes.size();
    return store_.Put(catalog_.ObjectKey(params_.snapshot_id, name), bytes);
  }
  std::string EncodeAllShards();

  Directory& directory_;
  ObjectStore& store_;
  const PublishParams& params_;
  ChildReport* report_;
  SnapshotCatalog catalog_;
  Manifest manifest_;
};

std::string Publisher::EncodeAllShards() {
  std::vector<std::pair<uint32_t, std::string>> shards;
  for (uint32_t i = 0; i < kShardCount; ++i) {
    ShardState shard = directory_.ExportShard(i);
    if (shard.objects.empty() && shard.groups.empty()) continue;
    report_->objects += shard.objects.size();
    shards.emplace_back(i, EncodeShard(shard));
  }
  return EncodeMetadata(shards);
}

ErrorCode Publisher::Run() {
  manifest_.snapshot_id = params_.snapshot_id;
  SegmentsState segments;
  ErrorCode rc = Stage(SnapshotStage::kMetadata, [&] {
    std::string bytes = EncodeAllShards();
    manifest_.metadata_bytes = bytes.size();
    return Write("metadata", bytes);
  });
  if (rc != ErrorCode::OK) return rc;
  rc = Stage(SnapshotStage::kSegments, [&] {
    segments = directory_.ExportSegments();
    std::string bytes = EncodeSegments(segments);
    manifest_.segments_bytes = bytes.size();
    return Write("segments", bytes);
  });
  if (rc != ErrorCode::OK) return rc;
  rc = Stage(SnapshotStage::kTaskManager, [&] {
    std::string bytes = EncodeTasks(directory_.ExportTasks());
    manifest_.task_manager_bytes = bytes.size();
    return Write("task_manager", bytes);
  });
  if (rc != ErrorCode::OK) return rc;
  rc = Stage(SnapshotStage::kManifest,
             [&] { return Write("manifest.txt", EncodeManifest(manifest_)); });
  if (rc != ErrorCode::OK) return rc;
  rc = Stage(SnapshotStage::kDescriptor, [&] {
    SnapshotDescriptor d;
    d.sequence_boundary = segments.next_replica_id;
    d.view_version = segments.view_version;
    d.created_unix_ms = params_.created_unix_ms;
    return Write("descriptor.txt", EncodeDescriptor(d));
  });
  if (rc != ErrorCode::OK) return rc;
  rc = Stage(SnapshotStage::kLatest, [&] { return catalog_.SetLatest(params_.snapshot_id); });
  if (rc != ErrorCode::OK) return rc;
  rc = Stage(SnapshotStage::kRetention, [&] {
    return catalog_.ApplyRetention(params_.retention_count).error();
  });
  if (rc != ErrorCode::OK) return rc;
  report_->stage = static_cast<int32_t>(SnapshotStage::kDone);
  return ErrorCode::OK;
}

// Ties the child's life to the parent's: SIGKILL when the forking thread
// dies (a master killed with -9 takes its child along), and no listening
// socket of the master held open (a restarted master can bind its ports
// even while an orphan lingers).
void DetachFromParent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent died before prctl
  int max_fd = static_cast<int>(sysconf(_SC_OPEN_MAX));
  for (int fd = 3; fd < max_fd && fd < 65536; ++fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening) close(fd);
  }
}

uint64_t ParsePrivateDirtyKb(const char* text) {
  const char* at = std::strstr(text, "\nPrivate_Dirty:");
  if (at == nullptr) return 0;
  return std::strtoull(at + std::strlen("\nPrivate_Dirty:"), nullptr, 10);
}

}  // namespace

std::string_view SnapshotStageName(SnapshotStage stage) {
  switch (stage) {
    case SnapshotStage::kMetadata: return "metadata";
    case SnapshotStage::kSegments: return "segments";
    case SnapshotStage::kTaskManager: return "task_manager";
    case SnapshotStage::kManifest: return "manifest";
    case SnapshotStage::kDescriptor: return "descriptor";
    case SnapshotStage::kLatest: return "latest";
    case SnapshotStage::kRetention: return "retention";
    case SnapshotStage::kNone:
    case SnapshotStage::kDone: break;
  }
  return "";
}

ErrorCode PublishSnapshot(Directory& directory, ObjectStore& store, const PublishParams& params,
                          ChildReport* report) {
  *report = ChildReport{};
  return Publisher(directory, store, params, report).Run();
}

uint64_t SelfPrivateDirtyBytes() {
  int fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return ParsePrivateDirtyKb(buf) * 1024;
}

void RunSnapshotChild(Directory& directory, ObjectStore& store, const PublishParams& params,
                      pid_t parent, int report_fd) {
  DetachFromParent(parent);
  ChildReport report;
  ErrorCode rc = PublishSnapshot(directory, store, params, &report);
  report.cow_bytes = SelfPrivateDirtyBytes();
  if (rc != ErrorCode::OK) {
    std::string detail = store.last_error();
    std::snprintf(report.detail, sizeof(report.detail), "%s", detail.c_str());
    ChildLog("snapshot " + params.snapshot_id + " failed at " +
             std::string(SnapshotStageName(static_cast<SnapshotStage>(report.stage))) + ": " +
             std::string(ErrorCodeName(rc)) + " (" + store.Describe() + ": " + detail + ")");
    // Not published: leave nothing of it behind (a full disk would otherwise
    // collect one empty snapshot directory per interval).
    if (report.stage < static_cast<int32_t>(SnapshotStage::kLatest)) {
      SnapshotCatalog catalog(&store, params.cluster_id);
      report.discarded = catalog.Discard(params.snapshot_id) == ErrorCode::OK ? 1 : 0;
    }
  }
  ssize_t written = write(report_fd, &report, sizeof(report));
  _exit(rc == ErrorCode::OK && written == static_cast<ssize_t>(sizeof(report)) ? 0 : 1);
}

}  // namespace shelfmark
