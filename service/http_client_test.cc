#include "service/http_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "testing/process_util.h"

namespace shelfmark {
namespace {

TEST(PrometheusValue, FindsPlainAndLabelledSamples) {
  const char* page =
      "# HELP process_resident_memory_bytes RSS\n"
      "# TYPE process_resident_memory_bytes gauge\n"
      "process_resident_memory_bytes_total 1\n"
      "process_resident_memory_bytes 1.2345e+07\n"
      "shelfmark_master_keys{tenant=\"all\"} 42 1700000000\n"
      "broken_metric abc\n";
  EXPECT_EQ(PrometheusValue(page, "process_resident_memory_bytes"), 12345000.0);
  EXPECT_EQ(PrometheusValue(page, "shelfmark_master_keys"), 42.0);
  EXPECT_FALSE(PrometheusValue(page, "missing"));
  EXPECT_FALSE(PrometheusValue(page, "broken_metric"));
  EXPECT_FALSE(PrometheusValue(page, "process_resident"));
}

// A one-shot HTTP server on a loopback port answering `reply` to one request.
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply) {
    fd_ = testing::ListenLoopback(1, &port_);
    EXPECT_GE(fd_, 0);
    thread_ = std::thread([this, reply] {
      int c = ::accept(fd_, nullptr, nullptr);
      char buf[4096];
      std::string request;
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      request_ = request;
      ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~OneShotServer() {
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  const std::string& request() const { return request_; }
  void Join() { thread_.join(); thread_ = std::thread([] {}); }

 private:
  int fd_;
  uint16_t port_ = 0;
  std::string request_;
  std::thread thread_;
};

TEST(HttpGet, ReadsStatusAndBody) {
  OneShotServer server("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
  auto reply = HttpGet(HostPort{"127.0.0.1", server.port()}, "/metrics");
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "hello");
  server.Join();
  EXPECT_EQ(server.request().rfind("GET /metrics HTTP/1.0\r\n", 0), 0u);
}

TEST(HttpGet, MalformedReplyIsRpcFail) {
  OneShotServer server("garbage");
  EXPECT_EQ(HttpGet(HostPort{"127.0.0.1", server.port()}, "/").error(), ErrorCode::RPC_FAIL);
}

TEST(HttpGet, RefusedIsRpcFail) {
  uint16_t port;
  {
    OneShotServer probe("HTTP/1.0 200 OK\r\n\r\n");
    port = probe.port();
    (void)HttpGet(HostPort{"127.0.0.1", port}, "/");
  }
  EXPECT_EQ(HttpGet(HostPort{"127.0.0.1", port}, "/", 1000).error(), ErrorCode::RPC_FAIL);
}

}  // namespace
}  // namespace shelfmark
