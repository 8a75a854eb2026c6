#include "service/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <system_error>
#include <utility>

namespace shelfmark {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxRequestBytes = 8 * 1024;          // request line + headers
constexpr auto kReadTimeout = std::chrono::seconds(2);   // whole request, not per recv
constexpr auto kWriteTimeout = std::chrono::seconds(5);  // whole response
constexpr size_t kMaxDrainBytes = 64 * 1024;

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// True once `fd` is ready for `events` (or in error, which the following
// recv/send reports); false on deadline or when `wake_fd` becomes readable.
bool WaitReady(int fd, short events, int wake_fd, Clock::time_point deadline) {
  for (;;) {
    int ms = RemainingMs(deadline);
    if (ms <= 0) return false;
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    int n = poll(fds, 2, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents != 0) return false;
    return true;
  }
}

bool HeadComplete(const std::string& data) {
  return data.find("\r\n\r\n") != std::string::npos || data.find("\n\n") != std::string::npos;
}

// Reads the request head: until a blank line, the size cap, EOF, an error or
// the read deadline. nullopt when Stop() interrupted it.
std::optional<std::string> ReadRequestHead(int fd, int wake_fd) {
  std::string data;
  auto deadline = Clock::now() + kReadTimeout;
  char buf[2048];
  while (data.size() < kMaxRequestBytes && !HeadComplete(data)) {
    if (!WaitReady(fd, POLLIN, wake_fd, deadline)) {
      if (RemainingMs(deadline) > 0) return std::nullopt;  // woken by Stop()
      break;
    }
    ssize_t n = recv(fd, buf, std::min(sizeof(buf), kMaxRequestBytes - data.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

struct RequestLine {
  std::string method;
  std::string path;  // query string and fragment removed
};

bool IsToken(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < 'A' || c > 'Z') return false;
  }
  return true;
}

bool IsPrintable(const std::string& s) {
  for (unsigned char c : s) {
    if (c <= ' ' || c >= 0x7f) return false;
  }
  return true;
}

// "METHOD SP /target SP HTTP/1.x" on the first line; nullopt when malformed.
std::optional<RequestLine> ParseRequestLine(const std::string& head) {
  size_t eol = head.find('\n');
  if (eol == std::string::npos) return std::nullopt;
  std::string line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return std::nullopt;
  std::string method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string version = line.substr(sp2 + 1);
  if (!IsToken(method) || target.empty() || target[0] != '/' || !IsPrintable(target) ||
      (version != "HTTP/1.0" && version != "HTTP/1.1")) {
    return std::nullopt;
  }
  return RequestLine{method, target.substr(0, target.find_first_of("?#"))};
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

HttpResponse ErrorResponse(int status) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::to_string(status) + " " + ReasonPhrase(status) + "\n";
  return r;
}

std::string FormatResponse(const HttpResponse& r) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + ReasonPhrase(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (r.status == 405) out += "Allow: GET\r\n";
  out += "Connection: close\r\n\r\n";
  return out + r.body;
}

HttpResponse Dispatch(const std::string& head,
                      const std::map<std::string, HttpServer::Handler>& handlers) {
  std::optional<RequestLine> request = ParseRequestLine(head);
  if (!request) return ErrorResponse(400);
  if (request->method != "GET") return ErrorResponse(405);
  auto it = handlers.find(request->path);
  if (it == handlers.end()) return ErrorResponse(404);
  try {
    return it->second();
  } catch (...) {  // a throwing handler must not take the server thread down
    return ErrorResponse(500);
  }
}

// Sends everything unless the peer stalls past the deadline, errors, or Stop().
void SendAll(int fd, const std::string& data, int wake_fd) {
  auto deadline = Clock::now() + kWriteTimeout;
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
               !WaitReady(fd, POLLOUT, wake_fd, deadline)) {
      return;
    }
  }
}

// Unread input at close() makes the kernel send RST, which can destroy the
// response before the client reads it; discard what has already arrived.
void DrainInput(int fd) {
  char buf[4096];
  size_t total = 0;
  while (total < kMaxDrainBytes) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    total += static_cast<size_t>(n);
  }
}

void SetSocketTimeouts(int fd) {
  timeval tv{};
  tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kReadTimeout).count();
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kWriteTimeout).count();
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// A non-blocking listening socket on 0.0.0.0:port; -1 with errno on failure.
int OpenListener(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

uint16_t BoundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

// accept() failing for lack of resources leaves the listener readable; back
// off briefly instead of spinning. Returns false when Stop() was requested.
bool BackOff(int wake_fd) {
  pollfd wake{wake_fd, POLLIN, 0};
  return poll(&wake, 1, 100) <= 0;
}

}  // namespace

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, Handler handler) {
  handlers_[path] = std::move(handler);
}

Result<uint16_t> HttpServer::Start(uint16_t port) {
  if (thread_.joinable()) return ErrorCode::INVALID_PARAMS;  // already serving
  listen_fd_ = OpenListener(port);
  if (listen_fd_ < 0) {
    return errno == EADDRINUSE || errno == EACCES || errno == EADDRNOTAVAIL
               ? ErrorCode::INVALID_PARAMS
               : ErrorCode::INTERNAL_ERROR;
  }
  uint16_t bound = BoundPort(listen_fd_);
  if (bound == 0 || pipe2(wake_fd_, O_CLOEXEC | O_NONBLOCK) != 0) {
    Stop();
    return ErrorCode::INTERNAL_ERROR;
  }
  try {
    thread_ = std::thread([this] { Serve(); });
  } catch (const std::system_error&) {
    Stop();
    return ErrorCode::INTERNAL_ERROR;
  }
  return bound;
}

void HttpServer::Stop() {
  if (thread_.joinable()) {
    char byte = 1;
    while (write(wake_fd_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  CloseFd(listen_fd_);
  CloseFd(wake_fd_[0]);
  CloseFd(wake_fd_[1]);
}

void HttpServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    int n = poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      bool transient = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                       errno == ECONNABORTED;
      if (!transient && !BackOff(wake_fd_[0])) return;
      continue;
    }
    ServeOne(fd);
    close(fd);
  }
}

// One request per connection. A silent client is dropped after the read
// deadline; a client that sends an unterminated or garbled head gets 400.
void HttpServer::ServeOne(int fd) {
  SetSocketTimeouts(fd);
  std::optional<std::string> head = ReadRequestHead(fd, wake_fd_[0]);
  if (!head || head->empty()) return;
  SendAll(fd, FormatResponse(Dispatch(*head, handlers_)), wake_fd_[0]);
  shutdown(fd, SHUT_WR);
  DrainInput(fd);
}

}  // namespace shelfmark
