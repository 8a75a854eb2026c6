// Test fixture shared by the directory's tests: a Directory on a ManualClock
// without its background thread, and helpers to mount segments and put.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/clock.h"
#include "directory/directory.h"

namespace shelfmark {

class DirectoryFixture : public ::testing::Test {
 protected:
  explicit DirectoryFixture(DirectoryOptions options = {}) {
    options.clock = &clock_;
    options.start_background_thread = false;
    dir_ = std::make_unique<Directory>(options);
  }

  Segment MakeSegment(const std::string& name, uint64_t size, uint64_t base = 0x100000) {
    Segment s;
    s.id = UUID::Generate();
    s.name = name;
    s.base = base;
    s.size = size;
    s.endpoint = name + ":1234";
    s.protocol = "ucx";
    s.rkey = "rkey-" + name;
    return s;
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
