#include "perf/bench_util.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <numeric>
#include <thread>

namespace shelfmark {
namespace {

TEST(Percentile, NearestRank) {
  std::vector<int64_t> v(100);
  std::iota(v.begin(), v.end(), 1);  // 1..100
  std::vector<int64_t> shuffled(v.rbegin(), v.rend());
  EXPECT_EQ(Percentile(&shuffled, 50), 50);
  EXPECT_EQ(Percentile(&shuffled, 99), 99);
  EXPECT_EQ(Percentile(&shuffled, 100), 100);
  EXPECT_EQ(Percentile(&shuffled, 0), 1);
  EXPECT_EQ(Percentile(&shuffled, 99.5), 100);
}

TEST(Percentile, SmallAndEmpty) {
  std::vector<int64_t> empty;
  EXPECT_EQ(Percentile(&empty, 50), 0);
  std::vector<int64_t> one{7};
  EXPECT_EQ(Percentile(&one, 50), 7);
  EXPECT_EQ(Percentile(&one, 99), 7);
  std::vector<int64_t> two{10, 20};
  EXPECT_EQ(Percentile(&two, 50), 10);
  EXPECT_EQ(Percentile(&two, 99), 20);
}

TEST(SummarizeLatencyNs, MicrosecondsPerCall) {
  std::vector<int64_t> ns;
  for (int i = 1; i <= 1000; ++i) ns.push_back(i * 1000);  // 1..1000 us
  LatencySummary s = SummarizeLatencyNs(&ns);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.p50_us, 500);
  EXPECT_DOUBLE_EQ(s.p99_us, 990);
  EXPECT_DOUBLE_EQ(s.max_us, 1000);
}

TEST(DescribeLatencyNs, PerftestColumns) {
  std::vector<int64_t> ns;
  for (int64_t i = 1; i <= 1000; ++i) ns.push_back(i * 1000);  // 1..1000 us
  const LatencyStats s = DescribeLatencyNs(&ns);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 1000);
  EXPECT_DOUBLE_EQ(s.typical_us, 500);
  EXPECT_DOUBLE_EQ(s.avg_us, 500.5);
  EXPECT_NEAR(s.stdev_us, 288.675, 0.001);  // sqrt((n^2 - 1) / 12)
  EXPECT_DOUBLE_EQ(s.p99_us, 990);
  EXPECT_DOUBLE_EQ(s.p999_us, 999);
  std::vector<int64_t> none;
  EXPECT_EQ(DescribeLatencyNs(&none).count, 0u);
  EXPECT_EQ(DescribeLatencyNs(&none).max_us, 0);
  std::vector<int64_t> same(7, 2500);
  EXPECT_DOUBLE_EQ(DescribeLatencyNs(&same).stdev_us, 0);
}

TEST(ParseSizeList, AcceptsPositiveListsOnly) {
  std::vector<uint64_t> sizes;
  ASSERT_TRUE(ParseSizeList("4096,65536,1", &sizes));
  EXPECT_EQ(sizes, (std::vector<uint64_t>{4096, 65536, 1}));
  for (const char* bad : {"", ",", "1,", ",1", "0", "-5", "+5", "12a", "1,,2", " 1"}) {
    std::vector<uint64_t> out;
    EXPECT_FALSE(ParseSizeList(bad, &out)) << bad;
  }
}

TEST(PrometheusValue, FindsPlainAndLabelledSamples) {
  const char* page =
      "# HELP process_resident_memory_bytes RSS\n"
      "# TYPE process_resident_memory_bytes gauge\n"
      "process_resident_memory_bytes_total 1\n"
      "process_resident_memory_bytes 1.2345e+07\n"
      "shelfmark_master_key_count{tenant=\"all\"} 42 1700000000\n"
      "broken_metric abc\n";
  EXPECT_EQ(PrometheusValue(page, "process_resident_memory_bytes"), 12345000.0);
  EXPECT_EQ(PrometheusValue(page, "shelfmark_master_key_count"), 42.0);
  EXPECT_FALSE(PrometheusValue(page, "missing"));
  EXPECT_FALSE(PrometheusValue(page, "broken_metric"));
  EXPECT_FALSE(PrometheusValue(page, "process_resident"));
}

// A one-shot HTTP server on a loopback port answering `reply` to one request.
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(fd_, 1);
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
