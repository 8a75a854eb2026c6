#include "transport/local_share.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/socket_io.h"
#include "common/wire_bytes.h"

namespace shelfmark {
namespace {

constexpr uint32_t kMagic = 0x534c4d53;  // "SMLS"
constexpr uint8_t kVersion = 1;
constexpr int kDeadlineMs = 500;          // per connection, node side
constexpr size_t kMaxHello = 4096 + 16;  // a hello with a token of up to 4 KiB

std::string EncodeHello(std::string_view token) {
  return wire::Writer().Put(kMagic).Put(kVersion).Bytes(token).Take();
}

std::string EncodeReply(bool accepted, uint64_t base, uint64_t size) {
  return wire::Writer()
      .Put(kMagic)
      .Put(kVersion)
      .Put(static_cast<uint8_t>(accepted))
      .Put(base)
      .Put(size)
      .Take();
}

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
  if (getrandom(bits, sizeof(bits), 0) != static_cast<ssize_t>(sizeof(bits))) {
    bits[0] = static_cast<uint64_t>(getpid());
    bits[1] = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  char name[64];
  std::snprintf(name, sizeof(name), "shelfmark-share-%016llx%016llx",
                static_cast<unsigned long long>(bits[0]), static_cast<unsigned long long>(bits[1]));
  return name;
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Reads up to `max` bytes until the peer stops sending or the deadline.
std::string ReadHello(int fd) {
  std::string in;
  char buf[1024];
  while (in.size() < kMaxHello && WaitFd(fd, POLLIN, kDeadlineMs)) {
    const ssize_t n = recv(fd, buf, std::min(sizeof(buf), kMaxHello - in.size()), MSG_DONTWAIT);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    wire::Reader probe(in.data(), in.size());
    probe.Get<uint32_t>();
    probe.Get<uint8_t>();
    probe.Bytes();
    if (probe.done()) break;  // a whole hello
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
  const std::string in = ReadHello(fd);
  wire::Reader hello(in.data(), in.size());
  const auto magic = hello.Get<uint32_t>();
  const auto version = hello.Get<uint8_t>();
  const std::string token = hello.Bytes();
  const bool accepted = hello.done() && magic == kMagic && version == kVersion && token == token_;
  const std::string reply = EncodeReply(accepted, accepted ? base_ : 0, accepted ? size_ : 0);
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
  if (memory_ != nullptr) munmap(const_cast<uint8_t*>(memory_), size_);
  if (pidfd_ >= 0) close(pidfd_);
}

bool LocalMapping::Alive() const {
  pollfd p{pidfd_, POLLIN, 0};
  return poll(&p, 1, 0) == 0;  // readable (or an error): the process exited
}

void LocalMapping::Read(uint64_t address, void* dst, uint64_t length) const {
  std::memcpy(dst, memory_ + (address - base_), length);
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
  if (!SendAll(fd.get(), EncodeHello(cluster_token), timeout_ms) ||
      !WaitFd(fd.get(), POLLIN, timeout_ms)) {
    *error = "local share: no answer";
    return nullptr;
  }
  char buf[64];
  iovec iov{buf, sizeof(buf)};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd.get(), &msg, MSG_CMSG_CLOEXEC);
  int fds[2] = {-1, -1};
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (n > 0 && cmsg != nullptr && cmsg->cmsg_type == SCM_RIGHTS &&
      cmsg->cmsg_len == CMSG_LEN(2 * sizeof(int))) {
    std::memcpy(fds, CMSG_DATA(cmsg), sizeof(fds));
  }
  UniqueFd memfd(fds[0]), pidfd(fds[1]);
  wire::Reader in(buf, n > 0 ? static_cast<size_t>(n) : 0);
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  const auto accepted = in.Get<uint8_t>();
  const auto base = in.Get<uint64_t>();
  const auto size = in.Get<uint64_t>();
  if (!in.done() || magic != kMagic || version != kVersion) {
    *error = "local share: bad answer";
    return nullptr;
  }
  if (accepted != 1 || !memfd.valid() || !pidfd.valid() || size == 0) {
    *error = "local share: refused";
    return nullptr;
  }
  void* memory = mmap(nullptr, size, PROT_READ, MAP_SHARED, memfd.get(), 0);
  if (memory == MAP_FAILED) {
    *error = std::string("local share: mmap: ") + std::strerror(errno);
    return nullptr;
  }
  std::shared_ptr<LocalMapping> mapping(new LocalMapping());
  mapping->memory_ = static_cast<const uint8_t*>(memory);
  mapping->base_ = base;
  mapping->size_ = size;
  mapping->pidfd_ = pidfd.Release();
  return mapping;
}

std::string HostBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

}  // namespace shelfmark
