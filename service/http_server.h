// HttpServer: a minimal HTTP/1.1 server for /health and /metrics. GET only,
// one request per connection, served by one background thread (scraping is
// rare and cheap). Not for payload.
//
// Thread safety: Handle() before Start(); Start/Stop from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "common/result.h"

namespace shelfmark {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  HttpServer() = default;
  ~HttpServer();  // stops the server
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void Handle(const std::string& path, Handler handler);
  // Binds 0.0.0.0:port (0 = any free port) and starts serving. Returns the
  // bound port, or INVALID_PARAMS when the port cannot be bound.
  Result<uint16_t> Start(uint16_t port);
  void Stop();

 private:
  void Serve();
  void ServeOne(int fd);

  std::map<std::string, Handler> handlers_;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace shelfmark
