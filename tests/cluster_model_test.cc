// A real shelfmark-master, three shelfmark-node processes each in its own
// network namespace (UCX over tcp across veths) and eight clients in this
// process, each doing 10,000 mixed Put/Get/Remove calls on 1,000 shared keys
// while one node is killed with SIGKILL and started again, then stopped with
// SIGTERM and started again. Every Get that returns bytes is checked against
// a model of what was acknowledged; every other answer must be a typed error
// (tallied by code), no call may hang, and most reads of keys the model
// holds must succeed.
//
// The model and the workload: tests/model_workload.h. Here a key may also
// vanish without a call (its replicas were on the killed node, or it was
// evicted): reads then answer errors, which are allowed
// (WorkloadOptions::absence_is_checked is false).
//
// Network: a TestNetwork (netns_util.h): one bridge in the host joins the
// namespaces' veths and this process's UCX uses only the bridge; each node's
// UCX uses only its veth. The bytes still cross each node's own veth.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/model_workload.h"
#include "tests/netns_util.h"
#include "tests/ucx_client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::KeyModel;
using testing::KeyName;
using testing::NetNamespace;
using testing::PrintTally;
using testing::ReadFile;
using testing::Tally;
using testing::TestNetwork;
using testing::WaitForText;
using testing::Worker;
using testing::Workload;
using testing::WorkloadOptions;

constexpr int kStartMs = 30'000;
constexpr uint32_t kClients = 8;
constexpr int kOpsPerClient = 10'000;
constexpr int kNodes = 3;
constexpr int kVictim = 1;  // the node that is restarted
constexpr int64_t kRpcTimeoutMs = 3'000;
constexpr int64_t kTransferTimeoutMs = 3'000;
// 1,000 keys, values of 256 B to 64 KiB, one or two replicas; keys may
// vanish with the killed node.
const WorkloadOptions kWorkload{};
// Longer than this, a call counts as hung: a Put is two master RPCs
// (PutStart, then PutEnd or PutRevoke) and one transfer, a Get one RPC and
// at most one read per replica; plus 5 s of slack for a loaded machine. A
// hang check, not a performance threshold.
const int64_t kHangBoundMs =
    2 * kRpcTimeoutMs + kWorkload.max_replicas * kTransferTimeoutMs + 5'000;
// The workload reaching a given number of calls takes far less than this;
// past it, it is stuck.
constexpr int64_t kProgressMs = 300'000;

// --- the cluster ------------------------------------------------------------------

class ClusterModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetNamespace::Unavailable();
    if (!why.empty()) GTEST_SKIP() << why;
    // Inherited by the master and nodes, read by this process's clients.
    setenv("UCX_TLS", "tcp", 1);
    ASSERT_NO_FATAL_FAILURE(StartMaster());
    std::string error;
    network_ = TestNetwork::Create(&error);
    ASSERT_NE(network_, nullptr) << error;
    for (int i = 0; i < kNodes; ++i) {
      namespaces_.push_back(network_->Namespace(i + 1, &error));
      ASSERT_NE(namespaces_.back(), nullptr) << error;
      ASSERT_NO_FATAL_FAILURE(StartNode(i));
    }
    ASSERT_TRUE(WaitForSegments(kNodes));
    // This process's clients: UCX on the bridge only (netns_util.h).
    setenv("UCX_NET_DEVICES", network_->bridge().c_str(), 1);
  }

  void TearDown() override {
    nodes_.clear();  // before their namespaces go
    namespaces_.clear();
    network_.reset();
    master_.reset();
    unsetenv("UCX_NET_DEVICES");
    // A failed test shows the processes' logs (the directory goes with them).
    if (HasFailure()) {
      std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".err", 2000).c_str());
    }
  }

  // Where a process's stderr goes: one file per process start.
  std::string LogPath(const std::string& name) const { return dir_.Join(name + ".err"); }

  // The master binds every address (nodes reach it through their veth) and
  // free ports, which it prints.
  void StartMaster() {
    const std::string err = LogPath("master");
    master_ = std::make_unique<ChildProcess>(
        SHELFMARK_MASTER_BIN,
        std::vector<std::string>{"--rpc_address=0.0.0.0", "--rpc_port=0", "--metrics_port=0",
                                 "--client_ttl=2", "--default_kv_lease_ttl=2000"},
        err);
    testing::ServicePorts ports;
    ASSERT_TRUE(testing::WaitForServicePorts(err, kStartMs, &ports)) << ReadFile(err);
    rpc_ = ports.rpc;
    http_ = ports.http;
  }

  // Bytes this host sent into / received from each namespace's veth.
  std::vector<std::pair<double, double>> VethBytes() const {
    std::vector<std::pair<double, double>> bytes;
    for (const auto& ns : namespaces_) {
      const std::string dir = "/sys/class/net/" + ns->host_device() + "/statistics/";
      bytes.emplace_back(std::atof(ReadFile(dir + "tx_bytes").c_str()),
                         std::atof(ReadFile(dir + "rx_bytes").c_str()));
    }
    return bytes;
  }

  static std::string SegmentName(int node) { return "model-node" + std::to_string(node); }

  // Starts node `node` (again) inside its namespace and waits for its ready
  // line; each start logs to its own file.
  void StartNode(int node) {
    const NetNamespace& ns = *namespaces_[node];
    const std::string err = LogPath(SegmentName(node) + "_" + std::to_string(starts_++));
    if (nodes_.size() <= static_cast<size_t>(node)) nodes_.resize(node + 1);
    // UCX on the namespace's veth only (not its lo, which UCX would offer
    // to the clients too).
    nodes_[node] = std::make_unique<ChildProcess>(
        NetNamespace::Launcher(),
        ns.Wrap("env",
                {"UCX_NET_DEVICES=" + ns.device(), SHELFMARK_NODE_BIN,
                 "--master=" + ns.host_ip() + ":" + std::to_string(rpc_),
                 "--segment_size=67108864", "--protocol=ucx", "--listen_ip=" + ns.ip(),
                 "--segment_name=" + SegmentName(node), "--ping_interval_ms=300",
                 "--metrics_port=0"}),
        err);
    ASSERT_TRUE(WaitForText(err, "protocol ucx endpoint " + ns.ip() + ":", kStartMs))
        << ReadFile(err);
  }

  bool WaitForSegments(int count) {
    return testing::WaitForMetric(
        http_, "shelfmark_master_segments", [count](double v) { return v == count; },
        kStartMs);
  }

  std::unique_ptr<Client> MakeClient() {
    ClientOptions options;
    options.staging_bytes = 8 << 20;
    options.rpc_timeout_ms = kRpcTimeoutMs;
    options.transfer_timeout_ms = kTransferTimeoutMs;
    return testing::MakeUcxClient("127.0.0.1:" + std::to_string(rpc_), options);
  }

  // While the workload runs: SIGKILL the victim and start it again, later
  // SIGTERM it (a clean exit) and start it again. Prints when.
  void RestartVictimTwice(const Workload& load, uint64_t total) {
    ASSERT_TRUE(load.WaitForProgress(total / 5, kProgressMs))
        << "the workload stalled at " << load.done();
    std::printf("SIGKILL %s after %llu ops\n", SegmentName(kVictim).c_str(),
                static_cast<unsigned long long>(load.done()));
    nodes_[kVictim]->Signal(SIGKILL);
    EXPECT_EQ(nodes_[kVictim]->Wait(10'000), 128 + SIGKILL);
    ASSERT_NO_FATAL_FAILURE(StartNode(kVictim));
    std::printf("  back after %llu ops\n", static_cast<unsigned long long>(load.done()));
    ASSERT_TRUE(load.WaitForProgress(total / 2, kProgressMs))
        << "the workload stalled at " << load.done();
    std::printf("SIGTERM %s after %llu ops\n", SegmentName(kVictim).c_str(),
                static_cast<unsigned long long>(load.done()));
    nodes_[kVictim]->Signal(SIGTERM);
    EXPECT_EQ(nodes_[kVictim]->Wait(20'000), 0);
    ASSERT_NO_FATAL_FAILURE(StartNode(kVictim));
    std::printf("  back after %llu ops\n", static_cast<unsigned long long>(load.done()));
  }

  // New values put on the restarted node (preferred segment; its endpoint
  // checked with Locate) read back intact.
  void ExpectVictimServes(Client& client) {
    constexpr uint32_t kFresh = 20;
    const uint32_t keys = kWorkload.keys;
    std::vector<KeyModel> model(keys + kFresh);
    Worker worker(&client, kClients + 1, &model, kWorkload);
    PutOptions on_victim;
    on_victim.config.preferred_segments = {SegmentName(kVictim)};
    for (uint32_t key = keys; key < keys + kFresh; ++key) {
      std::lock_guard<std::mutex> lock(model[key].mu);
      ASSERT_EQ(worker.Put(key, on_victim), ErrorCode::OK) << KeyName(key);
      auto where = client.Locate("", KeyName(key));
      ASSERT_TRUE(where.ok()) << ErrorCodeName(where.error());
      ASSERT_EQ(where->info.replicas.size(), 1u);
      EXPECT_EQ(where->info.replicas[0].memory.endpoint.rfind(namespaces_[kVictim]->ip() + ":", 0),
                0u) << where->info.replicas[0].memory.endpoint;
      worker.Get(key);
    }
    EXPECT_EQ(worker.tally().violation_count, 0u) << worker.tally().violations[0];
    EXPECT_EQ(worker.tally().gets_of_held_ok, kFresh) << "reads from the restarted node failed";
  }

  testing::TempDir dir_{"cluster_model"};  // the processes' logs; outlives them
  uint16_t rpc_ = 0, http_ = 0;
  int starts_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::unique_ptr<TestNetwork> network_;  // the bridge and the namespaces
  std::vector<NetNamespace*> namespaces_;   // network_'s, node i in namespaces_[i]
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
};

TEST_F(ClusterModelTest, ConcurrentClientsSeeOnlyAcknowledgedValuesAcrossNodeRestarts) {
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<Client*> raw;
  for (uint32_t c = 0; c < kClients; ++c) {
    clients.push_back(MakeClient());
    ASSERT_NE(clients.back(), nullptr);
    raw.push_back(clients.back().get());
  }
  Workload load(raw, kWorkload);
  ASSERT_NO_FATAL_FAILURE(load.Preload());

  const auto veth_before = VethBytes();
  const auto start = std::chrono::steady_clock::now();
  load.Start(kOpsPerClient);
  RestartVictimTwice(load, uint64_t{kClients} * kOpsPerClient);
  load.Join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(HasFatalFailure());
  const auto veth_after = VethBytes();
  for (int i = 0; i < kNodes; ++i) {
    const double in = (veth_after[i].first - veth_before[i].first) / (1 << 20);
    const double out = (veth_after[i].second - veth_before[i].second) / (1 << 20);
    std::printf("veth of %s: %.0f MiB in, %.0f MiB out\n", SegmentName(i).c_str(), in, out);
    EXPECT_GT(in, 16) << "values did not cross " << SegmentName(i) << "'s veth";
    EXPECT_GT(out, 16) << "values did not cross " << SegmentName(i) << "'s veth";
  }

  // After the killed node's segment expired, every key is read once more,
  // alone, against the model.
  ASSERT_TRUE(WaitForSegments(kNodes));
  const Tally final_read = load.ReadEveryKey();

  Tally tally = load.WorkersTally();
  std::printf("%u clients x %d ops on %u keys in %.1f s\n", kClients, kOpsPerClient,
              kWorkload.keys, seconds);
  PrintTally(tally, kHangBoundMs);
  std::printf("final read of every key:\n");
  PrintTally(final_read, kHangBoundMs);
  // Every replica left is on a live node: a read answers bytes or no object.
  for (const auto& [outcome, n] : final_read.outcomes) {
    EXPECT_TRUE(outcome == "get OK" || outcome == "get OBJECT_NOT_FOUND")
        << "final read: " << n << " x " << outcome;
  }
  tally.Merge(final_read);

  testing::ExpectCorrectAndBounded(tally, kHangBoundMs);
  EXPECT_GT(tally.gets_of_held_ok * 2, tally.gets_of_held)
      << "fewer than half the reads of held keys returned bytes";
  ExpectVictimServes(*clients[0]);
}

}  // namespace
}  // namespace shelfmark
