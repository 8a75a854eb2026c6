#include "transport/local_share.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/sanitizer.h"
#include "common/socket_io.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

// A connection to the share `name`, as a client would open it.
UniqueFd ConnectShare(const std::string& name) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) return UniqueFd();
  return fd;
}

// Reads exactly `size` bytes ("" when the peer stops first).
std::string ReadExactly(int fd, size_t size) {
  std::string in(size, '\0');
  size_t got = 0;
  while (got < size && WaitFd(fd, POLLIN, 5000)) {
    const ssize_t n = recv(fd, in.data() + got, size - got, 0);  // drops any descriptors
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got == size ? in : "";
}

class LocalShareTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSize = 1 << 20;
  void SetUp() override {
    memfd_.Reset(memfd_create("local-share-test", MFD_CLOEXEC));
    ASSERT_TRUE(memfd_.valid());
    ASSERT_EQ(ftruncate(memfd_.get(), kSize), 0);
    void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_.get(), 0);
    ASSERT_NE(mem, MAP_FAILED);
    segment_ = static_cast<char*>(mem);
    auto server = LocalShareServer::Start(memfd_.get(), 0x10000, kSize, "secret");
    ASSERT_TRUE(server.ok());
    server_ = std::move(server).value();
  }
  void TearDown() override {
    server_.reset();
    munmap(segment_, kSize);
  }
  UniqueFd memfd_;
  char* segment_ = nullptr;
  std::unique_ptr<LocalShareServer> server_;
};

TEST_F(LocalShareTest, TheRightTokenMapsTheSegmentReadWrite) {
  std::string error;
  auto mapping = MapLocalShare(server_->name(), "secret", 2000, &error);
  ASSERT_NE(mapping, nullptr) << error;
  EXPECT_EQ(mapping->base(), 0x10000u);
  EXPECT_EQ(mapping->size(), kSize);
  EXPECT_TRUE(mapping->Alive());
  std::memcpy(segment_ + 100, "fresh", 5);  // the node's writes are seen at once
  char got[5] = {};
  ASSERT_TRUE(mapping->Covers(0x10000 + 100, 5));
  mapping->Read(0x10000 + 100, got, 5);
  EXPECT_EQ(std::string(got, 5), "fresh");
  mapping->Write(0x10000 + kSize - 3, "put", 3);  // the client's writes are the node's at once
  EXPECT_EQ(std::string(segment_ + kSize - 3, 3), "put");
  EXPECT_FALSE(mapping->Covers(0x10000 - 1, 2));
  EXPECT_FALSE(mapping->Covers(0x10000 + kSize - 4, 5));
  EXPECT_FALSE(mapping->Covers(UINT64_MAX - 2, 5));
  // Counted after the answer is sent: the client may see the answer first.
  EXPECT_TRUE(testing::WaitFor([&] { return server_->shared() == 1; }, 5000));
}

// A read or a write asked for the checksum computes it of the bytes it
// copied (a write: a put into another process's segment reads its source
// once, common/checksum.h StreamChecksum64).
TEST_F(LocalShareTest, AReadCanChecksumTheBytesItCopies) {
  std::string error;
  auto mapping = MapLocalShare(server_->name(), "secret", 2000, &error);
  ASSERT_NE(mapping, nullptr) << error;
  for (uint64_t i = 0; i < 70'000; ++i) segment_[4096 + i] = static_cast<char>(i * 7 + 3);
  std::string got(70'000, '\0');
  std::optional<uint64_t> sum;
  mapping->Read(0x10000 + 4096, got.data(), got.size(), &sum);
  EXPECT_EQ(got, std::string(segment_ + 4096, got.size()));
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(*sum, Checksum64(got));
  std::string streamed(got.size() + 16, '\0');  // streamed from 16 bytes past, as a numpy array
  std::optional<uint64_t> streamed_sum;
  mapping->Read(0x10000 + 4096, streamed.data() + 16, got.size(), &streamed_sum, /*stream=*/true);
  EXPECT_EQ(streamed.substr(16), got);
  EXPECT_EQ(streamed_sum, sum);
  std::string put(70'001, '\0');
  for (size_t i = 0; i < put.size(); ++i) put[i] = static_cast<char>(i * 11 + 5);
  std::optional<uint64_t> put_sum;
  mapping->Write(0x10000 + 8192 + 3, put.data(), put.size(), &put_sum);
  EXPECT_EQ(std::string(segment_ + 8192 + 3, put.size()), put);
  EXPECT_EQ(put_sum, std::optional<uint64_t>(Checksum64(put)));
}

// A client's first copy into a chunk of the segment fills that chunk's
// page tables (common/page_populator.h), so its copies into the chunk's
// other pages take no fault each (255 without it).
TEST_F(LocalShareTest, TheFirstCopyMapsItsChunkSoLaterCopiesDoNotFault) {
  if (kShadowMemory) GTEST_SKIP() << "a sanitizer's shadow memory faults too";
  std::string error;
  auto mapping = MapLocalShare(server_->name(), "secret", 2000, &error);
  ASSERT_NE(mapping, nullptr) << error;
  mapping->Write(0x10000, "x", 1);
  const std::string page(4096, 'p');
  rusage before{}, after{};
  getrusage(RUSAGE_THREAD, &before);
  for (uint64_t at = 4096; at < kSize; at += page.size()) {
    mapping->Write(0x10000 + at, page.data(), page.size());
  }
  getrusage(RUSAGE_THREAD, &after);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, static_cast<long>(kSize / 4096 / 4));
  EXPECT_EQ(std::string(segment_ + kSize - page.size(), page.size()), page);
}

TEST_F(LocalShareTest, AWrongTokenOrGarbageGetsNothingAndTheServerGoesOn) {
  std::string error;
  EXPECT_EQ(MapLocalShare(server_->name(), "guess", 2000, &error), nullptr);
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  for (size_t size : {size_t{1}, size_t{4096}, size_t{65536}}) {
    UniqueFd fd = ConnectShare(server_->name());
    ASSERT_TRUE(fd.valid());
    SendAll(fd.get(), std::string(size, '\0'), 1000);
  }
  auto mapping = MapLocalShare(server_->name(), "secret", 2000, &error);
  EXPECT_NE(mapping, nullptr) << error;
  EXPECT_TRUE(testing::WaitFor([&] { return server_->refused() >= 2; }, 5000));
}

// The token never travels: a client proves it over the node's fresh nonce,
// so an answer recorded on one connection is refused on the next.
TEST_F(LocalShareTest, ARecordedAnswerIsRefusedAgainstAFreshChallenge) {
  namespace w = local_share_wire;
  UniqueFd first = ConnectShare(server_->name());
  ASSERT_TRUE(first.valid());
  std::optional<auth::Nonce> nonce = w::DecodeChallenge(ReadExactly(first.get(), w::kChallengeSize));
  ASSERT_TRUE(nonce.has_value());
  const std::string recorded = w::EncodeAnswer("secret", server_->name(), *nonce, auth::NewNonce());
  EXPECT_EQ(recorded.find("secret"), std::string::npos);
  ASSERT_TRUE(SendAll(first.get(), recorded, 1000));
  UniqueFd memfd, pidfd;
  std::optional<w::Reply> reply = w::DecodeReply(w::ReceiveReply(first.get(), &memfd, &pidfd));
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->accepted);  // the answer was good where it was made
  EXPECT_TRUE(memfd.valid() && pidfd.valid());  // the memfd (mapped read-write), the pidfd

  UniqueFd second = ConnectShare(server_->name());
  ASSERT_TRUE(second.valid());
  std::optional<auth::Nonce> fresh =
      w::DecodeChallenge(ReadExactly(second.get(), w::kChallengeSize));
  ASSERT_TRUE(fresh.has_value());
  EXPECT_NE(*fresh, *nonce);
  ASSERT_TRUE(SendAll(second.get(), recorded, 1000));
  UniqueFd no_memfd, no_pidfd;
  reply = w::DecodeReply(w::ReceiveReply(second.get(), &no_memfd, &no_pidfd));
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->accepted);
  EXPECT_FALSE(no_memfd.valid() || no_pidfd.valid());  // without the token: nothing to map
  EXPECT_EQ(reply->size, 0u);
  EXPECT_TRUE(testing::WaitFor([&] { return server_->refused() == 1; }, 5000));
  EXPECT_EQ(server_->shared(), 1u);
}

// A server that accepts anyone but cannot prove the token (it holds
// another): the client maps nothing, though descriptors were offered, so it
// neither reads an impostor's memory nor writes object bytes into it.
TEST_F(LocalShareTest, AServerThatCannotProveTheTokenIsNotMapped) {
  auto impostor = LocalShareServer::Start(memfd_.get(), 0x10000, kSize, "other");
  ASSERT_TRUE(impostor.ok());
  (*impostor)->TestingAcceptAnyAnswer();
  std::string error;
  EXPECT_EQ(MapLocalShare((*impostor)->name(), "secret", 2000, &error), nullptr);
  EXPECT_NE(error.find("did not prove the cluster token"), std::string::npos) << error;
  EXPECT_TRUE(testing::WaitFor([&] { return (*impostor)->shared() == 1; }, 5000));
  // Without the hook the same server refuses the client outright.
  auto honest = LocalShareServer::Start(memfd_.get(), 0x10000, kSize, "other");
  ASSERT_TRUE(honest.ok());
  EXPECT_EQ(MapLocalShare((*honest)->name(), "secret", 2000, &error), nullptr);
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
}

TEST_F(LocalShareTest, NoSuchShareSaysSo) {
  std::string error;
  EXPECT_EQ(MapLocalShare("shelfmark-share-none", "secret", 500, &error), nullptr);
  EXPECT_NE(error.find("cannot reach"), std::string::npos) << error;
  EXPECT_FALSE(HostBootId().empty());
}

// A call's reads stream once they move kStreamReadBytes together; writes
// always stream (CopyLocal), so the rule is for reads only.
TEST(StreamsReadsTest, ReadsStreamFromTheThresholdOn) {
  std::vector<TransferOp> ops(4);
  for (TransferOp& op : ops) op.length = kStreamReadBytes / 4;
  EXPECT_TRUE(StreamsReads(TransferKind::READ, ops));
  EXPECT_FALSE(StreamsReads(TransferKind::WRITE, ops));
  ops.back().length -= 1;
  EXPECT_FALSE(StreamsReads(TransferKind::READ, ops));
  EXPECT_FALSE(StreamsReads(TransferKind::READ, {}));
}

// The mapping outlives the node process (the memfd stays alive while
// mapped), so Alive() is what tells a reader that the memory is no longer a
// live node's segment.
TEST(LocalShareProcessTest, AliveTurnsFalseWhenTheNodeProcessExits) {
  int name_pipe[2], stop_pipe[2];
  ASSERT_EQ(pipe(name_pipe), 0);
  ASSERT_EQ(pipe(stop_pipe), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the "node": share a segment, say its name, wait, exit
    close(stop_pipe[1]);  // else its own copy keeps the pipe from reaching EOF
    close(name_pipe[0]);
    const int memfd = memfd_create("local-share-child", MFD_CLOEXEC);
    if (memfd < 0 || ftruncate(memfd, 4096) != 0) _exit(1);
    auto server = LocalShareServer::Start(memfd, 0, 4096, "t");
    if (!server.ok()) _exit(2);
    const std::string& name = (*server)->name();
    if (write(name_pipe[1], name.data(), name.size()) != static_cast<ssize_t>(name.size())) {
      _exit(3);
    }
    char byte;
    (void)!read(stop_pipe[0], &byte, 1);
    _exit(0);
  }
  close(name_pipe[1]);
  close(stop_pipe[0]);
  char name[128] = {};
  const ssize_t n = read(name_pipe[0], name, sizeof(name));
  ASSERT_GT(n, 0);
  std::string error;
  auto mapping = MapLocalShare(std::string(name, static_cast<size_t>(n)), "t", 2000, &error);
  ASSERT_NE(mapping, nullptr) << error;
  EXPECT_TRUE(mapping->Alive());
  close(stop_pipe[1]);  // the child reads EOF and exits
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(mapping->Alive());
  close(name_pipe[0]);
}

}  // namespace
}  // namespace shelfmark
