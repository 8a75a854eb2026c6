// Whole-cluster restart with HA (docs/ha.md, "Restarting every master"):
// three real shelfmark-master --enable_ha with snapshots on one etcd, two
// real shelfmark-node processes and a client, all finding the leader through
// etcd://. Objects are put, a snapshot begun after the last put completes,
// then every master is SIGKILLed at once and all three are started again
// together while the nodes keep running; every object reads back byte-exact
// through the new leader. Twice in a row, once with --ha_unsynced_takeover_s
// longer than --client_ttl (nobody leads for longer than a node's TTL) and
// once shorter. Every wait is WaitFor with a deadline; no durations are
// asserted.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"
#include "tests/ucx_client.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

constexpr int kDeadlineMs = 60'000;
constexpr char kClusterId[] = "ha_restart";
constexpr int kMasters = 3;
constexpr int kObjectsPerRound = 60;
const std::string kSnapshotsOk = "shelfmark_master_snapshots_total{result=\"success\"}";

struct Master {
  std::unique_ptr<ChildProcess> process;
  testing::ServicePorts ports;
  double Metric(const std::string& name) const {
    return testing::ScrapeMetric(ports.http, name);
  }
};

// The bytes of object `i`: distinct per object and per position.
std::string Value(int i) {
  std::string v(4096 + i * 37, '\0');
  for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<char>((j * 131 + i * 7) % 251);
  return v;
}

class HaRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.Start()) << etcd_.StartFailure();
    ASSERT_EQ(::setenv("MOONCAKE_SNAPSHOT_LOCAL_PATH", dir_.Join("snapshots").c_str(), 1), 0);
  }
  void TearDown() override {
    ::unsetenv("MOONCAKE_SNAPSHOT_LOCAL_PATH");
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".log").c_str());
  }

  std::string EtcdAddress() const { return "etcd://" + etcd_.endpoint(); }

  // Starts master `i` (its log appends across restarts).
  void StartMaster(int i) {
    const std::string log = dir_.Join("master" + std::to_string(i) + "-" +
                                      std::to_string(++starts_) + ".log");
    std::vector<std::string> flags = {
        "--enable_ha", "--etcd_endpoints=" + etcd_.endpoint(), "--rpc_address=127.0.0.1",
        std::string("--cluster_id=") + kClusterId, "--client_ttl=" + std::to_string(client_ttl_s_),
        "--ha_unsynced_takeover_s=" + std::to_string(takeover_s_), "--enable_snapshot=true",
        "--enable_snapshot_restore=true", "--snapshot_object_store_type=local",
        "--snapshot_interval_seconds=1", "--snapshot_retention_count=2"};
    masters_[i].process = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, log, &masters_[i].ports);
    ASSERT_NE(masters_[i].process, nullptr) << ReadFile(log);
  }

  // Index of the one master that leads; -1 unless exactly one does.
  int Leader() const {
    int leader = -1, count = 0;
    for (int i = 0; i < kMasters; ++i) {
      if (masters_[i].Metric("shelfmark_master_ha_role") == 1) leader = i, ++count;
    }
    return count == 1 ? leader : -1;
  }

  void StartNode(int n) {
    const std::string log = dir_.Join("node" + std::to_string(n) + ".log");
    nodes_.push_back(std::make_unique<ChildProcess>(
        SHELFMARK_NODE_BIN,
        std::vector<std::string>{"--master=" + EtcdAddress(),
                                 std::string("--cluster_id=") + kClusterId,
                                 "--segment_size=67108864", "--protocol=ucx",
                                 "--listen_ip=127.0.0.1", "--listen_port=0",
                                 "--segment_name=restart-node" + std::to_string(n),
                                 "--ping_interval_ms=300", "--metrics_port=0"},
        log));
    ASSERT_TRUE(testing::WaitForText(log, "protocol ucx endpoint 127.0.0.1:", kDeadlineMs))
        << ReadFile(log);
  }

  std::unique_ptr<Client> MakeClient() const {
    ClientOptions options;
    options.cluster_id = kClusterId;
    options.rpc_timeout_ms = 5000;
    options.transfer_timeout_ms = 5000;
    return testing::MakeUcxClient(EtcdAddress(), options);
  }

  // The cluster: three masters (one leading) and two nodes.
  void StartCluster() {
    for (int i = 0; i < kMasters; ++i) ASSERT_NO_FATAL_FAILURE(StartMaster(i));
    ASSERT_TRUE(testing::WaitFor([&] { return Leader() >= 0; }, kDeadlineMs)) << "one leader";
    for (int n = 0; n < 2; ++n) ASSERT_NO_FATAL_FAILURE(StartNode(n));
  }

  // Puts objects [from, to) and waits for a snapshot begun after the last
  // put (two more successes on the leader).
  void PutAndSnapshot(int from, int to) {
    auto client = MakeClient();
    ASSERT_NE(client, nullptr);
    for (int i = from; i < to; ++i) {
      ASSERT_EQ(client->Put("", "obj-" + std::to_string(i), Value(i)), ErrorCode::OK) << i;
    }
    const int leader = Leader();
    ASSERT_GE(leader, 0);
    const double done = masters_[leader].Metric(kSnapshotsOk);
    ASSERT_GE(done, 0);
    ASSERT_TRUE(testing::WaitFor([&] { return masters_[leader].Metric(kSnapshotsOk) >= done + 2; },
                                 kDeadlineMs))
        << "a snapshot after the last put";
  }

  // SIGKILLs every master at once, then starts all three again together.
  void RestartEveryMaster() {
    for (Master& m : masters_) m.process->Signal(SIGKILL);
    for (Master& m : masters_) ASSERT_EQ(m.process->Wait(kDeadlineMs), 128 + SIGKILL);
    for (int i = 0; i < kMasters; ++i) ASSERT_NO_FATAL_FAILURE(StartMaster(i));
    ASSERT_TRUE(testing::WaitFor([&] { return Leader() >= 0; }, kDeadlineMs))
        << "one leader after the restart";
  }

  // Every object [0, count) reads back byte-exact through the new leader.
  void ExpectEveryObject(int count) {
    auto client = MakeClient();
    ASSERT_NE(client, nullptr);
    int lost = 0, wrong = 0;
    for (int i = 0; i < count; ++i) {
      Result<std::string> got = ErrorCode::RPC_FAIL;
      // The first gets may meet a leader not yet answering (NOT_LEADER,
      // a connection refused): retried within the deadline.
      testing::WaitFor(
          [&] {
            got = client->Get("", "obj-" + std::to_string(i));
            return got.ok() || got.error() == ErrorCode::OBJECT_NOT_FOUND;
          },
          kDeadlineMs);
      if (!got.ok()) {
        ++lost;
        ADD_FAILURE() << "obj-" << i << ": " << ErrorCodeName(got.error());
      } else if (*got != Value(i)) {
        ++wrong;
      }
    }
    EXPECT_EQ(lost, 0) << "of " << count;
    EXPECT_EQ(wrong, 0) << "of " << count;
    // The nodes stayed: none was expired and mounted again.
    for (int n = 0; n < 2; ++n) {
      EXPECT_EQ(ReadFile(dir_.Join("node" + std::to_string(n) + ".log")).find("remounted segment"),
                std::string::npos);
    }
  }

  // Two rounds of put, snapshot, restart of every master, read back.
  void TwoWholeClusterRestarts() {
    ASSERT_NO_FATAL_FAILURE(StartCluster());
    for (int round = 1; round <= 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      ASSERT_NO_FATAL_FAILURE(PutAndSnapshot((round - 1) * kObjectsPerRound,
                                             round * kObjectsPerRound));
      ASSERT_NO_FATAL_FAILURE(RestartEveryMaster());
      ASSERT_NO_FATAL_FAILURE(ExpectEveryObject(round * kObjectsPerRound));
      const int leader = Leader();
      ASSERT_GE(leader, 0);
      EXPECT_EQ(masters_[leader].Metric("shelfmark_master_snapshot_empty_starts_total"), 0);
    }
  }

  testing::TempDir dir_{"ha_restart"};
  testing::EtcdProcess etcd_;
  Master masters_[kMasters];
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
  int starts_ = 0;
  int client_ttl_s_ = 4;
  int takeover_s_ = 10;
};

// Nobody leads for longer than a node's TTL: no master may expire them.
TEST_F(HaRestartTest, EveryMasterKilledTwiceWithTakeoverLongerThanTheClientTtl) {
  client_ttl_s_ = 4;
  takeover_s_ = 10;
  TwoWholeClusterRestarts();
}

TEST_F(HaRestartTest, EveryMasterKilledTwiceWithTakeoverShorterThanTheClientTtl) {
  client_ttl_s_ = 20;
  takeover_s_ = 2;
  TwoWholeClusterRestarts();
}

}  // namespace
}  // namespace shelfmark
