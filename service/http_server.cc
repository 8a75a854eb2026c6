#include "service/http_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <optional>
#include <utility>

#include "common/socket_io.h"

namespace shelfmark {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxRequestBytes = 8 * 1024;          // request line + headers
constexpr auto kReadTimeout = std::chrono::seconds(2);   // whole request, not per recv
constexpr auto kWriteTimeout = std::chrono::seconds(5);  // whole response
constexpr size_t kMaxDrainBytes = 64 * 1024;
constexpr size_t kMaxConnections = 64;  // served at once; more drop the oldest reader

int RemainingMs(Clock::time_point deadline, Clock::time_point now) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  return left.count() > 0 ? static_cast<int>(left.count()) + 1 : 0;
}

bool HeadComplete(const std::string& data) {
  return data.find("\r\n\r\n") != std::string::npos || data.find("\n\n") != std::string::npos;
}

struct RequestLine {
  std::string method;
  HttpRequest request;
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
  target = target.substr(0, target.find('#'));
  const size_t question = target.find('?');
  if (question == std::string::npos) return RequestLine{method, {target, ""}};
  return RequestLine{method, {target.substr(0, question), target.substr(question + 1)}};
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
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
  if (r.status == 401) out += "WWW-Authenticate: Bearer\r\n";
  out += "Connection: close\r\n\r\n";
  return out + r.body;
}

// The value of header `name` (lower case) in the request head; "" if absent.
std::string HeaderValue(const std::string& head, const std::string& name) {
  size_t at = head.find('\n');
  while (at != std::string::npos && at + 1 < head.size()) {
    const size_t start = at + 1;
    const size_t end = head.find('\n', start);
    std::string line = head.substr(start, end == std::string::npos ? end : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == name.size()) {
      bool same = true;
      for (size_t i = 0; i < colon && same; ++i) {
        same = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
      }
      if (same) {
        size_t v = line.find_first_not_of(" \t", colon + 1);
        return v == std::string::npos ? "" : line.substr(v);
      }
    }
    at = end;
  }
  return "";
}

// Equal strings, in time that depends only on their lengths.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

HttpResponse Dispatch(const std::string& head,
                      const std::map<std::string, HttpServer::RequestHandler>& handlers,
                      const std::map<std::string, std::string>& bearer_tokens) {
  std::optional<RequestLine> request = ParseRequestLine(head);
  if (!request) return ErrorResponse(400);
  if (request->method != "GET") return ErrorResponse(405);
  const std::string& path = request->request.path;
  auto it = handlers.find(path);
  if (it == handlers.end()) return ErrorResponse(404);
  if (auto token = bearer_tokens.find(path); token != bearer_tokens.end() &&
      !SameSecret(HeaderValue(head, "authorization"), "Bearer " + token->second)) {
    return ErrorResponse(401);
  }
  try {
    return it->second(request->request);
  } catch (...) {  // a throwing handler must not take the server thread down
    return ErrorResponse(500);
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

}  // namespace

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Protect(const std::string& path, std::string bearer_token) {
  bearer_tokens_[path] = std::move(bearer_token);
}

void HttpServer::Handle(const std::string& path, Handler handler) {
  handlers_[path] = [h = std::move(handler)](const HttpRequest&) { return h(); };
}

void HttpServer::HandleRequest(const std::string& path, RequestHandler handler) {
  handlers_[path] = std::move(handler);
}

Result<uint16_t> HttpServer::Start(uint16_t port) {
  if (loop_.running()) return ErrorCode::INVALID_PARAMS;  // already serving
  listen_fd_ = ListenTcp("0.0.0.0", port, 64);
  if (listen_fd_ < 0) {
    return errno == EADDRINUSE || errno == EACCES || errno == EADDRNOTAVAIL
               ? ErrorCode::INVALID_PARAMS
               : ErrorCode::INTERNAL_ERROR;
  }
  uint16_t bound = BoundPort(listen_fd_);
  if (bound == 0 || !loop_.Start([this] { Serve(); })) {
    Stop();
    return ErrorCode::INTERNAL_ERROR;
  }
  return bound;
}

void HttpServer::Stop() {
  loop_.Stop();
  CloseFd(listen_fd_);
}

// One connection of the event loop: reading its request head, then writing
// its response, each phase with its own deadline.
struct HttpServer::Conn {
  int fd = -1;
  Clock::time_point accepted;
  Clock::time_point deadline;
  std::string in;
  std::string out;  // non-empty: the response, being written
  size_t sent = 0;
};

// The event loop: every connection is served concurrently (non-blocking
// reads and writes under poll), so slow or silent clients cost a slot each,
// never the others' time. At kMaxConnections the oldest connection still
// reading its request is dropped to make room: a probe that sends its
// request at once is always served.
void HttpServer::Serve() {
  std::vector<Conn> conns;
  std::vector<pollfd> fds;
  for (;;) {
    Clock::time_point now = Clock::now();
    ExpireConnections(&conns, now);
    fds.clear();
    fds.push_back({loop_.wake_fd(), POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    int timeout_ms = -1;
    for (const Conn& c : conns) {
      fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      int left = RemainingMs(c.deadline, now);
      timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
    }
    if (accept_backoff_until_ > now) {
      fds[1].events = 0;  // out of descriptors a moment ago: retry later
      int left = RemainingMs(accept_backoff_until_, now);
      timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
    }
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[0].revents != 0) break;
    for (size_t i = conns.size(); i-- > 0;) {
      if (fds[i + 2].revents != 0 && !Progress(&conns[i])) {
        CloseFd(conns[i].fd);
        conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if ((fds[1].revents & POLLIN) != 0) AcceptAll(&conns);
  }
  for (Conn& c : conns) CloseFd(c.fd);
}

void HttpServer::ExpireConnections(std::vector<Conn>* conns, Clock::time_point now) {
  auto expired = [&](Conn& c) {
    if (c.deadline > now) return false;
    timed_out_.fetch_add(1, std::memory_order_relaxed);
    CloseFd(c.fd);
    return true;
  };
  conns->erase(std::remove_if(conns->begin(), conns->end(), expired), conns->end());
}

void HttpServer::AcceptAll(std::vector<Conn>* conns) {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {  // EMFILE, ENOBUFS, ...
        accept_backoff_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    if (conns->size() >= kMaxConnections) {
      auto oldest = std::min_element(conns->begin(), conns->end(), [](const Conn& a, const Conn& b) {
        return std::make_pair(!a.out.empty(), a.accepted) < std::make_pair(!b.out.empty(), b.accepted);
      });
      dropped_.fetch_add(1, std::memory_order_relaxed);
      CloseFd(oldest->fd);
      conns->erase(oldest);
    }
    Conn c;
    c.fd = fd;
    c.accepted = Clock::now();
    c.deadline = c.accepted + kReadTimeout;
    conns->push_back(std::move(c));
  }
}

// Reads what arrived or writes what the socket takes. False when the
// connection is done (response sent, peer gone, or an error).
bool HttpServer::Progress(Conn* c) {
  if (c->out.empty()) {
    char buf[2048];
    ssize_t n = recv(c->fd, buf, std::min(sizeof(buf), kMaxRequestBytes - c->in.size()), 0);
    if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
    if (n > 0) c->in.append(buf, static_cast<size_t>(n));
    bool complete = n == 0 || c->in.size() >= kMaxRequestBytes || HeadComplete(c->in);
    if (!complete) return true;
    if (c->in.empty()) return false;  // connected and closed: nothing to answer
    c->out = FormatResponse(Dispatch(c->in, handlers_, bearer_tokens_));
    c->deadline = Clock::now() + kWriteTimeout;
  }
  while (c->sent < c->out.size()) {
    ssize_t n = send(c->fd, c->out.data() + c->sent, c->out.size() - c->sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c->sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
  shutdown(c->fd, SHUT_WR);
  DrainInput(c->fd);
  return false;
}

HttpServerStats HttpServer::stats() const {
  return {timed_out_.load(std::memory_order_relaxed), dropped_.load(std::memory_order_relaxed)};
}

}  // namespace shelfmark
