// PosixFileIo: FileIo over POSIX calls. EINTR is retried everywhere; short
// reads and writes are continued until the whole range is done; a read that
// reaches end of file first is FILE_READ_FAIL with errno 0. On failure errno
// holds the cause (see file_io.h for the code of each call).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

#include "ssdstore/file_io.h"

namespace shelfmark {
namespace {

// Retries `call` while it fails with EINTR; returns its last result.
template <typename Call>
auto RetryEintr(Call call) {
  decltype(call()) rc;
  do {
    rc = call();
  } while (rc < 0 && errno == EINTR);
  return rc;
}

ErrorCode OpenError(int err) {
  return err == ENOENT ? ErrorCode::FILE_NOT_FOUND : ErrorCode::FILE_OPEN_FAIL;
}

ErrorCode WriteError(int err) {
  return err == ENOENT ? ErrorCode::FILE_NOT_FOUND : ErrorCode::FILE_WRITE_FAIL;
}

// Drops the first `n` bytes from the front of `iov` (a cursor over a copy).
void Advance(std::vector<iovec>* iov, size_t* first, uint64_t n) {
  while (n > 0 && *first < iov->size()) {
    iovec& v = (*iov)[*first];
    if (n < v.iov_len) {
      v.iov_base = static_cast<char*>(v.iov_base) + n;
      v.iov_len -= n;
      return;
    }
    n -= v.iov_len;
    ++*first;
  }
  // Skip empty entries so the loop below sees a non-empty head.
  while (*first < iov->size() && (*iov)[*first].iov_len == 0) ++*first;
}

// preadv2 until `len` bytes are read. With RWF_NOWAIT in `flags`, a read
// that would wait for the device (EAGAIN; EOPNOTSUPP where the file system
// cannot tell) returns OK with *done false; *done true once all is read.
ErrorCode ReadFully(int fd, void* buf, uint64_t len, uint64_t offset, int flags, bool* done) {
  *done = false;
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    iovec iov{p, static_cast<size_t>(std::min<uint64_t>(len, SSIZE_MAX))};
    ssize_t n = RetryEintr(
        [&] { return ::preadv2(fd, &iov, 1, static_cast<off_t>(offset), flags); });
    if (n < 0 && flags != 0 && (errno == EAGAIN || errno == EOPNOTSUPP)) return ErrorCode::OK;
    if (n < 0) return ErrorCode::FILE_READ_FAIL;
    if (n == 0) {  // end of file before `len` bytes
      errno = 0;
      return ErrorCode::FILE_READ_FAIL;
    }
    p += n;
    len -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  *done = true;
  return ErrorCode::OK;
}

class PosixFileIo final : public FileIo {
 public:
  Result<int> Open(const std::string& path, int flags) override {
    int fd = RetryEintr([&] { return ::open(path.c_str(), flags | O_CLOEXEC, 0644); });
    if (fd < 0) return OpenError(errno);
    return fd;
  }

  ErrorCode Close(int fd) override {
    // close(2) must not be retried on EINTR (the fd is released either way).
    if (::close(fd) != 0 && errno != EINTR) return ErrorCode::FILE_WRITE_FAIL;
    return ErrorCode::OK;
  }

  ErrorCode PReadCached(int fd, void* buf, uint64_t len, uint64_t offset, bool* done) override {
    return ReadFully(fd, buf, len, offset, RWF_NOWAIT, done);
  }

  ErrorCode PRead(int fd, void* buf, uint64_t len, uint64_t offset) override {
    bool done = false;
    return ReadFully(fd, buf, len, offset, 0, &done);
  }

  ErrorCode PWrite(int fd, const void* buf, uint64_t len, uint64_t offset) override {
    iovec one{const_cast<void*>(buf), static_cast<size_t>(len)};
    return PWriteV(fd, std::span<const iovec>(&one, 1), offset);
  }

  ErrorCode PWriteV(int fd, std::span<const iovec> iov, uint64_t offset) override {
    std::vector<iovec> rest(iov.begin(), iov.end());
    size_t first = 0;
    Advance(&rest, &first, 0);
    while (first < rest.size()) {
      int count = static_cast<int>(std::min<size_t>(rest.size() - first, IOV_MAX));
      ssize_t n = RetryEintr(
          [&] { return ::pwritev(fd, rest.data() + first, count, static_cast<off_t>(offset)); });
      if (n < 0) return ErrorCode::FILE_WRITE_FAIL;
      if (n == 0) {  // no progress on a non-empty write: treat as an I/O error
        errno = EIO;
        return ErrorCode::FILE_WRITE_FAIL;
      }
      offset += static_cast<uint64_t>(n);
      Advance(&rest, &first, static_cast<uint64_t>(n));
    }
    return ErrorCode::OK;
  }

  ErrorCode Fallocate(int fd, uint64_t offset, uint64_t len) override {
    int rc = RetryEintr([&] {
      return ::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(len));
    });
    if (rc == 0) return ErrorCode::OK;
    if (errno != EOPNOTSUPP) return ErrorCode::FILE_WRITE_FAIL;
    // A file system without fallocate(2): posix_fallocate writes the blocks.
    int err = ::posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(len));
    if (err == 0) return ErrorCode::OK;
    errno = err;
    return ErrorCode::FILE_WRITE_FAIL;
  }

  ErrorCode FDataSync(int fd) override {
    if (RetryEintr([&] { return ::fdatasync(fd); }) != 0) return ErrorCode::FILE_WRITE_FAIL;
    return ErrorCode::OK;
  }

  ErrorCode FSync(int fd) override {
    if (RetryEintr([&] { return ::fsync(fd); }) != 0) return ErrorCode::FILE_WRITE_FAIL;
    return ErrorCode::OK;
  }

  Result<uint64_t> FileSize(int fd) override {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return ErrorCode::FILE_READ_FAIL;
    return static_cast<uint64_t>(st.st_size);
  }

  ErrorCode Truncate(int fd, uint64_t len) override {
    if (RetryEintr([&] { return ::ftruncate(fd, static_cast<off_t>(len)); }) != 0) {
      return ErrorCode::FILE_WRITE_FAIL;
    }
    return ErrorCode::OK;
  }

  ErrorCode Rename(const std::string& from, const std::string& to) override {
    if (RetryEintr([&] { return ::rename(from.c_str(), to.c_str()); }) != 0) {
      return WriteError(errno);
    }
    return ErrorCode::OK;
  }

  ErrorCode Remove(const std::string& path) override {
    if (RetryEintr([&] { return ::unlink(path.c_str()); }) != 0) return WriteError(errno);
    return ErrorCode::OK;
  }

  ErrorCode SyncDir(const std::string& dir) override {
    int fd = RetryEintr(
        [&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return OpenError(errno);
    int rc = RetryEintr([&] { return ::fsync(fd); });
    int err = errno;
    ::close(fd);
    if (rc != 0) {
      errno = err;
      return ErrorCode::FILE_WRITE_FAIL;
    }
    return ErrorCode::OK;
  }

  Result<std::vector<std::string>> List(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return OpenError(errno);
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      dirent* e = ::readdir(d);
      if (e == nullptr) break;
      if (IsRegular(d, *e)) names.emplace_back(e->d_name);
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) {
      errno = err;
      return ErrorCode::FILE_READ_FAIL;
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  // d_type when the file system fills it in, else an lstat of the entry.
  static bool IsRegular(DIR* d, const dirent& e) {
    if (e.d_type != DT_UNKNOWN) return e.d_type == DT_REG;
    struct stat st {};
    int saved = errno;
    bool regular = ::fstatat(::dirfd(d), e.d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                   S_ISREG(st.st_mode);
    errno = saved;
    return regular;
  }
};

}  // namespace

std::unique_ptr<FileIo> MakePosixFileIo() { return std::make_unique<PosixFileIo>(); }

}  // namespace shelfmark
