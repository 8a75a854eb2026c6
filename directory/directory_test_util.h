// Test helpers shared by the directory's tests and the tests built on it
// (snapshot, control, tests/): a Directory without its background thread, a
// Segment to mount, and DirectoryFixture (a Directory on a ManualClock with
// helpers to mount segments and put).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "directory/directory.h"

namespace shelfmark {

// A Directory with `options` on `clock`, without its background thread.
inline std::unique_ptr<Directory> MakeTestDirectory(const Clock* clock,
                                                    DirectoryOptions options = {}) {
  options.clock = clock;
  options.start_background_thread = false;
  return std::make_unique<Directory>(options);
}

// A segment with a fresh id and protocol "ucx".
inline Segment MakeTestSegment(const std::string& name, uint64_t base, uint64_t size,
                               const std::string& endpoint, const std::string& rkey = "") {
  Segment s;
  s.id = UUID::Generate();
  s.name = name;
  s.base = base;
  s.size = size;
  s.endpoint = endpoint;
  s.protocol = "ucx";
  s.rkey = rkey;
  return s;
}

// Options with offload on (an SSD tier may take objects).
inline DirectoryOptions OffloadOptions() {
  DirectoryOptions o;
  o.enable_offload = true;
  return o;
}

// Options whose batches prefetch at any directory size (the pipelined loop
// of directory/batch_pipeline.h runs on a test's few keys).
inline DirectoryOptions PrefetchingOptions() {
  DirectoryOptions o;
  o.batch_prefetch_min_keys = 0;
  return o;
}

class DirectoryFixture : public ::testing::Test {
 protected:
  explicit DirectoryFixture(DirectoryOptions options = {})
      : dir_(MakeTestDirectory(&clock_, options)) {}

  Segment MakeSegment(const std::string& name, uint64_t size, uint64_t base = 0x100000) {
    return MakeTestSegment(name, base, size, name + ":1234", "rkey-" + name);
  }

  // Mounts a segment owned by `owner` and returns it.
  Segment Mount(const UUID& owner, const std::string& name, uint64_t size = 1 << 20) {
    Segment s = MakeSegment(name, size);
    EXPECT_EQ(dir_->MountSegment(owner, s), ErrorCode::OK);
    return s;
  }

  // PutStart + PutEnd of a single object; returns PutEnd's code.
  ErrorCode Put(const std::string& key, uint64_t size = 100, PutConfig config = {},
                const std::string& tenant = "") {
    auto started = dir_->PutStart(writer_, tenant, key, size, config);
    if (!started.ok()) return started.error();
    return dir_->PutEnd(writer_, tenant, key);
  }

  // A node's previous process as a restart finds it: `node` mounted segment
  // "a" (endpoint a:1234) and its SSD store at the same endpoint, which holds
  // "disk-only" and "also-in-b" (also in segment "b", another node's).
  void MountNodeWithStore(const UUID& node) {
    Mount(node, "a");
    Mount(UUID::Generate(), "b");
    ASSERT_EQ(dir_->MountLocalDisk(node, false, "a:1234"), ErrorCode::OK);
    PutConfig on_b;
    on_b.preferred_segments = {"b"};
    on_b.checksum = 0xb;  // the store's copy is of this version
    ASSERT_EQ(Put("also-in-b", 10, on_b), ErrorCode::OK);
    auto codes = dir_->NotifyOffloadSuccess(node, {{"", "also-in-b", {1, 0, 9, 10, "a:1234"}, 0xb},
                                                   {"", "disk-only", {1, 10, 9, 10, "a:1234"}}});
    ASSERT_TRUE(codes.ok());
    ASSERT_EQ(*codes, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OK}));
  }

  // What `d` holds once MountNodeWithStore's node was superseded by `now`
  // (before `now` re-reported its store): "disk-only" is gone, "also-in-b"
  // is only in "b", and the only store registered is `now`'s, if any.
  static void ExpectOldStoreGone(Directory& d, const UUID& now) {
    EXPECT_EQ(d.GetReplicaList("", "disk-only").error(), ErrorCode::OBJECT_NOT_FOUND);
    auto kept = d.GetReplicaList("", "also-in-b");
    ASSERT_TRUE(kept.ok());
    ASSERT_EQ(kept->replicas.size(), 1u);
    EXPECT_EQ(kept->replicas[0].type, ReplicaType::MEMORY);
    EXPECT_EQ(kept->replicas[0].memory.endpoint, "b:1234");
    for (const DiskNodeState& disk : d.ExportSegmentTable().disks) EXPECT_EQ(disk.client, now);
  }

  ManualClock clock_;
  std::unique_ptr<Directory> dir_;
  UUID node_ = UUID::Generate();
  UUID writer_ = UUID::Generate();
};

}  // namespace shelfmark
