// PosixFileIo against real files in a temporary directory: round trips,
// vectored writes longer than IOV_MAX, exact reads, a short write continued
// into the error that stops it (RLIMIT_FSIZE), typed errors with errno, and
// directory listing.
#include "ssdstore/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <filesystem>

#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

class PosixFileIoTest : public ::testing::Test {
 protected:
  int OpenOk(const std::string& path, int flags) {
    auto fd = io_->Open(path, flags);
    EXPECT_TRUE(fd.ok()) << path << ": " << ErrorCodeName(fd.error());
    return fd.ok() ? *fd : -1;
  }

  TempDir dir_;
  std::unique_ptr<FileIo> io_ = MakePosixFileIo();
};

TEST_F(PosixFileIoTest, WriteReadRoundTripAndSize) {
  std::string path = dir_.Join("a");
  int fd = OpenOk(path, O_CREAT | O_RDWR);
  ASSERT_GE(fd, 0);
  std::string data(10000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  EXPECT_EQ(io_->PWrite(fd, data.data(), data.size(), 100), ErrorCode::OK);
  EXPECT_EQ(io_->FDataSync(fd), ErrorCode::OK);
  EXPECT_EQ(io_->FSync(fd), ErrorCode::OK);
  auto size = io_->FileSize(fd);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 10100u);

  std::string back(data.size(), 'x');
  EXPECT_EQ(io_->PRead(fd, back.data(), back.size(), 100), ErrorCode::OK);
  EXPECT_EQ(back, data);
  std::string hole(100, 'x');
  EXPECT_EQ(io_->PRead(fd, hole.data(), hole.size(), 0), ErrorCode::OK);
  EXPECT_EQ(hole, std::string(100, '\0'));
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(ReadFile(path), std::string(100, '\0') + data);
  // Opening an existing file with O_CREAT keeps it; the mode is 0644.
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~mask);
}

TEST_F(PosixFileIoTest, ReadPastEndIsReadFailWithErrnoZero) {
  WriteFile(dir_.Join("short"), "12345");
  int fd = OpenOk(dir_.Join("short"), O_RDONLY);
  char buf[8];
  errno = EINVAL;
  EXPECT_EQ(io_->PRead(fd, buf, 8, 0), ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(errno, 0);
  EXPECT_EQ(io_->PRead(fd, buf, 1, 5), ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(io_->PRead(fd, buf, 5, 0), ErrorCode::OK);
  EXPECT_EQ(std::string(buf, 5), "12345");
  EXPECT_EQ(io_->PRead(fd, buf, 0, 100), ErrorCode::OK);  // nothing asked, nothing read
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
}

TEST_F(PosixFileIoTest, VectoredWriteLongerThanIovMax) {
  int fd = OpenOk(dir_.Join("v"), O_CREAT | O_RDWR);
  // 3 * IOV_MAX pieces, some empty, of varying length.
  std::vector<std::string> pieces;
  std::string expected;
  for (int i = 0; i < 3 * IOV_MAX; ++i) {
    pieces.emplace_back(static_cast<size_t>(i % 5), static_cast<char>('a' + i % 26));
    expected += pieces.back();
  }
  std::vector<iovec> iov;
  for (auto& p : pieces) iov.push_back({p.data(), p.size()});
  EXPECT_EQ(io_->PWriteV(fd, iov, 3), ErrorCode::OK);
  EXPECT_EQ(io_->PWriteV(fd, std::span<const iovec>(), 0), ErrorCode::OK);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(ReadFile(dir_.Join("v")), std::string(3, '\0') + expected);
}

// RLIMIT_FSIZE makes the kernel write only up to the limit (a real short
// write); the next call of the continuation then fails with EFBIG. Without
// the continuation the write would wrongly report success.
TEST_F(PosixFileIoTest, ShortWriteIsContinuedUntilTheError) {
  int fd = OpenOk(dir_.Join("limited"), O_CREAT | O_RDWR);
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old), 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limited = saved;
  limited.rlim_cur = 5000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string data(8000, 'z');
  ErrorCode code = io_->PWrite(fd, data.data(), data.size(), 0);
  int err = errno;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
  ASSERT_EQ(::sigaction(SIGXFSZ, &old, nullptr), 0);
  EXPECT_EQ(code, ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(err, EFBIG);
  EXPECT_EQ(ReadFile(dir_.Join("limited")), std::string(5000, 'z'));
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
}

TEST_F(PosixFileIoTest, TypedErrorsKeepErrno) {
  auto missing = io_->Open(dir_.Join("none"), O_RDWR);
  EXPECT_EQ(missing.error(), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(errno, ENOENT);
  auto is_dir = io_->Open(dir_.path(), O_RDWR);
  EXPECT_EQ(is_dir.error(), ErrorCode::FILE_OPEN_FAIL);
  EXPECT_EQ(errno, EISDIR);

  WriteFile(dir_.Join("ro"), "abc");
  int fd = OpenOk(dir_.Join("ro"), O_RDONLY);
  EXPECT_EQ(io_->PWrite(fd, "x", 1, 0), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(io_->Truncate(fd, 0), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->Fallocate(fd, 0, 4096), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(ReadFile(dir_.Join("ro")), "abc");

  char c;
  EXPECT_EQ(io_->PRead(fd, &c, 1, 0), ErrorCode::FILE_READ_FAIL);  // closed fd
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(io_->FileSize(fd).error(), ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(io_->FDataSync(fd), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->FSync(fd), ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(io_->Close(fd), ErrorCode::FILE_WRITE_FAIL);

  EXPECT_EQ(io_->Rename(dir_.Join("none"), dir_.Join("b")), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(io_->Remove(dir_.Join("none")), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(io_->Remove(dir_.path()), ErrorCode::FILE_WRITE_FAIL);  // a directory
  EXPECT_EQ(io_->SyncDir(dir_.Join("none")), ErrorCode::FILE_NOT_FOUND);
  EXPECT_EQ(io_->SyncDir(dir_.Join("ro")), ErrorCode::FILE_OPEN_FAIL);  // not a directory
  EXPECT_EQ(errno, ENOTDIR);
  EXPECT_EQ(io_->List(dir_.Join("none")).error(), ErrorCode::FILE_NOT_FOUND);
}

TEST_F(PosixFileIoTest, FallocateTruncateRenameRemove) {
  std::string a = dir_.Join("a");
  int fd = OpenOk(a, O_CREAT | O_RDWR);
  EXPECT_EQ(io_->Fallocate(fd, 0, 1 << 16), ErrorCode::OK);
  EXPECT_EQ(*io_->FileSize(fd), 1u << 16);
  EXPECT_EQ(io_->PWrite(fd, "hello", 5, 10), ErrorCode::OK);
  EXPECT_EQ(io_->Truncate(fd, 12), ErrorCode::OK);
  EXPECT_EQ(*io_->FileSize(fd), 12u);
  EXPECT_EQ(io_->Close(fd), ErrorCode::OK);
  EXPECT_EQ(ReadFile(a), std::string(10, '\0') + "he");

  WriteFile(dir_.Join("b"), "old b");
  EXPECT_EQ(io_->Rename(a, dir_.Join("b")), ErrorCode::OK);  // replaces b
  EXPECT_EQ(io_->SyncDir(dir_.path()), ErrorCode::OK);
  EXPECT_FALSE(std::filesystem::exists(a));
  EXPECT_EQ(ReadFile(dir_.Join("b")), std::string(10, '\0') + "he");
  EXPECT_EQ(io_->Remove(dir_.Join("b")), ErrorCode::OK);
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("b")));
}

TEST_F(PosixFileIoTest, ListNamesRegularFilesSorted) {
  WriteFile(dir_.Join("c.meta"), "1");
  WriteFile(dir_.Join("a.bucket"), "2");
  WriteFile(dir_.Join("b"), "3");
  std::filesystem::create_directory(dir_.Join("sub"));
  std::filesystem::create_symlink(dir_.Join("b"), dir_.Join("link"));
  auto names = io_->List(dir_.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a.bucket", "b", "c.meta"}));
  auto empty = io_->List(dir_.Join("sub"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace shelfmark
