// Test helpers shared by the directory's tests and the tests built on it
// (snapshot, control, tests/): a Directory without its background thread, a
// Segment to mount, and DirectoryFixture (a Directory on a ManualClock with
// helpers to mount segments and put).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

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

  ManualClock clock_;
  std::unique_ptr<Directory> dir_;
  UUID node_ = UUID::Generate();
  UUID writer_ = UUID::Generate();
};

}  // namespace shelfmark
