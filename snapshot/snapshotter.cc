#include "snapshot/snapshotter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>

#include "snapshot/codec.h"
#include "snapshot/snapshot_child.h"

namespace shelfmark {
namespace {

constexpr int kPollMs = 20;

int64_t MonoNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double MsSince(int64_t start_ns) { return static_cast<double>(MonoNs() - start_ns) / 1e6; }

// Reads what is available of the report without blocking; true at EOF.
bool DrainReport(int fd, ChildReport* report, size_t* have) {
  char* dst = reinterpret_cast<char*>(report);
  while (true) {
    char scratch[64];
    bool into_report = *have < sizeof(ChildReport);
    ssize_t n = into_report ? read(fd, dst + *have, sizeof(ChildReport) - *have)
                            : read(fd, scratch, sizeof(scratch));
    if (n > 0) {
      if (into_report) *have += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

void Fail(SnapshotResult* r, ErrorCode code, std::string_view stage) {
  if (r->code != ErrorCode::OK) return;  // keep the first failure
  r->code = code;
  r->failed_stage = std::string(stage);
}

}  // namespace

Snapshotter::Snapshotter(Directory* directory, ObjectStore* store, SnapshotterOptions options)
    : directory_(directory), store_(store), options_(std::move(options)) {}

Snapshotter::~Snapshotter() { Stop(); }

void Snapshotter::Start() {
  MutexLock lock(&loop_mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void Snapshotter::Stop() {
  {
    MutexLock lock(&loop_mu_);
    stopping_ = true;
  }
  stop_requested_.store(true);
  loop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Snapshotter::Loop() {
  MutexLock lock(&loop_mu_);
  while (true) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.interval_ms);
    while (!stopping_ && std::chrono::steady_clock::now() < deadline) {
      loop_cv_.wait_until(lock, deadline);
    }
    if (stopping_) return;
    lock.unlock();
    if (!options_.should_take || options_.should_take()) TakeSnapshotNow();
    lock.lock();
  }
}

std::string Snapshotter::NextSnapshotId() {
  // Ids must grow even when two snapshots fall into one millisecond.
  last_id_ms_ = std::max(UnixMs(), last_id_ms_ + 1);
  return SnapshotIdAt(last_id_ms_);
}

SnapshotResult Snapshotter::TakeSnapshotNow() {
  SnapshotResult result = Run();
  {
    MutexLock lock(&stats_mu_);
    (result.code == ErrorCode::OK ? stats_.succeeded : stats_.failed)++;
    stats_.last = result;
  }
  if (result.code == ErrorCode::OK) {
    std::fprintf(stderr,
                 "shelfmark-master: snapshot %s: %llu objects, %llu bytes, pause %.2f ms, "
                 "child %.0f ms, copy-on-write %llu bytes\n",
                 result.snapshot_id.c_str(), static_cast<unsigned long long>(result.objects),
                 static_cast<unsigned long long>(result.snapshot_bytes), result.fork_pause_ms,
                 result.child_ms, static_cast<unsigned long long>(result.cow_bytes));
  } else {
    std::fprintf(stderr, "shelfmark-master: snapshot %s failed at %s: %s (%s%s%s)%s\n",
                 result.snapshot_id.c_str(), result.failed_stage.c_str(),
                 std::string(ErrorCodeName(result.code)).c_str(), store_->Describe().c_str(),
                 result.detail.empty() ? "" : ": ", result.detail.c_str(),
                 result.discarded ? "; its partial objects were deleted" : "");
  }
  if (options_.on_result) options_.on_result(result);
  return result;
}

SnapshotResult Snapshotter::Run() {
  MutexLock lock(&run_mu_);
  SnapshotResult result;
  PublishParams params;
  params.cluster_id = options_.cluster_id;
  params.snapshot_id = NextSnapshotId();
  params.created_unix_ms = last_id_ms_;
  params.retention_count = options_.retention_count;
  params.stage_hook = options_.child_stage_hook;
  result.snapshot_id = params.snapshot_id;

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    Fail(&result, ErrorCode::INTERNAL_ERROR, "fork");
    return result;
  }
  int64_t pause_start = MonoNs();
  pid_t pid = -1;
  const pid_t parent = getpid();
  directory_->RunPaused([&] {
    pid = fork();
    if (pid == 0) {
      close(fds[0]);
      RunSnapshotChild(*directory_, *store_, params, parent, fds[1]);
    }
  });
  result.fork_pause_ms = MsSince(pause_start);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    Fail(&result, ErrorCode::INTERNAL_ERROR, "fork");
    return result;
  }
  Reap(pid, fds[0], MonoNs(), &result);
  close(fds[0]);
  return result;
}

void Snapshotter::Reap(pid_t pid, int report_fd, int64_t start_ns, SnapshotResult* result) {
  fcntl(report_fd, F_SETFL, fcntl(report_fd, F_GETFL) | O_NONBLOCK);
  const int64_t deadline_ns = start_ns + options_.child_timeout_ms * 1'000'000;
  ChildReport report;
  size_t have = 0;
  bool eof = false;
  int status = 0;
  while (true) {
    if (!eof) {
      pollfd p{report_fd, POLLIN, 0};
      poll(&p, 1, kPollMs);
      eof = DrainReport(report_fd, &report, &have);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
    }
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    bool stop = stop_requested_.load();
    if (stop || MonoNs() >= deadline_ns) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      Fail(result, ErrorCode::INTERNAL_ERROR, stop ? "stopped" : "timeout");
      break;
    }
  }
  result->child_ms = MsSince(start_ns);
  DrainReport(report_fd, &report, &have);
  if (have == sizeof(ChildReport)) {
    result->snapshot_bytes = report.snapshot_bytes;
    result->cow_bytes = report.cow_bytes;
    result->objects = report.objects;
    if (report.code != 0) {
      Fail(result, ErrorCodeFromInt(report.code),
           SnapshotStageName(static_cast<SnapshotStage>(report.stage)));
      report.detail[sizeof(report.detail) - 1] = '\0';
      result->detail = report.detail;
      result->discarded = report.discarded != 0;
    }
  }
  bool clean_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!clean_exit || have != sizeof(ChildReport)) {
    Fail(result, ErrorCode::INTERNAL_ERROR, WIFSIGNALED(status) ? "killed" : "child");
  }
}

SnapshotterStats Snapshotter::Stats() const {
  MutexLock lock(&stats_mu_);
  return stats_;
}

}  // namespace shelfmark
