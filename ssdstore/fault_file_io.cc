// FaultyFileIo: see fault_file_io.h for what is modelled. Bookkeeping calls
// go straight to the base FileIo (they are not counted and never fail by a
// FailNext fault).
#include "ssdstore/fault_file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

namespace shelfmark {
namespace {

constexpr std::string_view kStashPrefix = ".faultyio-stash-";

std::string DirOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string TrimSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

bool Exists(const std::string& path, bool* is_dir) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  *is_dir = S_ISDIR(st.st_mode);
  return true;
}

uint64_t TotalLength(std::span<const iovec> iov) {
  uint64_t total = 0;
  for (const iovec& v : iov) total += v.iov_len;
  return total;
}

// The first `len` bytes of `iov`.
std::vector<iovec> Prefix(std::span<const iovec> iov, uint64_t len) {
  std::vector<iovec> out;
  for (const iovec& v : iov) {
    if (len == 0) break;
    size_t take = static_cast<size_t>(std::min<uint64_t>(len, v.iov_len));
    out.push_back({v.iov_base, take});
    len -= take;
  }
  return out;
}

}  // namespace

std::string_view FaultyFileIo::OpName(Op op) {
  switch (op) {
    case Op::kOpen: return "Open";
    case Op::kPRead: return "PRead";
    case Op::kPWrite: return "PWrite";
    case Op::kPWriteV: return "PWriteV";
    case Op::kFallocate: return "Fallocate";
    case Op::kFDataSync: return "FDataSync";
    case Op::kFSync: return "FSync";
    case Op::kRename: return "Rename";
    case Op::kRemove: return "Remove";
    case Op::kSyncDir: return "SyncDir";
    case Op::kTruncate: return "Truncate";
  }
  return "Unknown";
}

FaultyFileIo::FileState::~FileState() {
  if (undo_fd >= 0) (void)base->Close(undo_fd);
}

FaultyFileIo::FaultyFileIo(std::unique_ptr<FileIo> base)
    : base_(base ? std::move(base) : MakePosixFileIo()) {}

FaultyFileIo::~FaultyFileIo() {
  MutexLock lock(&mu_);
  // A clean shutdown: pending removals happen.
  for (NameOp& op : name_ops_) Finalise(&op);
  name_ops_.clear();
}

void FaultyFileIo::FailNext(Op op, int nth, ErrorCode code, int err) {
  MutexLock lock(&mu_);
  faults_[static_cast<int>(op)].push_back({std::max(nth, 1) - 1, code, err});
}

void FaultyFileIo::ClearFaults() {
  MutexLock lock(&mu_);
  for (auto& list : faults_) list.clear();
}

void FaultyFileIo::SetSpaceLimit(uint64_t bytes) {
  MutexLock lock(&mu_);
  space_left_ = bytes;
}

void FaultyFileIo::ClearSpaceLimit() {
  MutexLock lock(&mu_);
  space_left_.reset();
}

uint64_t FaultyFileIo::CallCount(Op op) const {
  MutexLock lock(&mu_);
  return calls_[static_cast<int>(op)];
}

ErrorCode FaultyFileIo::DownError(Op op) const {
  switch (op) {
    case Op::kOpen: return ErrorCode::FILE_OPEN_FAIL;
    case Op::kPRead: return ErrorCode::FILE_READ_FAIL;
    default: return ErrorCode::FILE_WRITE_FAIL;
  }
}

ErrorCode FaultyFileIo::Enter(Op op) {
  int i = static_cast<int>(op);
  ++calls_[i];
  if (down_) {
    errno = EIO;
    return DownError(op);
  }
  // Every pending fault counts this call; the first one due fires (another
  // one due at the same call fires at the next).
  std::vector<Fault>& list = faults_[i];
  auto due = std::find_if(list.begin(), list.end(), [](const Fault& f) { return f.remaining == 0; });
  for (Fault& f : list) {
    if (f.remaining > 0) --f.remaining;
  }
  if (due == list.end()) return ErrorCode::OK;
  Fault fault = *due;
  list.erase(due);
  errno = fault.err;
  return fault.code;
}

std::shared_ptr<FaultyFileIo::FileState> FaultyFileIo::StateForPath(const std::string& path) {
  auto it = paths_.find(path);
  if (it != paths_.end()) return it->second;
  auto state = std::make_shared<FileState>(base_.get(), path);
  paths_[path] = state;
  return state;
}

std::shared_ptr<FaultyFileIo::FileState> FaultyFileIo::StateForFd(int fd) {
  auto it = fds_.find(fd);
  return it == fds_.end() ? nullptr : it->second;
}

std::string FaultyFileIo::NewStashPath(const std::string& near) {
  return DirOf(near) + "/" + std::string(kStashPrefix) + std::to_string(next_stash_++);
}

ErrorCode FaultyFileIo::RecordUndo(FileState* file, uint64_t lo, uint64_t hi) {
  auto size = base_->FileSize(file->undo_fd);
  if (!size.ok()) return size.error();
  DataUndo undo;
  undo.old_size = *size;
  undo.offset = lo;
  if (lo < *size && hi > lo) {
    undo.old_bytes.resize(static_cast<size_t>(std::min(hi, *size) - lo));
    ErrorCode rc = base_->PRead(file->undo_fd, undo.old_bytes.data(), undo.old_bytes.size(), lo);
    if (rc != ErrorCode::OK) return rc;
  }
  file->undo.push_back(std::move(undo));
  return ErrorCode::OK;
}

Result<int> FaultyFileIo::Open(const std::string& path, int flags) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kOpen); rc != ErrorCode::OK) return rc;
  bool is_dir = false;
  bool existed = Exists(path, &is_dir);
  auto fd = base_->Open(path, flags & ~O_TRUNC);
  if (!fd.ok()) return fd;
  std::shared_ptr<FileState> state;
  if (!existed) {  // created
    state = std::make_shared<FileState>(base_.get(), path);
    paths_[path] = state;
    name_ops_.push_back({NameOp::kCreate, state, path, "", "", nullptr, {DirOf(path)}});
  } else {
    state = StateForPath(path);
  }
  if (state->undo_fd < 0 && !is_dir) {
    auto undo_fd = base_->Open(path, O_RDWR);
    if (!undo_fd.ok()) {
      int err = errno;
      (void)base_->Close(*fd);
      errno = err;
      return undo_fd.error();
    }
    state->undo_fd = *undo_fd;
  }
  fds_[*fd] = state;
  if ((flags & O_TRUNC) != 0 && existed && !is_dir) {
    ErrorCode rc = RecordUndo(state.get(), 0, UINT64_MAX);
    if (rc == ErrorCode::OK) rc = base_->Truncate(*fd, 0);
    if (rc != ErrorCode::OK) {
      int err = errno;
      fds_.erase(*fd);
      (void)base_->Close(*fd);
      errno = err;
      return ErrorCode::FILE_OPEN_FAIL;
    }
  }
  return fd;
}

ErrorCode FaultyFileIo::Close(int fd) {
  MutexLock lock(&mu_);
  std::shared_ptr<FileState> state = StateForFd(fd);
  fds_.erase(fd);
  // Forget a file nothing refers to any more (keeps the undo fds few).
  if (state && state->undo.empty() && state.use_count() == 2) {
    auto it = paths_.find(state->path);
    if (it != paths_.end() && it->second == state) paths_.erase(it);
  }
  return base_->Close(fd);
}

ErrorCode FaultyFileIo::PRead(int fd, void* buf, uint64_t len, uint64_t offset) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kPRead); rc != ErrorCode::OK) return rc;
  return base_->PRead(fd, buf, len, offset);
}

ErrorCode FaultyFileIo::PReadCached(int fd, void* buf, uint64_t len, uint64_t offset,
                                    bool* done) {
  {
    MutexLock lock(&mu_);
    if (down_ || !faults_[static_cast<int>(Op::kPRead)].empty()) {
      *done = false;
      return ErrorCode::OK;
    }
  }
  return base_->PReadCached(fd, buf, len, offset, done);
}

ErrorCode FaultyFileIo::Write(int fd, std::span<const iovec> iov, uint64_t offset) {
  uint64_t total = TotalLength(iov);
  uint64_t allowed = total;
  bool full = false;
  if (space_left_ && total > *space_left_) {
    allowed = *space_left_;
    full = true;
  }
  std::vector<iovec> part = Prefix(iov, allowed);
  std::shared_ptr<FileState> state = StateForFd(fd);
  if (state && allowed > 0) {
    if (ErrorCode rc = RecordUndo(state.get(), offset, offset + allowed); rc != ErrorCode::OK) {
      return ErrorCode::FILE_WRITE_FAIL;
    }
  }
  if (ErrorCode rc = base_->PWriteV(fd, part, offset); rc != ErrorCode::OK) return rc;
  if (space_left_) *space_left_ -= allowed;
  if (full) {
    errno = ENOSPC;
    return ErrorCode::FILE_WRITE_FAIL;
  }
  return ErrorCode::OK;
}

ErrorCode FaultyFileIo::PWrite(int fd, const void* buf, uint64_t len, uint64_t offset) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kPWrite); rc != ErrorCode::OK) return rc;
  iovec one{const_cast<void*>(buf), static_cast<size_t>(len)};
  return Write(fd, std::span<const iovec>(&one, 1), offset);
}

ErrorCode FaultyFileIo::PWriteV(int fd, std::span<const iovec> iov, uint64_t offset) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kPWriteV); rc != ErrorCode::OK) return rc;
  return Write(fd, iov, offset);
}

ErrorCode FaultyFileIo::Fallocate(int fd, uint64_t offset, uint64_t len) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kFallocate); rc != ErrorCode::OK) return rc;
  std::shared_ptr<FileState> state = StateForFd(fd);
  if (!state) return base_->Fallocate(fd, offset, len);
  auto size = base_->FileSize(state->undo_fd);
  if (!size.ok()) return ErrorCode::FILE_WRITE_FAIL;
  uint64_t growth = offset + len > *size ? offset + len - *size : 0;
  if (space_left_ && growth > *space_left_) {
    errno = ENOSPC;
    return ErrorCode::FILE_WRITE_FAIL;
  }
  if (RecordUndo(state.get(), offset, offset) != ErrorCode::OK) return ErrorCode::FILE_WRITE_FAIL;
  if (ErrorCode rc = base_->Fallocate(fd, offset, len); rc != ErrorCode::OK) return rc;
  if (space_left_) *space_left_ -= growth;
  return ErrorCode::OK;
}

ErrorCode FaultyFileIo::FDataSync(int fd) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kFDataSync); rc != ErrorCode::OK) return rc;
  ErrorCode rc = base_->FDataSync(fd);
  if (rc == ErrorCode::OK) {
    if (auto state = StateForFd(fd)) state->undo.clear();
  }
  return rc;
}

ErrorCode FaultyFileIo::FSync(int fd) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kFSync); rc != ErrorCode::OK) return rc;
  ErrorCode rc = base_->FSync(fd);
  if (rc == ErrorCode::OK) {
    if (auto state = StateForFd(fd)) state->undo.clear();
  }
  return rc;
}

Result<uint64_t> FaultyFileIo::FileSize(int fd) {
  MutexLock lock(&mu_);
  if (down_) {
    errno = EIO;
    return ErrorCode::FILE_READ_FAIL;
  }
  return base_->FileSize(fd);
}

ErrorCode FaultyFileIo::Truncate(int fd, uint64_t len) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kTruncate); rc != ErrorCode::OK) return rc;
  if (auto state = StateForFd(fd)) {
    if (RecordUndo(state.get(), len, UINT64_MAX) != ErrorCode::OK) {
      return ErrorCode::FILE_WRITE_FAIL;
    }
  }
  return base_->Truncate(fd, len);
}

ErrorCode FaultyFileIo::Rename(const std::string& from, const std::string& to) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kRename); rc != ErrorCode::OK) return rc;
  bool from_dir = false;
  bool to_dir = false;
  bool to_exists = Exists(to, &to_dir);
  if (from == to || !Exists(from, &from_dir) || from_dir || to_dir) {
    return base_->Rename(from, to);  // a no-op or an error; nothing to track
  }
  std::string stash;
  if (to_exists) {  // keep the replaced file until the rename is durable
    stash = NewStashPath(to);
    if (ErrorCode rc = base_->Rename(to, stash); rc != ErrorCode::OK) return rc;
  }
  if (ErrorCode rc = base_->Rename(from, to); rc != ErrorCode::OK) {
    int err = errno;
    if (!stash.empty()) (void)base_->Rename(stash, to);
    errno = err;
    return rc;
  }
  std::shared_ptr<FileState> replaced;
  if (!stash.empty()) {
    replaced = StateForPath(to);
    replaced->path = stash;
    paths_.erase(to);
    paths_[stash] = replaced;
  }
  std::shared_ptr<FileState> file = StateForPath(from);
  paths_.erase(from);
  file->path = to;
  paths_[to] = file;
  std::vector<std::string> dirs{DirOf(from)};
  if (DirOf(to) != dirs[0]) dirs.push_back(DirOf(to));
  name_ops_.push_back({NameOp::kRename, file, from, to, stash, replaced, dirs});
  return ErrorCode::OK;
}

ErrorCode FaultyFileIo::Remove(const std::string& path) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kRemove); rc != ErrorCode::OK) return rc;
  bool is_dir = false;
  if (!Exists(path, &is_dir) || is_dir) return base_->Remove(path);  // the base's error
  std::string stash = NewStashPath(path);
  if (ErrorCode rc = base_->Rename(path, stash); rc != ErrorCode::OK) return rc;
  std::shared_ptr<FileState> file = StateForPath(path);
  paths_.erase(path);
  file->path = stash;
  paths_[stash] = file;
  name_ops_.push_back({NameOp::kRemove, file, path, "", stash, nullptr, {DirOf(path)}});
  return ErrorCode::OK;
}

void FaultyFileIo::Finalise(NameOp* op) {
  if (op->stash.empty()) return;
  (void)base_->Remove(op->stash);
  paths_.erase(op->stash);
  FileState* gone = op->kind == NameOp::kRemove ? op->file.get() : op->replaced.get();
  if (gone != nullptr) gone->path.clear();
}

ErrorCode FaultyFileIo::SyncDir(const std::string& dir) {
  MutexLock lock(&mu_);
  if (ErrorCode rc = Enter(Op::kSyncDir); rc != ErrorCode::OK) return rc;
  ErrorCode rc = base_->SyncDir(dir);
  if (rc != ErrorCode::OK) return rc;
  std::string synced = TrimSlashes(dir);
  std::vector<NameOp> still;
  for (NameOp& op : name_ops_) {
    std::erase(op.pending_dirs, synced);
    if (op.pending_dirs.empty()) {
      Finalise(&op);
    } else {
      still.push_back(std::move(op));
    }
  }
  name_ops_ = std::move(still);
  return ErrorCode::OK;
}

Result<std::vector<std::string>> FaultyFileIo::List(const std::string& dir) {
  MutexLock lock(&mu_);
  if (down_) {
    errno = EIO;
    return ErrorCode::FILE_OPEN_FAIL;
  }
  auto names = base_->List(dir);
  if (!names.ok()) return names;
  std::erase_if(*names, [](const std::string& n) { return n.starts_with(kStashPrefix); });
  return names;
}

ErrorCode FaultyFileIo::UndoData(FileState* file) {
  ErrorCode first = ErrorCode::OK;
  for (auto it = file->undo.rbegin(); it != file->undo.rend(); ++it) {
    ErrorCode rc = base_->Truncate(file->undo_fd, it->old_size);
    if (rc == ErrorCode::OK && !it->old_bytes.empty()) {
      rc = base_->PWrite(file->undo_fd, it->old_bytes.data(), it->old_bytes.size(), it->offset);
    }
    if (first == ErrorCode::OK) first = rc;
  }
  file->undo.clear();
  return first;
}

ErrorCode FaultyFileIo::UndoName(const NameOp& op) {
  ErrorCode rc = ErrorCode::OK;
  switch (op.kind) {
    case NameOp::kCreate:
      if (op.file->path.empty()) break;
      rc = base_->Remove(op.file->path);
      op.file->path.clear();
      break;
    case NameOp::kRename:
      rc = base_->Rename(op.file->path, op.from);
      op.file->path = op.from;
      if (!op.stash.empty() && rc == ErrorCode::OK) {
        rc = base_->Rename(op.stash, op.to);
        op.replaced->path = op.to;
      }
      break;
    case NameOp::kRemove:
      rc = base_->Rename(op.stash, op.from);
      op.file->path = op.from;
      break;
  }
  return rc;
}

ErrorCode FaultyFileIo::PowerCut() {
  MutexLock lock(&mu_);
  ErrorCode first = ErrorCode::OK;
  auto note = [&first](ErrorCode rc) {
    if (first == ErrorCode::OK) first = rc;
  };
  std::set<FileState*> files;
  for (auto& [fd, state] : fds_) files.insert(state.get());
  for (auto& [path, state] : paths_) files.insert(state.get());
  for (NameOp& op : name_ops_) {
    files.insert(op.file.get());
    if (op.replaced) files.insert(op.replaced.get());
  }
  for (FileState* file : files) {
    if (!file->undo.empty() && !file->path.empty()) note(UndoData(file));
    file->undo.clear();
  }
  for (auto it = name_ops_.rbegin(); it != name_ops_.rend(); ++it) note(UndoName(*it));
  name_ops_.clear();
  paths_.clear();
  down_ = true;
  return first;
}

void FaultyFileIo::Restart() {
  MutexLock lock(&mu_);
  down_ = false;
}

}  // namespace shelfmark
