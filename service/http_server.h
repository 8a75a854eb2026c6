// HttpServer: a minimal HTTP/1.1 server for /health, /metrics and the
// master's admin pages (master/admin_http.h). GET only,
// one request per connection, served by one background thread running a
// poll loop over every open connection (scraping is rare and cheap; not for
// payload).
//
// Limits, so that no client can starve a liveness probe: a request head must
// arrive within 2 s and be at most 8 KiB; a response must be taken within
// 5 s; at most 64 connections are open at once, and a new one drops the
// oldest still reading its request. stats() counts both kinds of drop.
//
// Thread safety: Handle() and Protect() before Start(); Start/Stop from one thread;
// stats() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/poll_thread.h"
#include "common/result.h"

namespace shelfmark {

struct HttpServerStats {
  uint64_t timed_out = 0;  // connections closed at their read or write deadline
  uint64_t dropped = 0;    // connections closed to make room for a new one
};

// What a handler is given of a GET request: its path and the raw query
// string (after '?', before any '#'; "" when none; service/http_query.h
// decodes it).
struct HttpRequest {
  std::string path;
  std::string query;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;
  HttpServer() = default;
  ~HttpServer();  // stops the server
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Handle(const std::string& path, Handler handler);
  // As Handle, for a handler that reads the request (its query).
  void HandleRequest(const std::string& path, RequestHandler handler);
  // Requests for `path` must carry "Authorization: Bearer <bearer_token>"
  // (compared in constant time); others get 401 with WWW-Authenticate.
  // Before Start().
  void Protect(const std::string& path, std::string bearer_token);
  // Binds 0.0.0.0:port (0 = any free port) and starts serving. Returns the
  // bound port, or INVALID_PARAMS when the port cannot be bound.
  Result<uint16_t> Start(uint16_t port);
  void Stop();
  HttpServerStats stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Conn;
  void Serve();
  void ExpireConnections(std::vector<Conn>* conns, Clock::time_point now);
  void AcceptAll(std::vector<Conn>* conns);
  bool Progress(Conn* c);

  std::map<std::string, RequestHandler> handlers_;
  std::map<std::string, std::string> bearer_tokens_;  // path -> token
  int listen_fd_ = -1;
  PollThread loop_;
  Clock::time_point accept_backoff_until_{};  // Serve()'s thread only
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace shelfmark
