#include "service/http_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace shelfmark {

std::optional<double> PrometheusValue(std::string_view page, std::string_view name) {
  size_t pos = 0;
  while (pos < page.size()) {
    size_t eol = page.find('\n', pos);
    if (eol == std::string_view::npos) eol = page.size();
    std::string_view line = page.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line.front() == '#') continue;
    if (line.substr(0, name.size()) != name || line.size() == name.size()) continue;
    std::string_view rest = line.substr(name.size());
    if (rest.front() == '{') {
      size_t close = rest.find('}');
      if (close == std::string_view::npos) continue;
      rest = rest.substr(close + 1);
    } else if (rest.front() != ' ' && rest.front() != '\t') {
      continue;  // a longer metric name sharing the prefix
    }
    size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) return std::nullopt;
    rest = rest.substr(start);
    std::string value(rest.substr(0, rest.find_first_of(" \t\r")));  // drop a timestamp
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { if (fd_ >= 0) ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool WaitFor(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

// A connected non-blocking socket, or -1.
int ConnectTo(const HostPort& where, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string port = std::to_string(where.port);
  if (::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &list) != 0) return -1;
  int result = -1;
  for (addrinfo* a = list; a != nullptr && result < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS && WaitFor(fd, POLLOUT, timeout_ms)) {
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
    }
    if (rc == 0) {
      result = fd;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(list);
  return result;
}

bool SendAll(int fd, std::string_view data, int timeout_ms) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFor(fd, POLLOUT, timeout_ms)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool ReceiveAll(int fd, std::string* out, int timeout_ms) {
  char buf[16384];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      if (out->size() > (64u << 20)) return false;  // not a metrics page
    } else if (n == 0) {
      return true;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitFor(fd, POLLIN, timeout_ms)) return false;
    } else {
      return false;
    }
  }
}

}  // namespace

Result<HttpReply> HttpGet(const HostPort& where, std::string_view path, int timeout_ms) {
  Fd fd(ConnectTo(where, timeout_ms));
  if (fd.get() < 0) return ErrorCode::RPC_FAIL;
  std::string request = "GET " + std::string(path) + " HTTP/1.0\r\nHost: " + where.ToString() +
                        "\r\nConnection: close\r\n\r\n";
  std::string raw;
  if (!SendAll(fd.get(), request, timeout_ms) || !ReceiveAll(fd.get(), &raw, timeout_ms)) {
    return ErrorCode::RPC_FAIL;
  }
  // "HTTP/1.x NNN reason\r\n" headers "\r\n\r\n" body
  if (raw.compare(0, 5, "HTTP/") != 0) return ErrorCode::RPC_FAIL;
  size_t space = raw.find(' ');
  size_t header_end = raw.find("\r\n\r\n");
  if (space == std::string::npos || header_end == std::string::npos || space + 4 > raw.size()) {
    return ErrorCode::RPC_FAIL;
  }
  HttpReply reply;
  auto [end, ec] = std::from_chars(raw.data() + space + 1, raw.data() + space + 4, reply.status);
  if (ec != std::errc() || end != raw.data() + space + 4) return ErrorCode::RPC_FAIL;
  reply.body = raw.substr(header_end + 4);
  return reply;
}

}  // namespace shelfmark
