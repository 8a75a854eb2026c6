// The leading master's replication port against hostile peers (labels `ha`
// and `hostile`; docs/limits.md, docs/security.md): a real shelfmark-master
// with --enable_ha on a real etcd, strangers speaking the replication
// protocol to it. Each case is a finding of issue 29: frames of 1 GiB
// announced before any proof, a flood of trickling connections at a low
// descriptor limit, and wrong proofs by the hundred. After each, the
// leader still leads its term and serves. Waits are WaitFor with deadlines;
// no durations are asserted.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "auth/proof.h"
#include "directory/directory_test_util.h"
#include "replication/frame_io.h"
#include "replication/replication_wire.h"
#include "rpc/master_client.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;
using testing::ResidentBytes;

constexpr int kDeadlineMs = 30'000;

// A replication frame header announcing `body_bytes`.
std::string Header(uint32_t body_bytes) {
  std::string h(kReplicationHeaderBytes, '\0');
  for (int i = 0; i < 4; ++i) {
    h[i] = static_cast<char>((kReplicationFrameTag >> (8 * i)) & 0xff);
    h[4 + i] = static_cast<char>((body_bytes >> (8 * i)) & 0xff);
  }
  return h;
}

bool SendBytes(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
         static_cast<ssize_t>(bytes.size());
}

// True once the peer of `fd` has closed it (it never sends before a whole
// hello has arrived).
bool PeerClosed(int fd) {
  char c = 0;
  const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// Connections that each send a byte of `bytes` at a time, every one of them
// about every 100 ms, on a thread of their own, until destroyed: a peer that
// keeps a frame in progress for as long as it likes.
class Trickler {
 public:
  Trickler(std::vector<int> fds, std::string bytes)
      : fds_(std::move(fds)), bytes_(std::move(bytes)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Trickler() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (int fd : fds_) ::close(fd);
  }
  uint64_t rounds() const { return rounds_.load(); }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (size_t at = 0; !stop_; at = (at + 1) % bytes_.size()) {
      for (int fd : fds_) (void)SendBytes(fd, bytes_.substr(at, 1));
      rounds_.fetch_add(1);
      // The pace of the load, not a wait for a state.
      cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
    }
  }

  const std::vector<int> fds_;
  const std::string bytes_;
  std::atomic<uint64_t> rounds_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

class ReplicationPortTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.Start()) << etcd_.StartFailure(); }
  void TearDown() override {
    for (int fd : raw_) ::close(fd);
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".log").c_str());
  }

  // A master with HA on (and `extra` flags; with `fd_limit` > 0 under that
  // RLIMIT_NOFILE), started and leading.
  void StartLeader(const std::vector<std::string>& extra, int fd_limit = 0) {
    log_ = dir_.Join("master.log");
    std::vector<std::string> flags = {
        "--rpc_port=0",           "--metrics_port=0",     "--enable_ha",
        "--etcd_endpoints=" + etcd_.endpoint(), "--rpc_address=127.0.0.1",
        "--cluster_id=ha_test",   "--client_ttl=3600"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    if (fd_limit > 0) {
      std::vector<std::string> args = {
          "-c", "ulimit -n " + std::to_string(fd_limit) + " && exec \"$0\" \"$@\"",
          SHELFMARK_MASTER_BIN};
      args.insert(args.end(), flags.begin(), flags.end());
      master_ = std::make_unique<ChildProcess>("/bin/sh", args, log_);
    } else {
      master_ = std::make_unique<ChildProcess>(SHELFMARK_MASTER_BIN, flags, log_);
    }
    ASSERT_TRUE(testing::WaitForServicePorts(log_, kDeadlineMs, &ports_)) << ReadFile(log_);
    ASSERT_TRUE(testing::WaitFor([&] { return Metric("shelfmark_master_ha_role") == 1; },
                                 kDeadlineMs));
    term_ = Metric("shelfmark_master_ha_term");
  }

  double Metric(const std::string& series) const {
    return testing::ScrapeMetric(ports_.http, series);
  }
  // A new connection to the RPC port (closed at TearDown); -1 on failure.
  int Raw() {
    const int fd = testing::ConnectLoopback(ports_.rpc);
    if (fd >= 0) raw_.push_back(fd);
    return fd;
  }
  std::unique_ptr<MasterClient> Client() const {
    MasterClientOptions options;
    options.address = "127.0.0.1:" + std::to_string(ports_.rpc);
    options.client_id = UUID::Generate();
    options.call_timeout_ms = 5000;
    options.lookup_channel = false;
    return std::make_unique<MasterClient>(options);
  }
  // `clients` fresh clients connect, all at once, each mounts a segment,
  // then each puts `count` objects.
  void ServesPuts(const std::string& name, int clients, int count) {
    std::vector<std::unique_ptr<MasterClient>> connected;
    for (int c = 0; c < clients; ++c) {
      connected.push_back(Client());
      const uint64_t n = ++segments_;
      const ErrorCode mounted = connected.back()->MountSegment(MakeTestSegment(
          name + std::to_string(c), n << 24, 1 << 20, "127.0.0.1:" + std::to_string(n)));
      ASSERT_EQ(mounted, ErrorCode::OK) << "client " << c << ": " << ErrorCodeName(mounted);
    }
    for (int c = 0; c < clients; ++c) {
      for (int i = 0; i < count; ++i) {
        const std::string key = name + "-" + std::to_string(c) + "-" + std::to_string(i);
        auto started = connected[c]->PutStart("", key, 1000, {});
        ASSERT_TRUE(started.ok()) << key << ": " << ErrorCodeName(started.error());
        ASSERT_EQ(connected[c]->PutEnd("", key), ErrorCode::OK) << key;
      }
    }
  }
  // The leader still leads the term it won at start (it kept its lease).
  void StillLeadsItsTerm() const {
    EXPECT_EQ(Metric("shelfmark_master_ha_role"), 1);
    EXPECT_EQ(Metric("shelfmark_master_ha_term"), term_);
    EXPECT_EQ(Metric("shelfmark_master_ha_elections_won_total"), 1);
  }

  testing::TempDir dir_{"replication_port"};
  testing::EtcdProcess etcd_;
  std::unique_ptr<ChildProcess> master_;
  std::string log_;
  testing::ServicePorts ports_;
  double term_ = 0;
  uint64_t segments_ = 0;
  std::vector<int> raw_;
};

// Finding 2: after the replication tag the leader read a frame of up to
// 1 GiB before any proof; 3 connections of 8 bytes, trickling a byte now and
// then, took it from 17.8 MB to 3.17 GB. Now a frame larger than a
// handshake's is refused from its header.
TEST_F(ReplicationPortTest, AnnouncedGigabyteFramesBeforeAProofDoNotGrowTheLeader) {
  ASSERT_NO_FATAL_FAILURE(StartLeader({}));
  const uint64_t before = ResidentBytes(master_->pid());
  ASSERT_GT(before, 0u);
  std::vector<int> fds;
  for (int c = 0; c < 3; ++c) {
    const int fd = Raw();
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendBytes(fd, Header(1u << 30)));
    fds.push_back(fd);
  }
  uint64_t peak = before;
  const bool closed = testing::WaitFor(
      [&] {
        bool all = true;
        for (int fd : fds) {
          if (PeerClosed(fd)) continue;
          all = false;
          (void)SendBytes(fd, "x");  // the frame stays in progress
        }
        peak = std::max(peak, ResidentBytes(master_->pid()));
        return all;
      },
      20'000);
  EXPECT_TRUE(closed) << "the leader holds connections announcing 1 GiB frames";
  EXPECT_LT(peak, before + (64u << 20)) << "resident bytes at start " << before;
  ASSERT_NO_FATAL_FAILURE(ServesPuts("after-big-frames", 1, 10));
  StillLeadsItsTerm();
}

// Finding 3: 1200 replication connections trickling a byte every 3 s took
// 1016 threads and 1023 of 1024 descriptors, outside --rpc_max_connections;
// the leader once lost its lease. Here 300 at a limit of 256 descriptors:
// the leader holds at most --ha_max_replication_connections of them, keeps
// its term, serves puts, and new clients connect.
TEST_F(ReplicationPortTest, TricklingReplicationConnectionsAtALowDescriptorLimit) {
  ASSERT_NO_FATAL_FAILURE(StartLeader({}, /*fd_limit=*/256));
  std::vector<int> fds;
  for (int i = 0; i < 300; ++i) {
    const int fd = testing::ConnectLoopback(ports_.rpc);
    ASSERT_GE(fd, 0) << i;
    fds.push_back(fd);
    ASSERT_TRUE(SendBytes(fd, Header(kMaxControlFrameBytes).substr(0, 4))) << i;
  }
  // Each goes on with its header and a hello body, a byte per round.
  Trickler trickler(fds, Header(kMaxControlFrameBytes).substr(4) +
                             std::string(kMaxControlFrameBytes, '\x01'));
  ASSERT_TRUE(testing::WaitFor([&] { return trickler.rounds() >= 3; }, kDeadlineMs));
  ASSERT_NO_FATAL_FAILURE(ServesPuts("during-flood", 8, 10));
  StillLeadsItsTerm();
  EXPECT_LE(Metric("shelfmark_master_ha_replication_connections"), 16);
  EXPECT_GT(Metric("shelfmark_master_ha_replication_evicted_connections_total"), 0);
  EXPECT_EQ(ReadFile(log_).find("rpc server loop failed"), std::string::npos);
}

// Finding 4: 300 wrong proofs on the replication port in 0.8 s were all
// checked, none limited or counted (the RPC and lookup handshakes lock out
// after about 20). Now the replication handshake passes the same
// per-address limiter and counts in shelfmark_master_auth_handshakes_total.
TEST_F(ReplicationPortTest, WrongReplicationProofsAreRateLimitedAndCounted) {
  const std::string tokens = dir_.Join("tokens");
  {
    std::ofstream out(tokens);
    out << "admin replication-port-test-admin-token-0123456789\n";
  }
  ::chmod(tokens.c_str(), 0600);
  ASSERT_NO_FATAL_FAILURE(StartLeader({"--cluster_token_file=" + tokens}));
  const FrameLimits limits{kMaxControlFrameBytes, 10'000, 10'000};
  int checked = 0;
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    const int fd = testing::ConnectLoopback(ports_.rpc);
    ASSERT_GE(fd, 0) << i;
    std::string out;
    AppendHello({"ha_test", std::string(auth::Bytes(auth::NewNonce())), 0, ""}, &out);
    ASSERT_TRUE(SendBytes(fd, out)) << i;
    std::string pending, body;
    if (ReadFrame(fd, limits, &pending, &body) != ErrorCode::OK) {
      ++refused;  // closed unchecked
      ::close(fd);
      continue;
    }
    auto challenge = DecodeChallenge(body);
    ASSERT_TRUE(challenge.ok() && challenge->required) << i;
    out.clear();
    AppendProof(std::string(auth::kProofBytes, 'w'), &out);
    ASSERT_TRUE(SendBytes(fd, out)) << i;
    ASSERT_EQ(ReadFrame(fd, limits, &pending, &body), ErrorCode::OK) << i;
    auto welcome = DecodeWelcome(body);
    ASSERT_TRUE(welcome.ok()) << i;
    EXPECT_EQ(welcome->code, ErrorCode::UNAUTHENTICATED) << i;
    ++checked;
    ::close(fd);
  }
  EXPECT_GT(refused, 0) << "every one of 300 wrong proofs was checked";
  EXPECT_EQ(Metric("shelfmark_master_auth_handshakes_total{result=\"failed\"}"), checked);
  EXPECT_EQ(Metric("shelfmark_master_auth_handshakes_total{result=\"rate_limited\"}"), refused);
  EXPECT_EQ(Metric("shelfmark_master_auth_handshakes_total{result=\"ok\"}"), 0);
  StillLeadsItsTerm();
}

}  // namespace
}  // namespace shelfmark
