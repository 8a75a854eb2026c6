#include "snapshot/local_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace shelfmark {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
constexpr size_t kMaxKeyBytes = 1024;
constexpr int kPutAttempts = 16;

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Closes now; false when close() reports an error (a lost write).
  bool Close() {
    int fd = fd_;
    fd_ = -1;
    return fd < 0 || close(fd) == 0;
  }

 private:
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

std::vector<std::string> Split(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    parts.emplace_back(key.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Opens the directories parts[0..n) one below the other from `base_fd`,
// never following a link; chain->back() is the deepest (empty chain for
// n == 0). Returns 0 or the failing errno. With `create`, missing
// directories are made and each new one's parent fsynced.
int WalkDirs(int base_fd, const std::vector<std::string>& parts, size_t n, bool create,
             std::vector<Fd>* chain) {
  chain->clear();
  for (size_t i = 0; i < n; ++i) {
    int parent = i == 0 ? base_fd : chain->back().get();
    Fd next(openat(parent, parts[i].c_str(), kDirFlags));
    if (!next.ok() && errno == ENOENT && create) {
      if (mkdirat(parent, parts[i].c_str(), 0755) == 0) {
        if (fsync(parent) != 0) return errno;
      } else if (errno != EEXIST) {
        return errno;
      }
      next = Fd(openat(parent, parts[i].c_str(), kDirFlags));
    }
    if (!next.ok()) return errno;
    chain->push_back(std::move(next));
  }
  return 0;
}

int DeepestFd(int base_fd, const std::vector<Fd>& chain) {
  return chain.empty() ? base_fd : chain.back().get();
}

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // error (ENOSPC, EIO) or no progress
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Temp file, write, fsync, close, rename, directory fsync. Returns 0 or the
// errno of the step that failed (EIO for a write that made no progress).
// *retry is set when the directory vanished under us (a concurrent Remove
// pruned it).
int WriteAtomically(int dir_fd, const std::string& leaf, std::string_view bytes, bool* retry) {
  *retry = false;
  std::string tmp = LocalStore::TempName(leaf);
  Fd fd(openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.ok()) {
    *retry = errno == ENOENT;
    return errno;
  }
  errno = EIO;
  bool written = WriteAll(fd.get(), bytes) && fsync(fd.get()) == 0;
  int err = errno;
  written = fd.Close() && written;
  if (!written) {
    unlinkat(dir_fd, tmp.c_str(), 0);
    return err;
  }
  if (renameat(dir_fd, tmp.c_str(), dir_fd, leaf.c_str()) != 0) {
    err = errno;
    *retry = err == ENOENT;
    unlinkat(dir_fd, tmp.c_str(), 0);
    return err;
  }
  return fsync(dir_fd) == 0 ? 0 : errno;
}

bool CouldMatch(std::string_view path, std::string_view prefix) {
  return path.starts_with(prefix) || prefix.starts_with(path);
}

// Appends the valid keys of regular files under `dir_fd` (whose relative path
// is `rel`, "" or ending in '/') that start with `prefix`.
ErrorCode ListDir(int dir_fd, const std::string& rel, std::string_view prefix,
                  std::vector<std::string>* out) {
  // A fresh open file description: a dup() would share (and race on) the
  // directory offset of `dir_fd`, e.g. the store's base descriptor.
  int own_fd = openat(dir_fd, ".", kDirFlags);
  if (own_fd < 0) return ErrorCode::FILE_READ_FAIL;
  DIR* dir = fdopendir(own_fd);
  if (dir == nullptr) {
    close(own_fd);
    return ErrorCode::FILE_READ_FAIL;
  }
  ErrorCode rc = ErrorCode::OK;
  while (rc == ErrorCode::OK) {
    errno = 0;
    dirent* entry = readdir(dir);
    if (entry == nullptr) {
      if (errno != 0) rc = ErrorCode::FILE_READ_FAIL;
      break;
    }
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    std::string path = rel + std::string(name);
    if (path.size() > kMaxKeyBytes || !CouldMatch(path, prefix)) continue;
    unsigned char type = entry->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
    }
    if (type == DT_REG) {
      if (path.starts_with(prefix) && ValidObjectKey(path)) out->push_back(std::move(path));
    } else if (type == DT_DIR && CouldMatch(path + "/", prefix)) {
      Fd sub(openat(dir_fd, entry->d_name, kDirFlags));
      if (!sub.ok()) {
        // Removed meanwhile, or replaced by a link: not part of the tree.
        if (errno != ENOENT && errno != ELOOP && errno != ENOTDIR) rc = ErrorCode::FILE_READ_FAIL;
        continue;
      }
      rc = ListDir(sub.get(), path + "/", prefix, out);
    }
  }
  closedir(dir);
  return rc;
}

}  // namespace

std::string LocalStore::TempName(std::string_view leaf) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), "~tmp.%d.%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(rng()));
  return std::string(leaf) + suffix;
}

Result<std::unique_ptr<LocalStore>> LocalStore::Open(std::string base) {
  if (base.empty() || base[0] != '/') return ErrorCode::INVALID_PARAMS;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  int fd = open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrorCode::INVALID_PARAMS;
  return std::unique_ptr<LocalStore>(new LocalStore(std::move(base), fd));
}

LocalStore::~LocalStore() { close(base_fd_); }

std::string LocalStore::Describe() const { return "local:" + base_; }

ErrorCode LocalStore::Put(std::string_view key, std::string_view bytes) {
  if (!ValidObjectKey(key)) return ErrorCode::INVALID_PARAMS;
  std::vector<std::string> parts = Split(key);
  int err = ENOENT;
  for (int attempt = 0; attempt < kPutAttempts; ++attempt) {
    std::vector<Fd> chain;
    // ENOENT: a concurrent Remove pruned a directory we had just opened.
    err = WalkDirs(base_fd_, parts, parts.size() - 1, /*create=*/true, &chain);
    if (err == ENOENT) continue;
    if (err != 0) break;
    bool retry = false;
    err = WriteAtomically(DeepestFd(base_fd_, chain), parts.back(), bytes, &retry);
    if (!retry) break;
  }
  return err == 0 ? ErrorCode::OK : Failed("PUT", key, err, ErrorCode::FILE_WRITE_FAIL);
}

ErrorCode LocalStore::Failed(std::string_view op, std::string_view key, int err, ErrorCode code) {
  MutexLock lock(&error_mu_);
  last_error_ = std::string(op) + " " + std::string(key) + ": " + std::strerror(err);
  return code;
}

std::string LocalStore::last_error() const {
  MutexLock lock(&error_mu_);
  return last_error_;
}

Result<std::string> LocalStore::Get(std::string_view key) {
  if (!ValidObjectKey(key)) return ErrorCode::INVALID_PARAMS;
  std::vector<std::string> parts = Split(key);
  std::vector<Fd> chain;
  int err = WalkDirs(base_fd_, parts, parts.size() - 1, /*create=*/false, &chain);
  if (err == ENOENT || err == ENOTDIR || err == ELOOP) return ErrorCode::FILE_NOT_FOUND;
  if (err != 0) return ErrorCode::FILE_OPEN_FAIL;
  // O_NONBLOCK: a FIFO planted in the tree must not block the open.
  Fd fd(openat(DeepestFd(base_fd_, chain), parts.back().c_str(),
               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) {
    bool absent = errno == ENOENT || errno == ENOTDIR || errno == ELOOP;  // ELOOP: a link
    return absent ? ErrorCode::FILE_NOT_FOUND : ErrorCode::FILE_OPEN_FAIL;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrorCode::FILE_READ_FAIL;
  if (S_ISDIR(st.st_mode)) return ErrorCode::FILE_NOT_FOUND;
  if (!S_ISREG(st.st_mode)) return ErrorCode::FILE_OPEN_FAIL;
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (true) {
    if (got == bytes.size()) bytes.resize(bytes.size() + 4096);  // grew since fstat
    ssize_t n = read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrorCode::FILE_READ_FAIL;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

Result<std::vector<std::string>> LocalStore::List(std::string_view prefix) {
  if (!ValidObjectPrefix(prefix)) return ErrorCode::INVALID_PARAMS;
  size_t slash = prefix.rfind('/');
  std::string rel = slash == std::string_view::npos ? "" : std::string(prefix.substr(0, slash + 1));
  std::vector<std::string> dirs = rel.empty() ? std::vector<std::string>{}
                                              : Split(prefix.substr(0, slash));
  std::vector<std::string> keys;
  std::vector<Fd> chain;
  int err = WalkDirs(base_fd_, dirs, dirs.size(), /*create=*/false, &chain);
  if (err == ENOENT || err == ENOTDIR || err == ELOOP) return keys;
  if (err != 0) return ErrorCode::FILE_READ_FAIL;
  ErrorCode rc = ListDir(DeepestFd(base_fd_, chain), rel, prefix, &keys);
  if (rc != ErrorCode::OK) return rc;
  std::sort(keys.begin(), keys.end());
  return keys;
}

ErrorCode LocalStore::Remove(std::string_view key) {
  if (!ValidObjectKey(key)) return ErrorCode::INVALID_PARAMS;
  std::vector<std::string> parts = Split(key);
  size_t ndirs = parts.size() - 1;
  std::vector<Fd> chain;
  int err = WalkDirs(base_fd_, parts, ndirs, /*create=*/false, &chain);
  if (err == ENOENT || err == ENOTDIR || err == ELOOP) return ErrorCode::OK;  // not in the tree
  if (err != 0) return Failed("REMOVE", key, err, ErrorCode::FILE_WRITE_FAIL);
  int dir_fd = DeepestFd(base_fd_, chain);
  if (unlinkat(dir_fd, parts.back().c_str(), 0) != 0) {
    // A directory is not an object: nothing to remove. A missing key still
    // prunes the directories below (a failed Put may have left them empty).
    if (errno == EISDIR) return ErrorCode::OK;
    if (errno != ENOENT) return Failed("REMOVE", key, errno, ErrorCode::FILE_WRITE_FAIL);
  } else if (fsync(dir_fd) != 0) {
    return Failed("REMOVE", key, errno, ErrorCode::FILE_WRITE_FAIL);
  }
  // Prune the directories this left empty, deepest first, never the base.
  for (size_t i = ndirs; i-- > 0;) {
    int parent = i == 0 ? base_fd_ : chain[i - 1].get();
    if (unlinkat(parent, parts[i].c_str(), AT_REMOVEDIR) != 0) break;  // not empty
    if (fsync(parent) != 0) return Failed("REMOVE", key, errno, ErrorCode::FILE_WRITE_FAIL);
  }
  return ErrorCode::OK;
}

}  // namespace shelfmark
