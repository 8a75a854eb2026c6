#include "service/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "service/metrics.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

// A connected client socket to 127.0.0.1:port with a generous receive timeout
// so a broken server fails the test instead of hanging it.
int Connect(uint16_t port) {
  const int fd = testing::ConnectLoopback(port);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = 15;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// The IPv4 TCP sockets of this network namespace (/proc/net/tcp): ports,
// state and, for a listener, the connections waiting in its accept queue.
struct TcpSocket {
  unsigned long local_port = 0, remote_port = 0, state = 0, rx_queue = 0;
};
constexpr unsigned long kSynRecv = 0x03, kListen = 0x0A;

std::vector<TcpSocket> TcpSockets() {
  std::vector<TcpSocket> sockets;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues;
    fields >> slot >> local >> remote >> state >> queues;
    if (local.find(':') == std::string::npos || remote.find(':') == std::string::npos ||
        queues.find(':') == std::string::npos) {
      continue;
    }
    TcpSocket s;
    s.local_port = std::stoul(local.substr(local.find(':') + 1), nullptr, 16);
    s.remote_port = std::stoul(remote.substr(remote.find(':') + 1), nullptr, 16);
    s.state = std::stoul(state, nullptr, 16);
    s.rx_queue = std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16);
    sockets.push_back(s);
  }
  return sockets;
}

// True once the server listening on `port` has accepted the connection `fd`:
// the server's side of it is past the handshake and the listener's accept
// queue is empty (connections are accepted in the order they were made).
bool ServerAccepted(uint16_t port, int fd) {
  sockaddr_in mine{};
  socklen_t len = sizeof(mine);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len) != 0) return false;
  bool connected = false;
  bool queue_empty = false;
  for (const TcpSocket& s : TcpSockets()) {
    if (s.local_port != port) continue;
    if (s.state == kListen) {
      queue_empty = s.rx_queue == 0;
    } else if (s.remote_port == ntohs(mine.sin_port) && s.state != kSynRecv) {
      connected = true;
    }
  }
  return connected && queue_empty;
}

// Waits until the server has accepted `fd`.
bool WaitServerTook(uint16_t port, int fd) {
  return testing::WaitFor([&] { return ServerAccepted(port, fd); }, 60'000);
}

// True when the peer closed the connection (recv reports end of stream), not
// when the client's receive timeout ran out first.
bool PeerClosed(int fd) {
  char byte;
  return recv(fd, &byte, 1, 0) == 0;
}

// Everything the server sends until it closes (or the client timeout hits).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// Sends `raw` on a fresh connection and returns the whole response.
std::string Exchange(uint16_t port, const std::string& raw) {
  int fd = Connect(port);
  if (fd < 0) return "connect failed";
  SendAll(fd, raw);
  std::string response = ReadAll(fd);
  close(fd);
  return response;
}

std::string Get(uint16_t port, const std::string& path) {
  return Exchange(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\r\n");
}

int StatusOf(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

std::string BodyOf(const std::string& response) {
  size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

bool HasHeader(const std::string& response, const std::string& header) {
  std::string head = response.substr(0, response.find("\r\n\r\n"));
  return head.find("\r\n" + header + "\r\n") != std::string::npos ||
         response.find("\r\n" + header + "\r\n\r\n") != std::string::npos;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter("requests_total", "Requests.")->Inc(7);
    server_.Handle("/metrics", [this] {
      HttpResponse r;
      r.body = registry_.RenderPrometheus();
      return r;
    });
    server_.Handle("/health", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
    server_.Handle("/throws", []() -> HttpResponse { throw std::runtime_error("boom"); });
    Result<uint16_t> port = server_.Start(0);
    ASSERT_TRUE(port.ok()) << ErrorCodeName(port.error());
    port_ = *port;
    ASSERT_NE(port_, 0);
  }

  MetricsRegistry registry_;
  HttpServer server_;
  uint16_t port_ = 0;
};

TEST_F(HttpServerTest, ServesMetrics) {
  std::string response = Get(port_, "/metrics");
  EXPECT_EQ(StatusOf(response), 200) << response;
  std::string body = BodyOf(response);
  EXPECT_EQ(body, registry_.RenderPrometheus());
  EXPECT_TRUE(HasHeader(response, "Content-Length: " + std::to_string(body.size()))) << response;
  EXPECT_TRUE(HasHeader(response, "Connection: close")) << response;
  EXPECT_TRUE(HasHeader(response, "Content-Type: text/plain; version=0.0.4; charset=utf-8"))
      << response;
  EXPECT_NE(body.find("requests_total 7\n"), std::string::npos);
}

TEST_F(HttpServerTest, QueryStringIsIgnoredAndHttp10BareNewlinesAccepted) {
  EXPECT_EQ(BodyOf(Get(port_, "/health?verbose=1")), "ok\n");
  std::string response = Exchange(port_, "GET /health HTTP/1.0\n\n");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_EQ(BodyOf(response), "ok\n");
}

TEST(HttpServerRequestTest, ARequestHandlerIsGivenPathAndRawQueryWithoutFragment) {
  HttpServer server;
  server.HandleRequest("/echo", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", r.path + "|" + r.query};
  });
  auto port = server.Start(0);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(BodyOf(Get(*port, "/echo?key=a%20b&x=1#frag")), "/echo|key=a%20b&x=1");
  EXPECT_EQ(BodyOf(Get(*port, "/echo")), "/echo|");
  EXPECT_EQ(BodyOf(Get(*port, "/echo?")), "/echo|");
  EXPECT_EQ(StatusOf(Get(*port, "/echo/?key=1")), 404);
}

TEST(HttpServerProtectTest, AProtectedPathNeedsTheBearerTokenOthersStayOpen) {
  HttpServer server;
  server.Handle("/metrics", [] { return HttpResponse{200, "text/plain", "secret figures\n"}; });
  server.Handle("/health", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  server.Protect("/metrics", "scrape-token");
  auto port = server.Start(0);
  ASSERT_TRUE(port.ok());
  std::string response = Get(*port, "/metrics");
  EXPECT_EQ(StatusOf(response), 401) << response;
  EXPECT_TRUE(HasHeader(response, "WWW-Authenticate: Bearer")) << response;
  EXPECT_EQ(BodyOf(response).find("secret"), std::string::npos);
  for (const char* header : {"Authorization: Bearer wrong-token\r\n",
                             "Authorization: Bearer scrape-token-and-more\r\n",
                             "Authorization: Basic scrape-token\r\n",
                             "X-Authorization: Bearer scrape-token\r\n"}) {
    std::string r = Exchange(*port, std::string("GET /metrics HTTP/1.1\r\n") + header + "\r\n");
    EXPECT_EQ(StatusOf(r), 401) << header;
  }
  for (const char* header : {"Authorization: Bearer scrape-token\r\n",
                             "authorization:Bearer scrape-token\r\n"}) {
    std::string r = Exchange(*port, std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n") +
                                        header + "\r\n");
    EXPECT_EQ(StatusOf(r), 200) << header << r;
    EXPECT_EQ(BodyOf(r), "secret figures\n");
  }
  EXPECT_EQ(StatusOf(Get(*port, "/health")), 200) << "/health stays open";
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  std::string response = Get(port_, "/nope");
  EXPECT_EQ(StatusOf(response), 404) << response;
  EXPECT_TRUE(HasHeader(response, "Content-Length: " + std::to_string(BodyOf(response).size())));
  EXPECT_EQ(StatusOf(Get(port_, "/metrics/")), 404);
}

TEST_F(HttpServerTest, NonGetIs405) {
  std::string response =
      Exchange(port_, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(StatusOf(response), 405) << response;
  EXPECT_TRUE(HasHeader(response, "Allow: GET")) << response;
  EXPECT_EQ(StatusOf(Exchange(port_, "DELETE /health HTTP/1.1\r\n\r\n")), 405);
}

TEST_F(HttpServerTest, MalformedRequestLineIs400) {
  for (const char* raw : {"NONSENSE\r\n\r\n", "GET\r\n\r\n", "GET /metrics\r\n\r\n",
                          "GET metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n",
                          "get /metrics HTTP/1.1\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n",
                          "GET /metrics HTTP/1.1 extra\r\n\r\n"}) {
    std::string response = Exchange(port_, raw);
    EXPECT_EQ(StatusOf(response), 400) << raw << " -> " << response;
  }
}

TEST_F(HttpServerTest, ThrowingHandlerIs500) {
  EXPECT_EQ(StatusOf(Get(port_, "/throws")), 500);
  EXPECT_EQ(StatusOf(Get(port_, "/health")), 200);
}

TEST_F(HttpServerTest, GarbageThenValidRequestStillServed) {
  std::mt19937 rng(42);
  std::string garbage(20'000, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  Exchange(port_, garbage);  // any answer (or none) is fine, as long as it ends
  std::string oversized(16'000, 'A');  // no line end within the 8 KiB cap
  EXPECT_EQ(StatusOf(Exchange(port_, oversized)), 400);
  std::string binary("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);  // a TLS hello
  Exchange(port_, binary + "\r\n\r\n");
  std::string response = Get(port_, "/metrics");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_EQ(BodyOf(response), registry_.RenderPrometheus());
}

TEST_F(HttpServerTest, ClientsThatHangUpAreHarmless) {
  for (int i = 0; i < 5; ++i) {
    int fd = Connect(port_);
    ASSERT_GE(fd, 0);
    if (i % 2) SendAll(fd, "GET /met");
    close(fd);
  }
  EXPECT_EQ(StatusOf(Get(port_, "/health")), 200);
}

// A silent client neither blocks the requests behind it nor stays forever:
// it is dropped without an answer at its read deadline, and counted.
TEST_F(HttpServerTest, SilentClientDoesNotBlockLaterRequests) {
  int silent = Connect(port_);
  ASSERT_GE(silent, 0);
  ASSERT_TRUE(WaitServerTook(port_, silent));
  std::string response = Get(port_, "/health");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_TRUE(PeerClosed(silent));  // the server dropped it without an answer
  EXPECT_EQ(server_.stats().timed_out, 1u);
  close(silent);
}

// Twenty clients that started a request and went quiet (a server serving
// one at a time answered /health only after their deadlines, 20-40 s):
// /health is answered while every one of them is still waiting.
TEST_F(HttpServerTest, StalledClientsDoNotDelayHealth) {
  std::vector<int> stalled;
  for (int i = 0; i < 20; ++i) {
    stalled.push_back(Connect(port_));
    ASSERT_GE(stalled.back(), 0);
    ASSERT_TRUE(SendAll(stalled.back(), "GET /heal"));
    ASSERT_TRUE(WaitServerTook(port_, stalled.back()));
  }
  std::string response = Get(port_, "/health");
  EXPECT_EQ(StatusOf(response), 200) << response;
  int waiting = 0;
  for (int fd : stalled) waiting += testing::PeerStillWaiting(fd) ? 1 : 0;
  EXPECT_EQ(waiting, 20);
  for (int fd : stalled) close(fd);
}

// More connections than it serves at once: the oldest one still reading is
// dropped to make room, so a new probe is always answered. The 64 are made
// at once and waited for once (they fit the listen backlog, and are taken
// in order): waiting for each took over the 2 s read deadline on a loaded
// machine, so the first ones timed out and the house was never full.
TEST_F(HttpServerTest, FullHouseDropsTheOldestReader) {
  std::vector<int> idle;
  for (int i = 0; i < 64; ++i) {
    idle.push_back(Connect(port_));
    ASSERT_GE(idle.back(), 0);
  }
  ASSERT_TRUE(WaitServerTook(port_, idle.back()));
  ASSERT_EQ(server_.stats().timed_out, 0u) << "the house filled up after a read deadline";
  std::string response = Get(port_, "/health");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_TRUE(PeerClosed(idle.front()));
  EXPECT_TRUE(testing::PeerStillWaiting(idle.back()));
  EXPECT_GE(server_.stats().dropped, 1u);
  for (int fd : idle) close(fd);
}

// A client that keeps sending a byte at a time, for longer than the next
// client waits for its answer (15 s), never finishing its request line: only
// a deadline on the whole request lets the server cut it off and answer the
// next request.
TEST_F(HttpServerTest, SlowDripClientIsCutOffByTheRequestDeadline) {
  int slow = Connect(port_);
  ASSERT_GE(slow, 0);
  std::atomic<bool> stop{false}, cut_off{false};
  std::thread dripper([&] {
    SendAll(slow, "GET /");
    while (!stop) {
      if (!SendAll(slow, "a")) {
        cut_off = true;
        return;
      }
      // Not synchronisation: the pace of the slow client (each byte well
      // within a per-read timeout, the whole line never done).
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_TRUE(WaitServerTook(port_, slow));
  std::string response = Get(port_, "/health");
  EXPECT_EQ(StatusOf(response), 200) << response;
  EXPECT_TRUE(testing::WaitFor([&] { return cut_off.load(); }, 60'000))
      << "the server still takes the slow client's bytes";
  stop = true;
  dripper.join();
  close(slow);
}

TEST_F(HttpServerTest, ManySequentialRequests) {
  for (int i = 0; i < 200; ++i) ASSERT_EQ(StatusOf(Get(port_, "/health")), 200) << i;
}

TEST_F(HttpServerTest, StopEndsARequestInProgress) {
  int silent = Connect(port_);
  ASSERT_GE(silent, 0);
  ASSERT_TRUE(WaitServerTook(port_, silent));  // it is reading the request
  server_.Stop();
  EXPECT_TRUE(PeerClosed(silent));  // closed without an answer
  close(silent);
  EXPECT_EQ(Connect(port_), -1);  // the listener is gone
}

TEST(HttpServer, PortInUseIsInvalidParams) {
  HttpServer first;
  Result<uint16_t> port = first.Start(0);
  ASSERT_TRUE(port.ok());
  HttpServer second;
  Result<uint16_t> clash = second.Start(*port);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error(), ErrorCode::INVALID_PARAMS);
  second.Stop();  // stopping a server that never started is fine
}

TEST(HttpServer, StartTwiceFailsStopIsIdempotentAndRestartWorks) {
  HttpServer server;
  server.Handle("/health", [] { return HttpResponse{200, "text/plain", "ok"}; });
  Result<uint16_t> port = server.Start(0);
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(server.Start(0).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(BodyOf(Get(*port, "/health")), "ok");
  server.Stop();
  server.Stop();
  Result<uint16_t> again = server.Start(*port);  // SO_REUSEADDR: same port right away
  ASSERT_TRUE(again.ok()) << ErrorCodeName(again.error());
  EXPECT_EQ(*again, *port);
  EXPECT_EQ(BodyOf(Get(*again, "/health")), "ok");
}  // the destructor stops the running server

}  // namespace
}  // namespace shelfmark
