// FaultyFileIo: a FileIo wrapping another (normally PosixFileIo over real
// files) for tests: fail a chosen call, run out of disk space, or cut the
// power.
//
// Faults:
//  - FailNext(op, nth, code[, err]): the nth call of kind `op` from now (1 =
//    the next one) fails with `code` and errno `err` (EIO by default) and has
//    no effect. Several faults may be pending, on one or several kinds.
//  - SetSpaceLimit(bytes): "disk full". From now on PWrite/PWriteV may write
//    `bytes` bytes in total (file growth by Fallocate counts too). A write
//    that would pass the limit writes the bytes that still fit (like a real
//    short write) and fails with FILE_WRITE_FAIL, errno ENOSPC; a Fallocate
//    that does not fit does nothing and fails the same way.
//    ClearSpaceLimit() lifts it.
//
// Power cut (PowerCut()) — what is modelled:
//  - File data and size: every PWrite, PWriteV, Fallocate, Truncate and
//    O_TRUNC open since the file's last successful FDataSync or FSync (on
//    any fd of that file; both count alike) is undone: overwritten bytes are
//    restored from an undo log of their previous contents and the size goes
//    back to the last durable size.
//  - Names: every create (Open with O_CREAT of a missing file), Rename and
//    Remove since the last successful SyncDir of the directory holding the
//    name is undone, newest first (a rename across directories needs both
//    directories synced). A removed file, or a file replaced by a rename,
//    is kept under a hidden name (".faultyio-stash-N", never listed) until
//    the removal is durable, so it can be restored with its contents.
//    An FSync of a file does not make its name durable (only SyncDir does).
//  - Not modelled: a write torn inside itself (a write is undone whole or
//    kept whole), reordering among non-durable writes (all are lost), data
//    of files changed outside this FileIo, metadata such as times and modes.
//    Undo is per file identity (renames are followed), so a file written,
//    synced, then renamed without SyncDir comes back under its old name with
//    the synced data.
//  - After PowerCut() the "machine is down": every call fails (errno EIO)
//    except Close, which releases the fd; the caller drops the component
//    under test (closing its fds), then calls Restart() and opens a new one
//    on the same FaultyFileIo (or on a fresh one). The files on disk then
//    hold exactly the durable state.
// Without a power cut, the destructor finalises pending removals (deletes
// the stashed files), as a clean shutdown would.
//
// Thread safety: every call is serialised by one mutex (the undo log must
// match the order of writes); use from any thread.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "ssdstore/file_io.h"

namespace shelfmark {

class FaultyFileIo final : public FileIo {
 public:
  enum class Op {
    kOpen,
    kPRead,
    kPWrite,
    kPWriteV,
    kFallocate,
    kFDataSync,
    kFSync,
    kRename,
    kRemove,
    kSyncDir,
    kTruncate,
  };
  static constexpr int kOpCount = static_cast<int>(Op::kTruncate) + 1;
  static std::string_view OpName(Op op);

  // Wraps `base` (PosixFileIo when null).
  explicit FaultyFileIo(std::unique_ptr<FileIo> base = nullptr);
  ~FaultyFileIo() override;
  FaultyFileIo(const FaultyFileIo&) = delete;
  FaultyFileIo& operator=(const FaultyFileIo&) = delete;

  // Precondition: nth >= 1 and code != OK.
  void FailNext(Op op, int nth, ErrorCode code, int err = EIO);
  // Drops every pending FailNext fault.
  void ClearFaults();
  void SetSpaceLimit(uint64_t bytes);
  void ClearSpaceLimit();
  // Calls of kind `op` made so far (failed ones included).
  uint64_t CallCount(Op op) const;

  // Restores the durable state on disk and takes the machine down (see above).
  // Returns the first error met while restoring (OK normally).
  ErrorCode PowerCut();
  void Restart();

  Result<int> Open(const std::string& path, int flags) override;
  ErrorCode Close(int fd) override;
  ErrorCode PRead(int fd, void* buf, uint64_t len, uint64_t offset) override;
  // The inner PReadCached, unless the file layer is down or a PRead fault is
  // pending: then *done false (the caller's PRead meets the fault).
  ErrorCode PReadCached(int fd, void* buf, uint64_t len, uint64_t offset, bool* done) override;
  ErrorCode PWrite(int fd, const void* buf, uint64_t len, uint64_t offset) override;
  ErrorCode PWriteV(int fd, std::span<const iovec> iov, uint64_t offset) override;
  ErrorCode Fallocate(int fd, uint64_t offset, uint64_t len) override;
  ErrorCode FDataSync(int fd) override;
  ErrorCode FSync(int fd) override;
  Result<uint64_t> FileSize(int fd) override;
  ErrorCode Truncate(int fd, uint64_t len) override;
  ErrorCode Rename(const std::string& from, const std::string& to) override;
  ErrorCode Remove(const std::string& path) override;
  ErrorCode SyncDir(const std::string& dir) override;
  Result<std::vector<std::string>> List(const std::string& dir) override;

 private:
  // One change of a file's data since its last sync: undone by truncating to
  // old_size and writing old_bytes back at offset.
  struct DataUndo {
    uint64_t old_size = 0;
    uint64_t offset = 0;
    std::string old_bytes;
  };
  // A file by identity; `path` follows renames ("" once durably removed).
  // `undo_fd` (opened O_RDWR on the base, closed with the state) reads the
  // bytes a change overwrites and writes them back on a power cut.
  struct FileState {
    FileState(FileIo* io, std::string p) : base(io), path(std::move(p)) {}
    ~FileState();
    FileState(const FileState&) = delete;
    FileState& operator=(const FileState&) = delete;
    FileIo* const base;
    std::string path;
    int undo_fd = -1;
    std::vector<DataUndo> undo;
  };
  // One change of names not yet made durable by SyncDir.
  struct NameOp {
    enum Kind { kCreate, kRename, kRemove } kind;
    std::shared_ptr<FileState> file;
    std::string from;   // kRename: old name; kCreate/kRemove: the name
    std::string to;     // kRename: new name
    std::string stash;  // kRemove: the file; kRename: the replaced file ("" if none)
    std::shared_ptr<FileState> replaced;  // kRename: the replaced file
    std::vector<std::string> pending_dirs;  // directories still to sync
  };
  struct Fault {
    int remaining;  // calls of the kind to let through before failing
    ErrorCode code;
    int err;
  };

  // Counts the call; returns the fault's code (errno set) when it is due.
  ErrorCode Enter(Op op) REQUIRES(mu_);
  std::shared_ptr<FileState> StateForPath(const std::string& path) REQUIRES(mu_);
  // The state of an fd opened through this FileIo (null for another fd).
  std::shared_ptr<FileState> StateForFd(int fd) REQUIRES(mu_);
  // Records an undo entry for a change of the bytes [lo, hi) and/or of the
  // size of `file` (reads the bytes it is about to overwrite).
  ErrorCode RecordUndo(FileState* file, uint64_t lo, uint64_t hi) REQUIRES(mu_);
  ErrorCode Write(int fd, std::span<const iovec> iov, uint64_t offset) REQUIRES(mu_);
  ErrorCode DownError(Op op) const;
  std::string NewStashPath(const std::string& near) REQUIRES(mu_);
  void Finalise(NameOp* op) REQUIRES(mu_);
  ErrorCode UndoData(FileState* file) REQUIRES(mu_);
  ErrorCode UndoName(const NameOp& op) REQUIRES(mu_);

  const std::unique_ptr<FileIo> base_;
  mutable Mutex mu_;
  bool down_ GUARDED_BY(mu_) = false;
  std::vector<Fault> faults_[kOpCount] GUARDED_BY(mu_);
  uint64_t calls_[kOpCount] GUARDED_BY(mu_) = {};
  std::optional<uint64_t> space_left_ GUARDED_BY(mu_);
  std::map<int, std::shared_ptr<FileState>> fds_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<FileState>> paths_ GUARDED_BY(mu_);
  std::vector<NameOp> name_ops_ GUARDED_BY(mu_);  // oldest first
  uint64_t next_stash_ GUARDED_BY(mu_) = 0;
};

}  // namespace shelfmark
