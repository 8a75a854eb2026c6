// FileIo: the small file interface the SSD store uses, so tests can inject
// faults. PosixFileIo is the real one; FaultyFileIo (fault_file_io.h) wraps
// any FileIo to fail a chosen call or to simulate a power cut (drop every
// byte and every rename/remove not yet made durable by fdatasync/fsync).
//
// Contracts: paths are absolute; every failure is a typed ErrorCode and the
// cause is left in errno (thread-local) right after the failing call; nothing
// throws. Codes:
//  - Open, SyncDir, List: FILE_NOT_FOUND (ENOENT), else FILE_OPEN_FAIL;
//    List: FILE_READ_FAIL when reading the directory fails midway.
//  - PRead, FileSize: FILE_READ_FAIL; a read that reaches end of file before
//    `len` bytes is FILE_READ_FAIL with errno 0.
//  - PReadCached: PRead that never waits for the device: OK with *done true
//    when every byte came from the page cache; OK with *done false when some
//    did not (or the file system cannot tell: the base class always says
//    so), after which the caller reads with PRead; FILE_READ_FAIL as PRead.
//  - PWrite, PWriteV, Fallocate, FDataSync, FSync, Truncate, Close:
//    FILE_WRITE_FAIL (disk full: errno ENOSPC).
//  - Rename, Remove: FILE_NOT_FOUND (ENOENT), else FILE_WRITE_FAIL.
// Thread safety: calls on distinct fds may run concurrently; a FileIo is
// shared by a backend's threads.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shelfmark {

class FileIo {
 public:
  virtual ~FileIo() = default;
  // flags as open(2) (O_CREAT|O_RDWR, ...); mode 0644 on create.
  virtual Result<int> Open(const std::string& path, int flags) = 0;
  virtual ErrorCode Close(int fd) = 0;
  virtual ErrorCode PRead(int fd, void* buf, uint64_t len, uint64_t offset) = 0;  // exactly len
  virtual ErrorCode PReadCached(int /*fd*/, void* /*buf*/, uint64_t /*len*/, uint64_t /*offset*/,
                                bool* done) {
    *done = false;
    return ErrorCode::OK;
  }
  virtual ErrorCode PWrite(int fd, const void* buf, uint64_t len, uint64_t offset) = 0;
  virtual ErrorCode PWriteV(int fd, std::span<const iovec> iov, uint64_t offset) = 0;
  virtual ErrorCode Fallocate(int fd, uint64_t offset, uint64_t len) = 0;
  virtual ErrorCode FDataSync(int fd) = 0;
  virtual ErrorCode FSync(int fd) = 0;
  virtual Result<uint64_t> FileSize(int fd) = 0;
  virtual ErrorCode Truncate(int fd, uint64_t len) = 0;
  virtual ErrorCode Rename(const std::string& from, const std::string& to) = 0;
  virtual ErrorCode Remove(const std::string& path) = 0;
  // fsyncs the directory itself (after a create, rename or remove in it).
  virtual ErrorCode SyncDir(const std::string& dir) = 0;
  // Names (not paths) of the regular files in `dir`, sorted.
  virtual Result<std::vector<std::string>> List(const std::string& dir) = 0;
};

// The real thing (POSIX calls, EINTR retried, short writes continued;
// PReadCached is preadv2 with RWF_NOWAIT).
std::unique_ptr<FileIo> MakePosixFileIo();

}  // namespace shelfmark
