#include "storeservice/service_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>

#include "transport/proof_parts.h"

namespace shelfmark::storeservice {
namespace {

// The most descriptors one frame may bring (Register takes one; more are
// closed on arrival and make the request INVALID_PARAMS).
constexpr int kMaxFds = 4;

// Appends the descriptors of `msg`'s SCM_RIGHTS messages to *fds; false when
// the kernel had to truncate them (MSG_CTRUNC: some were closed unseen).
bool TakeFds(msghdr& msg, std::vector<UniqueFd>* fds) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->emplace_back(fd);
    }
  }
  return (msg.msg_flags & MSG_CTRUNC) == 0;
}

// One recvmsg into [out, out + size) (and the descriptors with its bytes);
// the bytes read, 0 for EAGAIN, or the end: kClosed (the peer closed) or
// kBad (an error, truncated descriptors).
struct Received {
  size_t bytes = 0;
  std::optional<ReadStatus> end;
};
Received ReceiveSome(int fd, char* out, size_t size, std::vector<UniqueFd>* fds) {
  for (;;) {
    iovec iov{out, size};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return {};
    if (n < 0) return {0, ReadStatus::kBad};
    const bool fds_whole = TakeFds(msg, fds);
    if (n == 0) return {0, ReadStatus::kClosed};
    if (!fds_whole) return {0, ReadStatus::kBad};
    return {static_cast<size_t>(n), std::nullopt};
  }
}

// Reads exactly `size` bytes (and any descriptors with them); bytes already
// there are taken without a poll.
ReadStatus ReadExact(int fd, char* out, size_t size, std::vector<UniqueFd>* fds,
                     int first_timeout_ms, int timeout_ms) {
  size_t got = 0;
  while (got < size) {
    const Received r = ReceiveSome(fd, out + got, size - got, fds);
    if (r.end) return got == 0 ? *r.end : ReadStatus::kBad;
    got += r.bytes;
    if (r.bytes > 0) continue;
    const int wait = got == 0 ? first_timeout_ms : timeout_ms;
    if (!WaitFd(fd, POLLIN, wait)) return got == 0 ? ReadStatus::kTimeout : ReadStatus::kBad;
  }
  return ReadStatus::kOk;
}

bool GetNonce(wire::Reader& r, auth::Nonce* nonce) {
  const std::string_view bytes = r.BytesView();
  if (bytes.size() != nonce->size()) return false;
  std::memcpy(nonce->data(), bytes.data(), nonce->size());
  return true;
}

bool GetMagic(wire::Reader& r) {
  char magic[4];
  for (char& c : magic) c = r.Get<char>();
  return std::memcmp(magic, kMagic, 4) == 0 && r.Get<uint8_t>() == kVersion;
}

void PutMagic(wire::Writer& w) {
  for (char c : kMagic) w.Put(c);
  w.Put(kVersion);
}

// The address of "@name" (abstract) or a path; false when it does not fit.
bool Address(const std::string& socket, sockaddr_un* addr, socklen_t* len) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  const bool abstract = !socket.empty() && socket[0] == '@';
  if (socket.empty() || socket.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, socket.data(), socket.size());
  if (abstract) addr->sun_path[0] = '\0';
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket.size() +
                                (abstract ? 0 : 1));
  return true;
}

}  // namespace

std::string DefaultSocket(uint16_t port) {
  return "@shelfmark-store-service:" + std::to_string(port);
}

std::string SocketOf(std::string_view server_address) {
  if (server_address.starts_with("unix:")) server_address.remove_prefix(5);
  if (server_address.starts_with("@") || server_address.find('/') != std::string_view::npos) {
    return std::string(server_address);
  }
  const size_t colon = server_address.rfind(':');
  if (colon == std::string_view::npos) return "";
  const std::string_view digits = server_address.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return "";
  }
  const int port = std::stoi(std::string(digits));
  if (port < 1 || port > 65535) return "";
  return DefaultSocket(static_cast<uint16_t>(port));
}

UniqueFd ConnectUnix(const std::string& socket) {
  sockaddr_un addr;
  socklen_t len = 0;
  if (!Address(socket, &addr, &len)) return UniqueFd();
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid() || connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return UniqueFd();
  }
  return fd;
}

int ListenUnix(const std::string& socket) {
  sockaddr_un addr;
  socklen_t len = 0;
  if (!Address(socket, &addr, &len)) return -1;
  if (socket[0] != '@') {
    if (ConnectUnix(socket).valid()) return -1;  // a live service owns it
    unlink(socket.c_str());
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid() || bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd.get(), 128) != 0) {
    return -1;
  }
  return fd.Release();
}

namespace {

// Leaves in `msg` what a sendmsg of it that sent `sent` bytes did not send
// (the descriptor went with the first bytes).
void SkipSent(msghdr* msg, size_t sent) {
  msg->msg_control = nullptr;
  msg->msg_controllen = 0;
  while (sent > 0 && msg->msg_iovlen > 0) {
    const size_t take = std::min(sent, msg->msg_iov[0].iov_len);
    msg->msg_iov[0].iov_base = static_cast<char*>(msg->msg_iov[0].iov_base) + take;
    msg->msg_iov[0].iov_len -= take;
    sent -= take;
    if (msg->msg_iov[0].iov_len == 0) {
      ++msg->msg_iov;
      --msg->msg_iovlen;
    }
  }
}

}  // namespace

bool SendFrame(int fd, std::string_view body, int timeout_ms, int fd_to_pass) {
  char header[4];
  const auto size = static_cast<uint32_t>(body.size());
  std::memcpy(header, &size, sizeof(size));
  // Header and body leave in one sendmsg (no copy of the body); the
  // descriptor rides on the frame's first bytes.
  iovec iov[2] = {{header, sizeof(header)}, {const_cast<char*>(body.data()), body.size()}};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = body.empty() ? 1 : 2;
  if (fd_to_pass >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
  }
  size_t sent = 0;
  while (sent < sizeof(header) + body.size()) {
    const ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!WaitFd(fd, POLLOUT, timeout_ms)) return false;
      continue;
    }
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
    SkipSent(&msg, static_cast<size_t>(n));
  }
  return true;
}

ReadStatus ReadFrame(int fd, std::string* body, std::vector<UniqueFd>* fds,
                     int first_byte_timeout_ms, int timeout_ms, uint32_t max_bytes) {
  char header[4];
  ReadStatus s = ReadExact(fd, header, sizeof(header), fds, first_byte_timeout_ms, timeout_ms);
  if (s != ReadStatus::kOk) return s;
  uint32_t size = 0;
  std::memcpy(&size, header, sizeof(size));
  if (size > max_bytes) return ReadStatus::kBad;
  body->resize(size);
  if (size == 0) return ReadStatus::kOk;
  s = ReadExact(fd, body->data(), size, fds, timeout_ms, timeout_ms);
  return s == ReadStatus::kOk ? s : ReadStatus::kBad;
}

ReadStatus FrameReader::Read(std::string* body, std::vector<UniqueFd>* fds,
                             int first_byte_timeout_ms, int timeout_ms, uint32_t max_bytes) {
  // The header: from what an earlier read left, else one poll and one
  // recvmsg (which brings the body too when it is there).
  while (have_ < 4) {
    const int wait = have_ == 0 ? first_byte_timeout_ms : timeout_ms;
    if (!WaitFd(fd_, POLLIN, wait)) return have_ == 0 ? ReadStatus::kTimeout : ReadStatus::kBad;
    const Received r = ReceiveSome(fd_, buf_.data() + have_, buf_.size() - have_, fds);
    if (r.end) return have_ == 0 ? *r.end : ReadStatus::kBad;
    have_ += r.bytes;
  }
  uint32_t size = 0;
  std::memcpy(&size, buf_.data(), sizeof(size));
  if (size > max_bytes) return ReadStatus::kBad;
  const size_t taken = std::min<size_t>(size, have_ - 4);
  body->assign(buf_.data() + 4, taken);
  // What is past this frame stays for the next.
  std::memmove(buf_.data(), buf_.data() + 4 + taken, have_ - 4 - taken);
  have_ -= 4 + taken;
  if (taken == size) return ReadStatus::kOk;
  body->resize(size);
  const ReadStatus s =
      ReadExact(fd_, body->data() + taken, size - taken, fds, timeout_ms, timeout_ms);
  return s == ReadStatus::kOk ? s : ReadStatus::kBad;
}

std::string EncodeChallenge(const auth::Nonce& service_nonce) {
  wire::Writer w;
  PutMagic(w);
  w.Bytes(auth::Bytes(service_nonce));
  return w.Take();
}

bool DecodeChallenge(std::string_view bytes, auth::Nonce* service_nonce) {
  wire::Reader r(bytes.data(), bytes.size());
  return GetMagic(r) && GetNonce(r, service_nonce) && r.done();
}

auth::Proof ClientProof(std::string_view token, const auth::Nonce& service_nonce,
                        const auth::Nonce& client_nonce, std::string_view tenant) {
  return auth::Prove(token, kClientLabel,
                     {auth::Bytes(service_nonce), auth::Bytes(client_nonce), tenant});
}

auth::Proof ServerProof(std::string_view token, const auth::Nonce& service_nonce,
                        const auth::Nonce& client_nonce, std::string_view tenant, int32_t code) {
  const std::string code_part = Le64Part(static_cast<uint64_t>(static_cast<int64_t>(code)));
  return auth::Prove(token, kServerLabel,
                     {auth::Bytes(service_nonce), auth::Bytes(client_nonce), tenant, code_part});
}

std::string EncodeHello(const Hello& hello) {
  wire::Writer w;
  PutMagic(w);
  w.Bytes(auth::Bytes(hello.client_nonce)).Bytes(hello.tenant).Bytes(hello.proof);
  return w.Take();
}

bool DecodeHello(std::string_view bytes, Hello* hello) {
  wire::Reader r(bytes.data(), bytes.size());
  if (!GetMagic(r) || !GetNonce(r, &hello->client_nonce)) return false;
  hello->tenant = r.Bytes();
  hello->proof = r.Bytes();
  return r.done();
}

std::string EncodeWelcome(const Welcome& welcome) {
  wire::Writer w;
  PutMagic(w);
  w.Put(welcome.code).Bytes(welcome.proof);
  return w.Take();
}

bool DecodeWelcome(std::string_view bytes, Welcome* welcome) {
  wire::Reader r(bytes.data(), bytes.size());
  if (!GetMagic(r)) return false;
  welcome->code = r.Get<int32_t>();
  welcome->proof = r.Bytes();
  return r.done();
}

void PutPutConfig(wire::Writer& w, const PutConfig& config) {
  w.Put(config.replica_num).Put(static_cast<uint32_t>(config.preferred_segments.size()));
  for (const std::string& s : config.preferred_segments) w.Bytes(s);
  w.Bytes(config.prefer_host)
      .Put(static_cast<uint8_t>(config.data_type))
      .Put(static_cast<uint8_t>(config.hard_pin))
      .Put(config.soft_pin_ttl_ms)
      .Bytes(config.group_id)
      .Put(static_cast<uint8_t>(config.replace));
}

bool GetPutConfig(wire::Reader& r, PutConfig* config) {
  config->replica_num = r.Get<uint32_t>();
  const uint32_t segments = r.Get<uint32_t>();
  // Each name takes at least its 4-byte length: a count past what is left
  // is malformed (and never allocated).
  if (segments > r.left() / 4) return false;
  config->preferred_segments.clear();
  for (uint32_t i = 0; i < segments; ++i) config->preferred_segments.push_back(r.Bytes());
  config->prefer_host = r.Bytes();
  const uint8_t type = r.Get<uint8_t>();
  if (type > static_cast<uint8_t>(DataType::WEIGHT)) return false;
  config->data_type = static_cast<DataType>(type);
  config->hard_pin = r.Get<uint8_t>() != 0;
  config->soft_pin_ttl_ms = r.Get<int64_t>();
  config->group_id = r.Bytes();
  config->replace = r.Get<uint8_t>() != 0;
  return true;  // the caller checks done() after its own fields
}

void PutItems(wire::Writer& w, const std::vector<Item>& items) {
  w.Put(static_cast<uint32_t>(items.size()));
  for (const Item& item : items) w.Bytes(item.key).Put(item.ptr).Put(item.size);
}

bool GetItems(wire::Reader& r, std::vector<Item>* items) {
  const uint32_t n = r.Get<uint32_t>();
  // An item takes at least 20 bytes (a key's length and two u64).
  if (n > kMaxBatchItems || n > r.left() / 20) return false;
  items->resize(n);
  for (Item& item : *items) {
    item.key = r.Bytes();
    item.ptr = r.Get<uint64_t>();
    item.size = r.Get<uint64_t>();
  }
  return true;
}

void PutPartsItems(wire::Writer& w, const std::vector<PartsItem>& items) {
  w.Put(static_cast<uint32_t>(items.size()));
  for (const PartsItem& item : items) {
    w.Bytes(item.key).Put(static_cast<uint32_t>(item.pieces.size()));
    for (const Piece& p : item.pieces) w.Put(p.ptr).Put(p.size);
  }
}

bool GetPartsItems(wire::Reader& r, std::vector<PartsItem>* items) {
  const uint32_t n = r.Get<uint32_t>();
  // An item takes at least 8 bytes (a key's length and a piece count), a
  // piece 16.
  if (n > kMaxBatchItems || n > r.left() / 8) return false;
  items->resize(n);
  for (PartsItem& item : *items) {
    item.key = r.Bytes();
    const uint32_t m = r.Get<uint32_t>();
    if (m > r.left() / 16) return false;
    item.pieces.resize(m);
    for (Piece& p : item.pieces) {
      p.ptr = r.Get<uint64_t>();
      p.size = r.Get<uint64_t>();
    }
  }
  return true;
}

void PutRangedItems(wire::Writer& w, const std::vector<RangedItem>& items) {
  w.Put(static_cast<uint32_t>(items.size()));
  for (const RangedItem& item : items) {
    w.Bytes(item.key).Put(static_cast<uint32_t>(item.pieces.size()));
    for (const RangedPiece& p : item.pieces) w.Put(p.ptr).Put(p.size).Put(p.offset);
  }
}

bool GetRangedItems(wire::Reader& r, std::vector<RangedItem>* items) {
  const uint32_t n = r.Get<uint32_t>();
  // An item takes at least 8 bytes (a key's length and a piece count), a
  // piece 24.
  if (n > kMaxBatchItems || n > r.left() / 8) return false;
  items->resize(n);
  for (RangedItem& item : *items) {
    item.key = r.Bytes();
    const uint32_t m = r.Get<uint32_t>();
    if (m > r.left() / 24) return false;
    item.pieces.resize(m);
    for (RangedPiece& p : item.pieces) {
      p.ptr = r.Get<uint64_t>();
      p.size = r.Get<uint64_t>();
      p.offset = r.Get<uint64_t>();
    }
  }
  return true;
}

void PutKeys(wire::Writer& w, const std::vector<std::string>& keys) {
  w.Put(static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) w.Bytes(key);
}

bool GetKeys(wire::Reader& r, std::vector<std::string>* keys) {
  const uint32_t n = r.Get<uint32_t>();
  if (n > kMaxBatchItems || n > r.left() / 4) return false;  // a key takes >= 4 bytes
  keys->resize(n);
  for (std::string& key : *keys) key = r.Bytes();
  return true;
}

}  // namespace shelfmark::storeservice
