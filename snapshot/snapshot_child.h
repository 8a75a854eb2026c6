// The work of a snapshot child: encode the directory and publish it to the
// object store, then report to the parent over a pipe.
//
// What the child may use (it is a fork of a multi-threaded process: only
// the forking thread exists, and any lock another thread held at the fork
// stays held forever):
//  - the Directory's Export* calls: the parent forked inside RunPaused, so
//    no directory operation was in flight and every shard, segment and
//    client lock is free; the snapshot lock itself is held (by the fork) and
//    must not be taken;
//  - malloc/new (glibc resets its arena locks in the child), the codecs
//    (msgpack-c, zstd: no global locks), the ObjectStore (local: plain
//    syscalls; S3: libcurl, initialised by the parent before any fork, and
//    used by no other thread of the parent);
//  - write(2) for messages: no stdio (a FILE lock may be held), no logging
//    library, no KJ event loop, no metrics registry, no thread pools;
//  - inherited descriptors other than listening sockets stay open (the
//    store may hold some); listening sockets are closed;
//  - it ends with _exit, never exit (no atexit handlers, no static
//    destructors, no flushing of the parent's stdio buffers).
//
// Thread safety: single-threaded by construction.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/error_code.h"
#include "directory/directory.h"
#include "snapshot/object_store.h"

namespace shelfmark {

enum class SnapshotStage : int32_t {
  kNone = 0,
  kMetadata,
  kSegments,
  kTaskManager,
  kManifest,
  kDescriptor,
  kLatest,
  kRetention,
  kDone,
};
// "metadata", "segments", ... ("" for kNone/kDone).
std::string_view SnapshotStageName(SnapshotStage stage);

// What the child tells the parent: a fixed-size record written once to the
// report pipe just before _exit.
struct ChildReport {
  int32_t code = 0;   // ErrorCode value
  int32_t stage = 0;  // SnapshotStage that failed (kDone on success)
  uint64_t snapshot_bytes = 0;
  uint64_t cow_bytes = 0;
  uint64_t objects = 0;
  // On failure, the store's last_error() (NUL-terminated, cut to fit).
  char detail[200] = {};
  // On failure before latest.txt: 1 when the snapshot's objects (and the
  // directories they leave empty) were deleted again.
  int32_t discarded = 0;
};

struct PublishParams {
  std::string cluster_id;
  std::string snapshot_id;
  int64_t created_unix_ms = 0;
  size_t retention_count = 2;
  std::function<void(std::string_view stage)> stage_hook;  // may be empty
};

// Encodes every non-empty shard, the segments and the tasks, and publishes
// them in order (metadata, segments, task_manager, manifest.txt,
// descriptor.txt, latest.txt, retention). Stops at the first failure and
// records it in *report. The caller keeps mutations out (see above).
ErrorCode PublishSnapshot(Directory& directory, ObjectStore& store, const PublishParams& params,
                          ChildReport* report);

// The child's whole life: ask for SIGKILL when the forking thread of
// `parent` dies, close the inherited listening sockets, PublishSnapshot,
// measure Private_Dirty, write the report to `report_fd`, _exit(0) on
// success and 1 otherwise.
[[noreturn]] void RunSnapshotChild(Directory& directory, ObjectStore& store,
                                   const PublishParams& params, pid_t parent, int report_fd);

// Private_Dirty of /proc/self/smaps_rollup in bytes; 0 when unreadable.
uint64_t SelfPrivateDirtyBytes();

}  // namespace shelfmark
