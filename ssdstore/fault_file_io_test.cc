// FaultyFileIo over PosixFileIo on real files: chosen failures of every call
// kind, disk full, and power cuts that undo unsynced data and unsynced
// creates, renames and removes (checked on the files themselves).
#include "ssdstore/fault_file_io.h"

#include <fcntl.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <thread>

#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using Op = FaultyFileIo::Op;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

class FaultyFileIoTest : public ::testing::Test {
 protected:
  int OpenOk(const std::string& name, int flags = O_CREAT | O_RDWR) {
    auto fd = io_->Open(dir_.Join(name), flags);
    EXPECT_TRUE(fd.ok()) << name << ": " << ErrorCodeName(fd.error());
    return fd.ok() ? *fd : -1;
  }
  void Write(int fd, const std::string& s, uint64_t offset) {
    EXPECT_EQ(io_->PWrite(fd, s.data(), s.size(), offset), ErrorCode::OK);
  }
  // Every name in the directory as the disk has it (stashes included).
  std::vector<std::string> DiskNames() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // Writes `content` to a file and makes file and name durable.
  void Durable(const std::string& name, const std::string& content) {
    int fd = OpenOk(name, O_CREAT | O_RDWR | O_TRUNC);
    Write(fd, content, 0);
    EXPECT_EQ(io_->FSync(fd), ErrorCode::OK);
    EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
    EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::OK);
  }

  TempDir dir_;
  std::unique_ptr<FaultyFileIo> io_ = std::make_unique<FaultyFileIo>();
};

TEST_F(FaultyFileIoTest, FailsTheNthCallOnlyWithoutEffect) {
  int fd = OpenOk("f");
  io_->FailNext(Op::kPWrite, 2, ErrorCode::FILE_WRITE_FAIL, EIO);
  Write(fd, "aa", 0);
  errno = 0;
  EXPECT_EQ(io_->PWrite(fd, "bb", 2, 0), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(errno, EIO);
  Write(fd, "c", 1);
  EXPECT_EQ(ReadFile(dir_.Join("f")), "ac");  // the failed write did nothing
  EXPECT_EQ(io_->CallCount(Op::kPWrite), 3u);
  EXPECT_EQ(io_->CallCount(Op::kPWriteV), 0u);

  // Two pending faults of one kind fire on their own calls.
  io_->FailNext(Op::kFDataSync, 1, ErrorCode::FILE_WRITE_FAIL);
  io_->FailNext(Op::kFDataSync, 2, ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(io_->FDataSync(fd), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->FDataSync(fd), ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(io_->FDataSync(fd), ErrorCode::OK);
  io_->FailNext(Op::kFSync, 1, ErrorCode::FILE_WRITE_FAIL);
  io_->ClearFaults();
  EXPECT_EQ(io_->FSync(fd), ErrorCode::OK);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
}

TEST_F(FaultyFileIoTest, EveryKindCanFail) {
  WriteFile(dir_.Join("x"), "0123456789");
  int fd = OpenOk("x");
  iovec iov{const_cast<char*>("v"), 1};
  char buf[4];
  struct Case {
    Op op;
    std::function<ErrorCode()> call;
  };
  std::vector<Case> cases = {
      {Op::kOpen, [&] { return io_->Open(dir_.Join("x"), O_RDWR).error(); }},
      {Op::kPRead, [&] { return io_->PRead(fd, buf, 4, 0); }},
      {Op::kPWrite, [&] { return io_->PWrite(fd, "w", 1, 0); }},
      {Op::kPWriteV, [&] { return io_->PWriteV(fd, std::span<const iovec>(&iov, 1), 0); }},
      {Op::kFallocate, [&] { return io_->Fallocate(fd, 0, 100); }},
      {Op::kFDataSync, [&] { return io_->FDataSync(fd); }},
      {Op::kFSync, [&] { return io_->FSync(fd); }},
      {Op::kRename, [&] { return io_->Rename(dir_.Join("x"), dir_.Join("y")); }},
      {Op::kRemove, [&] { return io_->Remove(dir_.Join("x")); }},
      {Op::kSyncDir, [&] { return io_->SyncDir(dir_.path()); }},
      {Op::kTruncate, [&] { return io_->Truncate(fd, 0); }},
  };
  ASSERT_EQ(cases.size(), static_cast<size_t>(FaultyFileIo::kOpCount));
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(FaultyFileIo::OpName(c.op)));
    uint64_t before = io_->CallCount(c.op);
    io_->FailNext(c.op, 1, ErrorCode::INTERNAL_ERROR, EROFS);
    errno = 0;
    EXPECT_EQ(c.call(), ErrorCode::INTERNAL_ERROR);
    EXPECT_EQ(errno, EROFS);
    EXPECT_EQ(io_->CallCount(c.op), before + 1);
  }
  // None of them had an effect.
  EXPECT_EQ(ReadFile(dir_.Join("x")), "0123456789");
  EXPECT_EQ(DiskNames(), std::vector<std::string>{"x"});
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
}

TEST_F(FaultyFileIoTest, DiskFullWritesWhatFitsThenFailsWithEnospc) {
  int fd = OpenOk("f");
  io_->SetSpaceLimit(10);
  Write(fd, "123456", 0);
  errno = 0;
  EXPECT_EQ(io_->PWrite(fd, "abcdef", 6, 6), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(ReadFile(dir_.Join("f")), "123456abcd");
  iovec iov{const_cast<char*>("z"), 1};
  EXPECT_EQ(io_->PWriteV(fd, std::span<const iovec>(&iov, 1), 0), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->Fallocate(fd, 0, 4096), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(*io_->FileSize(fd), 10u);
  io_->ClearSpaceLimit();
  EXPECT_EQ(io_->Fallocate(fd, 0, 4096), ErrorCode::OK);
  EXPECT_EQ(*io_->FileSize(fd), 4096u);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
}

TEST_F(FaultyFileIoTest, PowerCutUndoesUnsyncedData) {
  Durable("f", "AAAAAAAA");
  int fd = OpenOk("f", O_WRONLY);  // undo works on a write-only fd too
  Write(fd, "BB", 1);
  Write(fd, "CCC", 8);  // grows the file
  EXPECT_EQ(io_->Truncate(fd, 4), ErrorCode::OK);
  EXPECT_EQ(io_->Fallocate(fd, 0, 1 << 16), ErrorCode::OK);
  EXPECT_EQ(ReadFile(dir_.Join("f")).size(), 1u << 16);

  int other = OpenOk("g");
  Write(other, "synced", 0);
  EXPECT_EQ(io_->FDataSync(other), ErrorCode::OK);
  Write(other, "-lost", 6);
  EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::OK);  // g's name is durable

  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  EXPECT_EQ(ReadFile(dir_.Join("f")), "AAAAAAAA");
  EXPECT_EQ(ReadFile(dir_.Join("g")), "synced");
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(io_->Close(other), ErrorCode::OK);
}

TEST_F(FaultyFileIoTest, PowerCutUndoesOTruncAndUnsyncedCreates) {
  Durable("kept", "hello world");
  int fd = OpenOk("kept", O_RDWR | O_TRUNC);
  Write(fd, "x", 0);
  int created = OpenOk("new");
  Write(created, "data", 0);
  EXPECT_EQ(io_->FSync(created), ErrorCode::OK);  // data durable, name not
  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  EXPECT_EQ(ReadFile(dir_.Join("kept")), "hello world");
  EXPECT_EQ(DiskNames(), std::vector<std::string>{"kept"});
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(io_->Close(created), ErrorCode::OK);
}

// The checkpoint pattern: temp file, fsync, rename over the old one, SyncDir.
TEST_F(FaultyFileIoTest, RenameOverIsUndoneUntilTheDirectoryIsSynced) {
  Durable("meta", "old");
  for (bool sync_dir : {false, true}) {
    SCOPED_TRACE(sync_dir ? "with SyncDir" : "without SyncDir");
    int fd = OpenOk("meta.tmp");
    Write(fd, "new", 0);
    EXPECT_EQ(io_->FSync(fd), ErrorCode::OK);
    EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
    EXPECT_EQ(io_->Rename(dir_.Join("meta.tmp"), dir_.Join("meta")), ErrorCode::OK);
    EXPECT_EQ(*io_->List(dir_.path()), std::vector<std::string>{"meta"});  // stash hidden
    if (sync_dir) {
      EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::OK);
    }
    EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
    io_->Restart();
    EXPECT_EQ(ReadFile(dir_.Join("meta")), sync_dir ? "new" : "old");
    EXPECT_EQ(DiskNames(), std::vector<std::string>{"meta"});
  }
}

TEST_F(FaultyFileIoTest, RemoveIsUndoneUntilTheDirectoryIsSynced) {
  Durable("a", "first");
  Durable("b", "second");
  EXPECT_EQ(io_->Remove(dir_.Join("a")), ErrorCode::OK);
  EXPECT_EQ(io_->Remove(dir_.Join("a")), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(*io_->List(dir_.path()), std::vector<std::string>{"b"});
  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  io_->Restart();
  EXPECT_EQ(ReadFile(dir_.Join("a")), "first");

  EXPECT_EQ(io_->Remove(dir_.Join("a")), ErrorCode::OK);
  EXPECT_EQ(io_->SyncDir(dir_.path() + "/"), ErrorCode::OK);
  EXPECT_EQ(DiskNames(), std::vector<std::string>{"b"});  // the stash is gone too
  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  EXPECT_EQ(DiskNames(), std::vector<std::string>{"b"});
}

// Undo follows the file: synced data, unsynced data, durable rename.
TEST_F(FaultyFileIoTest, DataUndoFollowsARename) {
  Durable("x", "synced");
  int fd = OpenOk("x");
  Write(fd, "LOST", 0);
  EXPECT_EQ(io_->Rename(dir_.Join("x"), dir_.Join("y")), ErrorCode::OK);
  EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::OK);
  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  EXPECT_EQ(DiskNames(), std::vector<std::string>{"y"});
  EXPECT_EQ(ReadFile(dir_.Join("y")), "synced");
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
}

TEST_F(FaultyFileIoTest, DownAfterPowerCutUntilRestart) {
  int fd = OpenOk("f");
  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("f")));  // its create was never durable
  EXPECT_EQ(io_->Open(dir_.Join("g"), O_CREAT | O_RDWR).error(), ErrorCode::FILE_OPEN_FAIL);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(io_->PWrite(fd, "x", 1, 0), ErrorCode::FILE_WRITE_FAIL);
  char c;
  EXPECT_EQ(io_->PRead(fd, &c, 1, 0), ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(io_->FileSize(fd).error(), ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(io_->List(dir_.path()).error(), ErrorCode::FILE_OPEN_FAIL);
  EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  io_->Restart();
  fd = OpenOk("g");
  Write(fd, "ok", 0);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(ReadFile(dir_.Join("g")), "ok");
}

TEST_F(FaultyFileIoTest, CleanShutdownCompletesPendingRemovals) {
  Durable("a", "1");
  int fd = OpenOk("b");
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(io_->Remove(dir_.Join("a")), ErrorCode::OK);
  EXPECT_EQ(io_->Rename(dir_.Join("b"), dir_.Join("c")), ErrorCode::OK);
  EXPECT_EQ(DiskNames().size(), 2u);  // c and a's stash
  io_.reset();
  EXPECT_EQ(DiskNames(), std::vector<std::string>{"c"});
}

// Concurrent writers on distinct files; the synced half survives a cut.
TEST_F(FaultyFileIoTest, ConcurrentWritersThenPowerCut) {
  constexpr int kThreads = 4;
  std::vector<int> fds;
  for (int t = 0; t < kThreads; ++t) fds.push_back(OpenOk("t" + std::to_string(t)));
  EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::OK);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string block(100, static_cast<char>('a' + t));
      for (int i = 0; i < 50; ++i) (void)io_->PWrite(fds[t], block.data(), 100, i * 100);
      (void)io_->FDataSync(fds[t]);
      for (int i = 50; i < 100; ++i) (void)io_->PWrite(fds[t], block.data(), 100, i * 100);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(io_->PowerCut(), ErrorCode::OK);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(ReadFile(dir_.Join("t" + std::to_string(t))),
              std::string(5000, static_cast<char>('a' + t)));
    EXPECT_EQ(io_->Close(fds[t]), ErrorCode::OK);
  }
}

}  // namespace
}  // namespace shelfmark
