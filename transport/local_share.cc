#include "transport/local_share.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/checksum.h"
#include "common/copy_bytes.h"
#include "common/socket_io.h"
#include "common/wire_bytes.h"
#include "transport/proof_parts.h"

namespace shelfmark {
namespace local_share_wire {
namespace {

constexpr uint32_t kMagic = 0x534c4d53;  // "SMLS"
constexpr uint8_t kVersion = 2;          // 2: challenge-response instead of the token

struct ClientAnswer {
  auth::Nonce client_nonce{};
  auth::Proof proof{};
};

auth::Proof ClientProof(std::string_view token, std::string_view name,
                        const auth::Nonce& node_nonce, const auth::Nonce& client_nonce) {
  return auth::Prove(token, "share/client",
                     {auth::Bytes(node_nonce), auth::Bytes(client_nonce), name});
}

auth::Proof NodeProof(std::string_view token, std::string_view name,
                      const auth::Nonce& node_nonce, const auth::Nonce& client_nonce,
                      uint64_t base, uint64_t size) {
  return auth::Prove(token, "share/node",
                     {auth::Bytes(node_nonce), auth::Bytes(client_nonce), name, Le64Part(base),
                      Le64Part(size)});
}

std::optional<ClientAnswer> DecodeAnswer(std::string_view bytes) {
  wire::Reader in(bytes.data(), bytes.size());
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  ClientAnswer answer;
  answer.client_nonce = in.Get<auth::Nonce>();
  answer.proof = in.Get<auth::Proof>();
  if (!in.done() || magic != kMagic || version != kVersion) return std::nullopt;
  return answer;
}

std::string EncodeReply(const Reply& reply) {
  return wire::Writer()
      .Put(kMagic)
      .Put(kVersion)
      .Put(static_cast<uint8_t>(reply.accepted))
      .Put(reply.base)
      .Put(reply.size)
      .Put(reply.proof)
      .Take();
}

}  // namespace

std::string EncodeChallenge(const auth::Nonce& node_nonce) {
  return wire::Writer().Put(kMagic).Put(kVersion).Put(node_nonce).Take();
}

std::optional<auth::Nonce> DecodeChallenge(std::string_view bytes) {
  wire::Reader in(bytes.data(), bytes.size());
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  const auto nonce = in.Get<auth::Nonce>();
  if (!in.done() || magic != kMagic || version != kVersion) return std::nullopt;
  return nonce;
}

std::string EncodeAnswer(std::string_view token, std::string_view name,
                         const auth::Nonce& node_nonce, const auth::Nonce& client_nonce) {
  return wire::Writer()
      .Put(kMagic)
      .Put(kVersion)
      .Put(client_nonce)
      .Put(ClientProof(token, name, node_nonce, client_nonce))
      .Take();
}

std::optional<Reply> DecodeReply(std::string_view bytes) {
  wire::Reader in(bytes.data(), bytes.size());
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  const auto accepted = in.Get<uint8_t>();
  Reply reply;
  reply.base = in.Get<uint64_t>();
  reply.size = in.Get<uint64_t>();
  reply.proof = in.Get<auth::Proof>();
  if (!in.done() || magic != kMagic || version != kVersion || accepted > 1) return std::nullopt;
  reply.accepted = accepted == 1;
  return reply;
}

std::string ReceiveReply(int fd, UniqueFd* memfd, UniqueFd* pidfd) {
  char buf[kReplySize + 1];  // one more: a longer reply is not one
  iovec iov{buf, sizeof(buf)};
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n >= 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.emplace_back(received);
    }
  }
  if (fds.size() == 2) {
    *memfd = std::move(fds[0]);
    *pidfd = std::move(fds[1]);
  }
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace local_share_wire

namespace {

using namespace local_share_wire;

constexpr int kDeadlineMs = 500;  // per connection, node side

sockaddr_un AbstractAddress(std::string_view name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);  // sun_path[0] = 0: abstract
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return addr;
}

std::string RandomName() {
  uint64_t bits[2] = {};
  auth::RandomBytes(bits, sizeof(bits));
  char name[64];
  std::snprintf(name, sizeof(name), "shelfmark-share-%016llx%016llx",
                static_cast<unsigned long long>(bits[0]), static_cast<unsigned long long>(bits[1]));
  return name;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Reads up to `size` bytes, each wait bounded by `timeout_ms`, until the
// peer stops sending.
std::string ReadUpTo(int fd, size_t size, int timeout_ms) {
  std::string in;
  char buf[256];
  while (in.size() < size && WaitFd(fd, POLLIN, timeout_ms)) {
    const ssize_t n = recv(fd, buf, std::min(sizeof(buf), size - in.size()), MSG_DONTWAIT);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  return in;
}

}  // namespace

Result<std::unique_ptr<LocalShareServer>> LocalShareServer::Start(int memfd, uint64_t base,
                                                                  uint64_t size,
                                                                  std::string cluster_token) {
  std::unique_ptr<LocalShareServer> server(new LocalShareServer());
  server->name_ = RandomName();
  server->token_ = std::move(cluster_token);
  server->base_ = base;
  server->size_ = size;
  server->memfd_ = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
  server->pidfd_ = PidfdOpen(getpid());
  server->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (server->memfd_ < 0 || server->pidfd_ < 0 || server->listen_fd_ < 0) {
    return ErrorCode::INTERNAL_ERROR;
  }
  socklen_t len = 0;
  sockaddr_un addr = AbstractAddress(server->name_, &len);
  if (bind(server->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(server->listen_fd_, 64) != 0 ||
      !server->loop_.Start([raw = server.get()] { raw->Serve(); })) {
    return ErrorCode::INTERNAL_ERROR;
  }
  return server;
}

LocalShareServer::~LocalShareServer() {
  loop_.Stop();
  for (int* fd : {&listen_fd_, &memfd_, &pidfd_}) CloseFd(*fd);
}

void LocalShareServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{loop_.wake_fd(), POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[0].revents != 0) return;
    UniqueFd conn(accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (conn.valid()) {
      Answer(conn.get());
    } else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
      poll(nullptr, 0, 100);  // out of descriptors: back off, go on
    }
  }
}

void LocalShareServer::Answer(int fd) {
  const auth::Nonce node_nonce = auth::NewNonce();
  if (!SendAll(fd, EncodeChallenge(node_nonce), kDeadlineMs)) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::optional<ClientAnswer> answer = DecodeAnswer(ReadUpTo(fd, kAnswerSize, kDeadlineMs));
  const auth::Nonce client_nonce = answer ? answer->client_nonce : auth::Nonce{};
  const bool accepted =
      accept_any_answer_.load() ||
      (answer && auth::ProofMatches(ClientProof(token_, name_, node_nonce, client_nonce),
                                    auth::BytesOf(answer->proof)));
  Reply verdict;
  if (accepted) {
    verdict = {true, base_, size_, NodeProof(token_, name_, node_nonce, client_nonce, base_, size_)};
  }
  const std::string reply = EncodeReply(verdict);
  iovec iov{const_cast<char*>(reply.data()), reply.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  if (accepted) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(2 * sizeof(int));
    const int fds[2] = {memfd_, pidfd_};
    std::memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
  }
  const bool sent = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) ==
                    static_cast<ssize_t>(reply.size());
  (accepted && sent ? shared_ : refused_).fetch_add(1, std::memory_order_relaxed);
}

LocalMapping::~LocalMapping() {
  if (memory_ != nullptr) munmap(memory_, size_);
  if (pidfd_ >= 0) close(pidfd_);
}

bool LocalMapping::Alive() const {
  pollfd p{pidfd_, POLLIN, 0};
  return poll(&p, 1, 0) == 0;  // readable (or an error): the process exited
}

void CopyLocal(TransferKind kind, void* local, uint8_t* at, uint64_t length,
               std::optional<uint64_t>* checksum, bool stream_reads) {
  const bool read = kind == TransferKind::READ;
  void* dst = read ? local : at;
  const void* src = read ? at : local;
  const bool stream = !read || stream_reads;
  if (checksum != nullptr) {
    *checksum = stream ? StreamChecksum64(dst, src, length) : CopyChecksum64(dst, src, length);
  } else if (stream) {
    StreamBytes(dst, src, length);
  } else {
    CopyBytes(dst, src, length);
  }
}

bool StreamsReads(TransferKind kind, std::span<const TransferOp> ops) {
  if (kind != TransferKind::READ) return false;
  uint64_t bytes = 0;
  for (const TransferOp& op : ops) {
    bytes += op.length;
    if (bytes >= kStreamReadBytes) return true;
  }
  return false;
}

void LocalMapping::Read(uint64_t address, void* dst, uint64_t length,
                        std::optional<uint64_t>* checksum, bool stream) const {
  populator_->Touch(address - base_, length);
  CopyLocal(TransferKind::READ, dst, memory_ + (address - base_), length, checksum, stream);
}

void LocalMapping::Write(uint64_t address, const void* src, uint64_t length,
                         std::optional<uint64_t>* checksum) const {
  populator_->Touch(address - base_, length);
  CopyLocal(TransferKind::WRITE, const_cast<void*>(src), memory_ + (address - base_), length,
            checksum);
}

std::shared_ptr<LocalMapping> MapLocalShare(std::string_view name, std::string_view cluster_token,
                                            int timeout_ms, std::string* error) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  socklen_t len = 0;
  sockaddr_un addr = AbstractAddress(name, &len);
  if (!fd.valid() || connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    *error = "local share: cannot reach " + std::string(name) + ": " + std::strerror(errno);
    return nullptr;
  }
  const std::optional<auth::Nonce> node_nonce =
      DecodeChallenge(ReadUpTo(fd.get(), kChallengeSize, timeout_ms));
  if (!node_nonce) {
    *error = "local share: no challenge";
    return nullptr;
  }
  const auth::Nonce client_nonce = auth::NewNonce();
  if (!SendAll(fd.get(), EncodeAnswer(cluster_token, name, *node_nonce, client_nonce),
               timeout_ms) ||
      !WaitFd(fd.get(), POLLIN, timeout_ms)) {
    *error = "local share: no answer";
    return nullptr;
  }
  UniqueFd memfd, pidfd;
  const std::optional<Reply> reply = DecodeReply(ReceiveReply(fd.get(), &memfd, &pidfd));
  if (!reply) {
    *error = "local share: bad answer";
    return nullptr;
  }
  if (!reply->accepted) {
    *error = "local share: refused";
    return nullptr;
  }
  // Nothing of the node's is used before it proved the token.
  const auth::Proof expected =
      NodeProof(cluster_token, name, *node_nonce, client_nonce, reply->base, reply->size);
  if (!auth::ProofMatches(expected, auth::BytesOf(reply->proof))) {
    *error = "local share: " + std::string(name) + " did not prove the cluster token";
    return nullptr;
  }
  const uint64_t base = reply->base, size = reply->size;
  if (!memfd.valid() || !pidfd.valid() || size == 0) {
    *error = "local share: refused";
    return nullptr;
  }
  // Read-write: same-host puts are copies too (the token already allows
  // them over the transport; local_share.h).
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
  if (memory == MAP_FAILED) {
    *error = std::string("local share: mmap: ") + std::strerror(errno);
    return nullptr;
  }
  std::shared_ptr<LocalMapping> mapping(new LocalMapping());
  mapping->memory_ = static_cast<uint8_t*>(memory);
  mapping->base_ = base;
  mapping->size_ = size;
  mapping->pidfd_ = pidfd.Release();
  mapping->populator_ = std::make_unique<PagePopulator>(memory, size);
  return mapping;
}

std::string HostBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace shelfmark
