// Faults in a real cluster: shelfmark-master in this network namespace (bound
// to 0.0.0.0), every shelfmark-node in its own namespace behind a veth
// (tests/netns_util.h), the client library in this process. UCX_TLS=tcp for
// every process, so the bytes of every read cross a veth.
//  - A node killed with kill -9: objects with a replica on the other node
//    fail over with the right bytes, the killed node's own objects answer a
//    typed error (never wrong bytes, never a hang); restarted on the same
//    SSD store (strict persistence), its LOCAL_DISK objects are served again.
//  - The master killed with kill -9 and restarted from its local snapshot on
//    the same port: the nodes ride out the outage, and every object complete
//    in the snapshot is served (MEMORY and LOCAL_DISK replicas); new puts do
//    not overwrite restored objects.
//  - A full SSD (a key limit, both backends): offload keeps going within the
//    limit, evicted disk replicas leave the master (EvictDiskReplica), every
//    read answers the right bytes or a typed error, the node stays healthy;
//    also with one offload batch larger than the store (a known product bug
//    makes that case fail, see there).
//  - A lease that expires mid-transfer (the node's veth egress rate-limited
//    with tc tbf): LEASE_EXPIRED and no bytes; without the limit the same get
//    succeeds.
//  - A client with a wrong cluster token: its reads and writes are refused
//    (TRANSFER_FAIL for MEMORY, ILLEGAL_CLIENT for LOCAL_DISK) and the node
//    keeps serving the right-token client.
// Needs root and iproute2 (skipped otherwise, with the reason). Every wait is
// a bounded poll; nothing asserts on timing.
//
// Topology: a TestNetwork (netns_util.h): the namespaces' veths joined by one
// bridge in the host, this process's UCX on that bridge only.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/host_port.h"
#include "client/client.h"
#include "rpc/master_client.h"
#include "service/http_client.h"
#include "ssdstore/storage_config.h"
#include "tests/netns_util.h"
#include "tests/ucx_client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "transport/transport_test_util.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::NetNamespace;
using testing::TestNetwork;
using testing::ReadFile;
using testing::WaitForText;

constexpr int kStartMs = 30'000;
constexpr int kWaitMs = 30'000;
constexpr int64_t kTransferTimeoutMs = 3'000;
// A get that has not returned after this long is hung: far beyond the
// client's RPC timeout plus a connect and a transfer timeout per replica.
constexpr int64_t kHungGetMs = 60'000;
constexpr char kBucket[] = "bucket_storage_backend";
constexpr char kOffset[] = "offset_allocator_storage_backend";
constexpr char kSnapshotsOk[] = "shelfmark_master_snapshots_total{result=\"success\"}";
// Namespace numbers of this test (netns_util: 10.<pid-based>.<index>.0/24);
// away from the small numbers other suites are likely to use.
constexpr int kNsA = 41;
constexpr int kNsB = 42;

// Test keys are "<prefix>-<i>-<size>"; the value starts with the key (so a
// read of another object shows) and goes on with a pattern.
std::string KeyOf(const std::string& prefix, int i, size_t size) {
  return prefix + "-" + std::to_string(i) + "-" + std::to_string(size);
}

std::string ValueOf(const std::string& key) {
  const size_t size = std::stoull(key.substr(key.rfind('-') + 1));
  std::string value =
      testing::TestPattern(size, static_cast<char>(std::hash<std::string>{}(key) % 97));
  const size_t head = std::min(size, key.size());
  value.replace(0, head, key, 0, head);
  return value;
}

// `count` keys cycling through sizes from 1 byte to 1 MiB.
std::vector<std::string> MixedKeys(const std::string& prefix, int count) {
  static constexpr size_t kSizes[] = {1, 4095, 4096, 65536, 100'003, size_t{1} << 20};
  std::vector<std::string> keys;
  for (int i = 0; i < count; ++i) keys.push_back(KeyOf(prefix, i, kSizes[i % std::size(kSizes)]));
  return keys;
}

std::vector<std::string> Join(const std::vector<std::vector<std::string>>& lists) {
  std::vector<std::string> out;
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

bool OnDiskOf(const std::vector<ReplicaDescriptor>& replicas, const std::string& client_id) {
  return std::any_of(replicas.begin(), replicas.end(), [&](const ReplicaDescriptor& r) {
    return r.type == ReplicaType::LOCAL_DISK && r.disk.client_id.ToString() == client_id;
  });
}

// The hosts of the MEMORY replicas' endpoints (a node's namespace address).
std::multiset<std::string> MemoryHosts(const std::vector<ReplicaDescriptor>& replicas) {
  std::multiset<std::string> hosts;
  for (const ReplicaDescriptor& r : replicas) {
    auto hp = ParseHostPort(r.memory.endpoint);
    if (r.type == ReplicaType::MEMORY && hp) hosts.insert(hp->host);
  }
  return hosts;
}

// The typed answer of a get that must not give bytes: its code, or "bytes"
// when it gave some (right or wrong, both are wrong here).
std::string Outcome(const Result<std::string>& got) {
  return got.ok() ? "bytes" : std::string(ErrorCodeName(got.error()));
}

// A shelfmark-node process inside a namespace.
struct NodeProcess {
  std::unique_ptr<ChildProcess> process;
  std::string client_id;  // as DiskDescriptor::client_id prints
  std::string ip;         // its namespace address (endpoints, /metrics)
  uint16_t metrics_port = 0;

  // A sample of its /metrics (reached over the veth); -1 when unreachable.
  double Metric(const std::string& series) const {
    auto reply = HttpGet(HostPort{ip, metrics_port}, "/metrics", 2'000);
    if (!reply.ok() || reply->status != 200) return -1;
    return PrometheusValue(reply->body, series).value_or(-1);
  }
  bool Healthy() const {
    auto reply = HttpGet(HostPort{ip, metrics_port}, "/health", 2'000);
    return reply.ok() && reply->status == 200;
  }
  bool WaitMetric(const std::string& series, const std::function<bool(double)>& done) const {
    return testing::WaitFor([&] { return done(Metric(series)); }, kWaitMs);
  }
  void Kill() const {
    process->Signal(SIGKILL);
    EXPECT_EQ(process->Wait(20'000), 128 + SIGKILL);
  }
};

struct NodeSpec {
  NodeSpec(std::string name_, int ns_, std::string backend_ = "")
      : name(std::move(name_)), ns(ns_), backend(std::move(backend_)) {}
  std::string name;              // segment name; names its log and its store directory
  int ns;                        // namespace number
  std::string backend;           // SSD store backend; "" : no SSD store
  std::string persist = "strict";
  std::vector<std::string> env;  // more VAR=value for the node
  std::string token;             // --cluster_token
};

class ClusterFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NetNamespace::Unavailable();
    if (!why.empty()) GTEST_SKIP() << why;
    // Before any UCX context exists here or in a child: UCX would otherwise
    // use shared memory between processes of one machine.
    setenv("UCX_TLS", "tcp", 1);
    std::string error;
    network_ = TestNetwork::Create(&error);
    ASSERT_NE(network_, nullptr) << error;
    // The clients' UCX on the bridge only (netns_util.h); nodes override it.
    setenv("UCX_NET_DEVICES", network_->bridge().c_str(), 1);
  }

  void TearDown() override {
    clients_.clear();
    master_client_.reset();
    nodes_.clear();
    master_.reset();
    network_.reset();
    unsetenv("UCX_NET_DEVICES");
    // The processes' logs tell why (the directory goes with them).
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".log").c_str());
  }

  // Starts shelfmark-master with `flags` (plus `env` VAR=value) on RPC port
  // `rpc_port` (0: any free one) and waits until it is healthy.
  void StartMaster(const std::vector<std::string>& flags, uint16_t rpc_port = 0,
                   const std::vector<std::string>& env = {}) {
    const std::string log = dir_.Join("master-" + std::to_string(++master_starts_) + ".log");
    std::vector<std::string> args = env;
    args.push_back(SHELFMARK_MASTER_BIN);
    args.insert(args.end(), {"--rpc_address=0.0.0.0", "--rpc_port=" + std::to_string(rpc_port),
                             "--metrics_port=0"});
    args.insert(args.end(), flags.begin(), flags.end());
    master_ = std::make_unique<ChildProcess>("/usr/bin/env", args, log);
    testing::ServicePorts ports;
    ASSERT_TRUE(testing::WaitForServicePorts(log, kStartMs, &ports)) << ReadFile(log);
    rpc_ = ports.rpc;
    http_ = ports.http;
    master_client_ = std::make_unique<MasterClient>(MasterClientOptions{Master()});
  }

  std::string Master() const { return "127.0.0.1:" + std::to_string(rpc_); }
  double MasterMetric(const std::string& series) const {
    return testing::ScrapeMetric(http_, series);
  }
  bool WaitMasterMetric(const std::string& series, const std::function<bool(double)>& done) {
    return testing::WaitForMetric(http_, series, done, kWaitMs);
  }

  // Namespace number `index` of the test network, made on first use.
  NetNamespace* Ns(int index) {
    std::string error;
    NetNamespace* ns = network_->Namespace(index, &error);
    EXPECT_NE(ns, nullptr) << error;
    return ns;
  }

  std::string StoreDir(const std::string& node) const { return dir_.Join(node + ".ssd"); }

  // Starts a node in its namespace, connected to the master through the
  // namespace's host address, and waits until it is mounted (after its disk
  // report). The node is owned by the test (killed at the end); the returned
  // reference stays valid. client_id is empty when it did not come up.
  NodeProcess& StartNode(const NodeSpec& spec) {
    nodes_.push_back(std::make_unique<NodeProcess>());
    NodeProcess& node = *nodes_.back();
    NetNamespace* ns = Ns(spec.ns);
    if (ns == nullptr) return node;
    const std::string log = dir_.Join(spec.name + "-" + std::to_string(nodes_.size()) + ".log");
    std::vector<std::string> args;
    if (!spec.backend.empty()) {
      std::filesystem::create_directories(StoreDir(spec.name));
      args = {std::string(kEnvStoragePath) + "=" + StoreDir(spec.name),
              std::string(kEnvStorageBackend) + "=" + spec.backend,
              std::string(kEnvPersistMode) + "=" + spec.persist,
              std::string(kEnvPersistInterval) + "=5"};
    }
    args.push_back("UCX_NET_DEVICES=all");  // not the bridge: not in the namespace
    args.insert(args.end(), spec.env.begin(), spec.env.end());
    args.insert(args.end(),
                {SHELFMARK_NODE_BIN, "--master=" + ns->host_ip() + ":" + std::to_string(rpc_),
                 "--segment_size=" + std::to_string(32 << 20), "--protocol=ucx",
                 "--listen_ip=" + ns->ip(), "--segment_name=" + spec.name,
                 "--ping_interval_ms=300", "--metrics_port=0",
                 "--cluster_token=" + spec.token});
    node.ip = ns->ip();
    node.process = std::make_unique<ChildProcess>(NetNamespace::Launcher(),
                                                  ns->Wrap("/usr/bin/env", args), log);
    // "shelfmark-node: metrics port <M>", then once mounted (and the disk
    // reported) "node <id> segment <bytes> protocol ucx endpoint <ip>:<port>".
    if (!WaitForText(log, " protocol ucx endpoint " + ns->ip() + ":", kStartMs)) {
      ADD_FAILURE() << "node " << spec.name << " did not come up: " << ReadFile(log);
      return node;
    }
    testing::NodeReady ready;
    if (!testing::ParseNodeReady(ReadFile(log), &ready)) {
      ADD_FAILURE() << "unexpected ready lines from node " << spec.name << ": " << ReadFile(log);
      return node;
    }
    node.client_id = ready.client_id;
    node.metrics_port = ready.metrics_port;
    return node;
  }

  Client* MakeClient(const std::string& token = "",
                     int64_t transfer_timeout_ms = kTransferTimeoutMs) {
    ClientOptions options;
    options.transport.cluster_token = token;
    options.transfer_timeout_ms = transfer_timeout_ms;
    std::unique_ptr<Client> client = testing::MakeUcxClient(Master(), options);
    if (client == nullptr) return nullptr;
    clients_.push_back(std::move(client));
    return clients_.back().get();
  }

  // Every replica of `key` (any status) without granting a lease; empty when
  // the master does not know the key.
  std::vector<ReplicaDescriptor> Replicas(const std::string& key) {
    auto info = master_client_->Stat("", key);
    return info.ok() ? info->replicas : std::vector<ReplicaDescriptor>{};
  }

  // The keys of `keys` the master lists with a LOCAL_DISK replica on `node`.
  std::vector<std::string> ListedOnDisk(const std::vector<std::string>& keys,
                                        const NodeProcess& node) {
    std::vector<std::string> out;
    for (const std::string& key : keys) {
      if (OnDiskOf(Replicas(key), node.client_id)) out.push_back(key);
    }
    return out;
  }

  bool WaitOnDisk(const std::vector<std::string>& keys, const NodeProcess& node) {
    return testing::WaitFor([&] { return ListedOnDisk(keys, node).size() == keys.size(); }, kWaitMs);
  }

  static void PutAll(Client& client, const std::vector<std::string>& keys,
                     const PutOptions& options) {
    for (const std::string& key : keys) {
      const ErrorCode rc = client.Put("", key, ValueOf(key), options);
      ASSERT_EQ(rc, ErrorCode::OK) << key << ": " << ErrorCodeName(rc);
    }
  }

  static PutOptions On(const std::string& segment, uint32_t replicas = 1) {
    PutOptions options;
    options.config.replica_num = replicas;
    if (!segment.empty()) options.config.preferred_segments = {segment};
    return options;
  }

  // Gets every key and checks its bytes.
  static void ExpectBytes(Client& client, const std::vector<std::string>& keys,
                          const GetOptions& get = {}) {
    for (const std::string& key : keys) {
      auto got = client.Get("", key, get);
      ASSERT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
      EXPECT_TRUE(*got == ValueOf(key)) << key << ": wrong bytes (" << got->size() << " bytes)";
    }
  }

  // Reads `key` through its replicas of `type` only (Locate, then Read with
  // the other replicas dropped); UNAVAILABLE_IN_CURRENT_STATUS when it has
  // none of that type.
  static Result<std::string> ReadOnly(Client& client, const std::string& key, ReplicaType type) {
    auto location = client.Locate("", key);
    if (!location.ok()) return location.error();
    auto& replicas = location->info.replicas;
    replicas.erase(std::remove_if(replicas.begin(), replicas.end(),
                                  [type](const ReplicaDescriptor& r) { return r.type != type; }),
                   replicas.end());
    std::string bytes(std::max<uint64_t>(location->info.size, 1), '\0');
    if (ErrorCode rc = client.RegisterBuffer(bytes.data(), bytes.size()); rc != ErrorCode::OK) {
      return rc;
    }
    ErrorCode rc = client.Read(*location, bytes.data(), bytes.size());
    client.UnregisterBuffer(bytes.data());
    if (rc != ErrorCode::OK) return rc;
    bytes.resize(location->info.size);
    return bytes;
  }

  // Get on its own thread; a failure when it has not returned after
  // kHungGetMs (a get must end within the client's own timeouts).
  static Result<std::string> GetOrHang(Client& client, const std::string& key) {
    std::promise<Result<std::string>> answer;
    auto future = answer.get_future();
    std::thread getter([&] { answer.set_value(client.Get("", key)); });
    if (future.wait_for(std::chrono::milliseconds(kHungGetMs)) != std::future_status::ready) {
      ADD_FAILURE() << key << ": Get has not returned after " << kHungGetMs << " ms";
    }
    getter.join();
    return future.get();
  }

  testing::TempDir dir_{"cluster_fault"};  // logs, stores, snapshots; outlives the processes
  std::unique_ptr<TestNetwork> network_;  // the bridge and the namespaces
  uint16_t rpc_ = 0, http_ = 0;
  int master_starts_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::unique_ptr<MasterClient> master_client_;
  std::vector<std::unique_ptr<NodeProcess>> nodes_;
  std::vector<std::unique_ptr<Client>> clients_;
};

// ---------------------------------------------------------------------------
// 1. A node killed with kill -9.

TEST_F(ClusterFaultTest, KilledNodeFailsOverThenServesItsDiskAfterRestart) {
  ASSERT_NO_FATAL_FAILURE(
      StartMaster({"--client_ttl=2", "--enable_offload", "--default_kv_lease_ttl=2000"}));
  NodeSpec spec_a("node-a", kNsA, kOffset);
  spec_a.env = {std::string(kEnvTotalSizeLimit) + "=64M"};
  NodeProcess* a = &StartNode(spec_a);
  NodeProcess& b = StartNode(NodeSpec("node-b", kNsB));
  ASSERT_FALSE(a->client_id.empty());
  ASSERT_FALSE(b.client_id.empty());
  Client* client = MakeClient();
  ASSERT_NE(client, nullptr);

  const std::vector<std::string> both = MixedKeys("both", 12);
  const std::vector<std::string> only_a = MixedKeys("only-a", 12);
  const std::vector<std::string> only_b = MixedKeys("only-b", 6);
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, both, On("", 2)));
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, only_a, On("node-a")));
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, only_b, On("node-b")));
  for (const std::string& key : both) {
    EXPECT_EQ(MemoryHosts(Replicas(key)), (std::multiset<std::string>{a->ip, b.ip})) << key;
  }
  for (const std::string& key : only_a) {
    EXPECT_EQ(MemoryHosts(Replicas(key)), std::multiset<std::string>{a->ip}) << key;
  }
  ASSERT_TRUE(WaitOnDisk(only_a, *a)) << "A did not offload its objects";
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, Join({both, only_a, only_b})));

  a->Kill();
  // Before the master notices: the other node's replica, or a typed error.
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, Join({both, only_b})));
  for (const std::string& key : only_a) {
    auto got = GetOrHang(*client, key);
    const std::string outcome = Outcome(got);
    EXPECT_TRUE(outcome == "TRANSFER_FAIL" || outcome == "OBJECT_NOT_FOUND")
        << key << ": " << outcome;
  }
  // After the client TTL the master drops A, its segment and its replicas.
  ASSERT_TRUE(WaitMasterMetric("shelfmark_master_clients", [](double v) { return v == 1; }));
  ASSERT_TRUE(WaitMasterMetric("shelfmark_master_segments", [](double v) { return v == 1; }));
  for (const std::string& key : only_a) {
    EXPECT_EQ(Outcome(GetOrHang(*client, key)), "OBJECT_NOT_FOUND") << key;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, Join({both, only_b})));

  // A again, on the same store: it re-reports what it stored and serves it.
  const std::string old_id = a->client_id;
  a = &StartNode(spec_a);
  ASSERT_FALSE(a->client_id.empty());
  ASSERT_NE(a->client_id, old_id);
  EXPECT_GE(a->Metric("shelfmark_node_disk_reported_objects_total"),
            static_cast<double>(only_a.size()));
  ASSERT_TRUE(WaitOnDisk(only_a, *a)) << "the restarted A does not list its SSD objects";
  const double requests = a->Metric("shelfmark_node_disk_requests_total");
  ASSERT_GE(requests, 0);
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, only_a));
  EXPECT_EQ(a->Metric("shelfmark_node_disk_requests_total"),
            requests + static_cast<double>(only_a.size()))
      << "not every object was read from A's LOCAL_DISK service";
  EXPECT_EQ(a->Metric("shelfmark_node_disk_errors_total"), 0);
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, Join({both, only_b})));
}

// ---------------------------------------------------------------------------
// 2. The master killed with kill -9 and restarted from its snapshot.

TEST_F(ClusterFaultTest, MasterRestartedFromSnapshotServesEverySnapshottedObject) {
  const std::vector<std::string> env = {"MOONCAKE_SNAPSHOT_LOCAL_PATH=" + dir_.Join("snapshots")};
  const std::vector<std::string> flags = {
      "--client_ttl=5", "--enable_offload", "--memory_allocator=offset",
      "--enable_snapshot=true", "--enable_snapshot_restore=true",
      "--snapshot_object_store_type=local", "--snapshot_catalog_store_type=embedded",
      "--snapshot_interval_seconds=1", "--snapshot_child_timeout_seconds=300",
      "--snapshot_retention_count=2"};
  // The nodes keep the master's address: the restart needs the same port.
  ASSERT_NO_FATAL_FAILURE(StartMaster(flags, testing::FreePort(), env));
  const uint16_t rpc = rpc_;
  NodeProcess& a = StartNode(NodeSpec("node-a", kNsA, kBucket));
  NodeProcess& b = StartNode(NodeSpec("node-b", kNsB));
  ASSERT_FALSE(a.client_id.empty());
  ASSERT_FALSE(b.client_id.empty());
  Client* client = MakeClient();
  ASSERT_NE(client, nullptr);

  const std::vector<std::string> both = MixedKeys("both", 6);
  const std::vector<std::string> only_a = MixedKeys("only-a", 12);
  const std::vector<std::string> only_b = MixedKeys("only-b", 12);
  const std::vector<std::string> saved = Join({both, only_a, only_b});
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, both, On("", 2)));
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, only_a, On("node-a")));
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, only_b, On("node-b")));
  ASSERT_TRUE(WaitOnDisk(only_a, a)) << "A did not offload its objects";
  // Two snapshots that started after the last change: the objects and A's
  // disk replicas are in the newest one.
  const double done = MasterMetric(kSnapshotsOk);
  ASSERT_GE(done, 0);
  ASSERT_TRUE(WaitMasterMetric(kSnapshotsOk, [done](double v) { return v >= done + 2; }))
      << "snapshot failures: "
      << MasterMetric("shelfmark_master_snapshots_total{result=\"failure\"}");
  // Put right before the kill: in the snapshot or not, never wrong bytes.
  const std::vector<std::string> late = MixedKeys("late", 6);
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, late, On("node-b")));

  const double failures_a = a.Metric("shelfmark_node_ping_failures_total");
  const double failures_b = b.Metric("shelfmark_node_ping_failures_total");
  const double remounts_a = a.Metric("shelfmark_node_remounts_total");
  const double remounts_b = b.Metric("shelfmark_node_remounts_total");
  master_->Signal(SIGKILL);
  ASSERT_EQ(master_->Wait(20'000), 128 + SIGKILL);
  // Both nodes notice the outage before the master comes back.
  ASSERT_TRUE(a.WaitMetric("shelfmark_node_ping_failures_total",
                           [&](double v) { return v > failures_a; }));
  ASSERT_TRUE(b.WaitMetric("shelfmark_node_ping_failures_total",
                           [&](double v) { return v > failures_b; }));

  ASSERT_NO_FATAL_FAILURE(StartMaster(flags, rpc, env));
  EXPECT_EQ(MasterMetric("shelfmark_master_restore_succeeded"), 1);
  EXPECT_GE(MasterMetric("shelfmark_master_restore_objects"), static_cast<double>(saved.size()));
  // The nodes' pings are answered again. The snapshot restored their
  // segments (docs/snapshot.md: "nodes need not remount"), so they stay
  // mounted without a NEED_REMOUNT.
  for (NodeProcess* node : {&a, &b}) {
    const double pings = node->Metric("shelfmark_node_pings_total");
    ASSERT_TRUE(node->WaitMetric("shelfmark_node_pings_total",
                                 [&](double v) { return v >= pings + 3; }))
        << node->ip << " is not pinging the restarted master";
    EXPECT_EQ(node->Metric("shelfmark_node_mounted"), 1);
  }
  EXPECT_EQ(a.Metric("shelfmark_node_remounts_total"), remounts_a);
  EXPECT_EQ(b.Metric("shelfmark_node_remounts_total"), remounts_b);
  EXPECT_EQ(MasterMetric("shelfmark_master_segments"), 2);

  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, saved));
  for (const std::string& key : late) {
    auto got = client->Get("", key);
    if (got.ok()) {
      EXPECT_TRUE(*got == ValueOf(key)) << key << ": wrong bytes";
    } else {
      EXPECT_EQ(got.error(), ErrorCode::OBJECT_NOT_FOUND) << key;
    }
  }
  // A's disk replicas came back with the snapshot: served by A's disk.
  EXPECT_EQ(ListedOnDisk(only_a, a).size(), only_a.size());
  const double requests = a.Metric("shelfmark_node_disk_requests_total");
  GetOptions disk_first;
  disk_first.prefer_local_disk = true;
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, only_a, disk_first));
  EXPECT_EQ(a.Metric("shelfmark_node_disk_requests_total"),
            requests + static_cast<double>(only_a.size()));
  // The restored allocators hand out only free memory: new puts on both
  // nodes leave every restored object intact.
  const std::vector<std::string> after = MixedKeys("after", 24);
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, after, On("", 2)));
  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*client, Join({saved, after})));
}

// ---------------------------------------------------------------------------
// 3. A full SSD: a store that holds 8 objects.

class FullSsdTest : public ClusterFaultTest, public ::testing::WithParamInterface<std::string> {
 protected:
  static constexpr int kLimit = 8;  // MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT

  // The master, a node whose store (the test's backend) holds kLimit
  // objects, and a client; nullptr when something did not come up.
  NodeProcess* StartFullNode() {
    StartMaster({"--client_ttl=5", "--enable_offload"});
    if (HasFatalFailure()) return nullptr;
    NodeSpec spec("full", kNsA, GetParam());
    spec.env = {std::string(kEnvTotalKeysLimit) + "=" + std::to_string(kLimit),
                std::string(kEnvTotalSizeLimit) + "=64M"};
    NodeProcess& node = StartNode(spec);
    client_ = MakeClient();
    return node.client_id.empty() || client_ == nullptr ? nullptr : &node;
  }

  // Waits until the node has handled (offloaded or failed) `tasks` tasks.
  bool WaitHandled(const NodeProcess& node, double tasks) {
    return testing::WaitFor([&] {
      return node.Metric("shelfmark_node_offloaded_objects_total") +
                 node.Metric("shelfmark_node_offload_failures_total") >= tasks;
    }, kWaitMs);
  }

  // Every read of every key (MEMORY first, LOCAL_DISK first, LOCAL_DISK
  // only) answers the right bytes or a typed error; the plain get answers
  // the bytes (the MEMORY replicas stay).
  void ExpectRightBytesOrTypedErrors(const std::vector<std::string>& keys) {
    GetOptions disk_first;
    disk_first.prefer_local_disk = true;
    for (const std::string& key : keys) {
      auto got = client_->Get("", key, disk_first);
      if (got.ok()) {
        EXPECT_TRUE(*got == ValueOf(key)) << key << ": wrong bytes";
      }
      auto disk = ReadOnly(*client_, key, ReplicaType::LOCAL_DISK);
      if (disk.ok()) {
        EXPECT_TRUE(*disk == ValueOf(key)) << key << ": wrong bytes from disk";
      }
    }
    ExpectBytes(*client_, keys);
  }

  Client* client_ = nullptr;
};

TEST_P(FullSsdTest, EvictsDiskReplicasAndKeepsServing) {
  constexpr int kRound = 4;  // objects per offload batch: within the limit
  constexpr int kRounds = 6;
  NodeProcess* node = StartFullNode();
  ASSERT_NE(node, nullptr);
  static constexpr size_t kSizes[] = {1, 4096, 20'000, 65536};
  std::vector<std::string> keys;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::string> batch;
    for (int i = 0; i < kRound; ++i) {
      const int n = round * kRound + i;
      batch.push_back(KeyOf("full", n, kSizes[n % std::size(kSizes)]));
    }
    ASSERT_NO_FATAL_FAILURE(PutAll(*client_, batch, On("full")));
    keys.insert(keys.end(), batch.begin(), batch.end());
    const double total = static_cast<double>(keys.size());
    ASSERT_TRUE(node->WaitMetric("shelfmark_node_offloaded_objects_total",
                                 [&](double v) { return v >= total; }))
        << "offloaded " << node->Metric("shelfmark_node_offloaded_objects_total") << " of " << total
        << ", failures " << node->Metric("shelfmark_node_offload_failures_total");
    EXPECT_LE(node->Metric("shelfmark_node_disk_objects"), kLimit);
  }
  EXPECT_EQ(node->Metric("shelfmark_node_offload_failures_total"), 0);
  // Every eviction reaches the master: it lists exactly what the store holds.
  const double stored = node->Metric("shelfmark_node_disk_objects");
  EXPECT_GE(stored, 1);
  EXPECT_LE(stored, kLimit);
  const double evicted = static_cast<double>(keys.size()) - stored;
  ASSERT_TRUE(node->WaitMetric("shelfmark_node_disk_evictions_total",
                               [&](double v) { return v >= evicted; }))
      << "evictions told to the master: " << node->Metric("shelfmark_node_disk_evictions_total")
      << " of " << evicted;
  std::vector<std::string> listed;
  ASSERT_TRUE(testing::WaitFor([&] {
    listed = ListedOnDisk(keys, *node);
    return static_cast<double>(listed.size()) == stored;
  }, kWaitMs)) << listed.size() << " listed on disk, the store holds " << stored;
  // What is listed reads from the disk; the rest has no disk replica left.
  const std::set<std::string> on_disk(listed.begin(), listed.end());
  for (const std::string& key : keys) {
    auto disk = ReadOnly(*client_, key, ReplicaType::LOCAL_DISK);
    if (on_disk.count(key) != 0) {
      ASSERT_TRUE(disk.ok()) << key << ": " << ErrorCodeName(disk.error());
      EXPECT_TRUE(*disk == ValueOf(key)) << key << ": wrong bytes from disk";
    } else {
      EXPECT_EQ(Outcome(disk), "UNAVAILABLE_IN_CURRENT_STATUS") << key << " (no disk replica)";
    }
  }
  ExpectRightBytesOrTypedErrors(keys);
  EXPECT_TRUE(node->Healthy());
  EXPECT_EQ(node->Metric("shelfmark_node_mounted"), 1);
}

// One offload batch with more objects than the store holds (a BatchPut: all
// its offload tasks are queued at once, and the node takes up to 64 per
// round). Nothing breaks: every read answers the right bytes or a typed
// error and the node stays up. Expected as well: offload goes on within the
// limit, the store ending with objects of the burst.
//
// PRODUCT BUG (reported; this case fails until it is fixed): Node::Offload
// hands the whole batch to one StorageBackend::WriteBatch, both backends
// refuse a batch with more keys than the store's limit (INVALID_PARAMS),
// the node counts every task as failed, and the master never hands them out
// again: none of the burst reaches the SSD.
TEST_P(FullSsdTest, BurstLargerThanTheStoreStillOffloadsWithinTheLimit) {
  NodeProcess* node = StartFullNode();
  ASSERT_NE(node, nullptr);
  const std::vector<std::string> burst = MixedKeys("burst", 3 * kLimit);
  std::vector<std::string> values;
  for (const std::string& key : burst) values.push_back(ValueOf(key));
  const std::vector<std::string_view> views(values.begin(), values.end());
  for (ErrorCode rc : client_->BatchPut("", burst, views, On("full"))) {
    ASSERT_EQ(rc, ErrorCode::OK) << ErrorCodeName(rc);
  }
  ASSERT_TRUE(WaitHandled(*node, static_cast<double>(burst.size())));
  ExpectRightBytesOrTypedErrors(burst);
  EXPECT_LE(node->Metric("shelfmark_node_disk_objects"), kLimit);
  EXPECT_TRUE(node->Healthy());
  EXPECT_EQ(node->Metric("shelfmark_node_mounted"), 1);

  const double failures = node->Metric("shelfmark_node_offload_failures_total");
  const size_t listed = ListedOnDisk(burst, *node).size();
  EXPECT_TRUE(failures == 0 && listed > 0)
      << "PRODUCT BUG: a burst of " << burst.size() << " objects for a store of " << kLimit
      << " keys: " << failures << " offload tasks failed and " << listed
      << " objects reached the SSD (expected: offload within the limit, e.g. the node splitting "
         "the batch to what the store takes, and no task lost)";
}

INSTANTIATE_TEST_SUITE_P(Backends, FullSsdTest, ::testing::Values(kBucket, kOffset),
                         [](const auto& info) {
                           return info.param == kBucket ? "bucket" : "offset";
                         });

// ---------------------------------------------------------------------------
// 4. A lease that expires mid-transfer.

// The namespace side of `ns`'s veth (the only interface besides lo).
std::string VethInside(const NetNamespace& ns) {
  std::string links;
  if (testing::RunCommand({"ip", "-n", ns.name(), "-o", "link"}, &links) != 0) return "";
  std::istringstream in(links);
  std::string line;
  while (std::getline(in, line)) {
    // "2: smp...@if5: <BROADCAST,...> ..."
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 2, line.find_first_of("@:", colon + 2) - colon - 2);
    if (name != "lo") return name;
  }
  return "";
}

// Gets `key` until it fits in its lease (a busy machine may miss a short
// one now and then): true once the right bytes came; every other answer
// must be LEASE_EXPIRED.
bool GetWithinLease(Client& client, const std::string& key) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto got = client.Get("", key);
    if (got.ok()) {
      EXPECT_TRUE(*got == ValueOf(key)) << key << ": wrong bytes";
      return true;
    }
    EXPECT_EQ(got.error(), ErrorCode::LEASE_EXPIRED) << key;
  }
  return false;
}

TEST_F(ClusterFaultTest, LeaseExpiringMidTransferAnswersLeaseExpired) {
  ASSERT_NO_FATAL_FAILURE(StartMaster({"--client_ttl=5", "--default_kv_lease_ttl=200"}));
  NodeProcess& node = StartNode(NodeSpec("slow", kNsA));
  ASSERT_FALSE(node.client_id.empty());
  // A transfer timeout far above the throttled transfer: the read completes
  // (late) instead of failing.
  Client* client = MakeClient("", 30'000);
  ASSERT_NE(client, nullptr);
  const std::string small = KeyOf("lease", 0, 4096);
  const std::string big = KeyOf("lease", 1, 1 << 20);
  ASSERT_NO_FATAL_FAILURE(PutAll(*client, {small, big}, On("slow")));
  ASSERT_TRUE(GetWithinLease(*client, small));  // connected
  ASSERT_TRUE(GetWithinLease(*client, big));

  // 8 Mbit/s out of the node: 1 MiB takes about a second, the lease 200 ms
  // (that the limit changes the answer also shows that the bytes cross the
  // veth).
  const std::string dev = VethInside(*Ns(kNsA));
  ASSERT_FALSE(dev.empty());
  const std::string ns = Ns(kNsA)->name();
  ASSERT_EQ(testing::RunOk({"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", "8mbit",
                   "burst", "16kb", "latency", "500ms"}),
            "");
  auto got = client->Get("", big);
  EXPECT_EQ(Outcome(got), "LEASE_EXPIRED");
  // Zero-copy read: the same answer (its buffer's bytes are not to be used).
  auto location = client->Locate("", big);
  ASSERT_TRUE(location.ok()) << ErrorCodeName(location.error());
  std::string buffer(1 << 20, '\0');
  ASSERT_EQ(client->RegisterBuffer(buffer.data(), buffer.size()), ErrorCode::OK);
  EXPECT_EQ(client->Read(*location, buffer.data(), buffer.size()), ErrorCode::LEASE_EXPIRED);
  client->UnregisterBuffer(buffer.data());

  ASSERT_EQ(testing::RunOk({"tc", "-n", ns, "qdisc", "del", "dev", dev, "root"}), "");
  EXPECT_TRUE(GetWithinLease(*client, big)) << "the unthrottled get never fit in its lease";
  EXPECT_TRUE(node.Healthy());
}

// ---------------------------------------------------------------------------
// 5. A client with a wrong cluster token.

TEST_F(ClusterFaultTest, WrongClusterTokenIsRefusedAndTheNodeKeepsServing) {
  ASSERT_NO_FATAL_FAILURE(StartMaster({"--client_ttl=5", "--enable_offload"}));
  NodeSpec spec("guarded", kNsA, kBucket);
  spec.token = "right-token";
  NodeProcess& node = StartNode(spec);
  ASSERT_FALSE(node.client_id.empty());
  Client* good = MakeClient("right-token");
  Client* bad = MakeClient("wrong-token");
  ASSERT_NE(good, nullptr);
  ASSERT_NE(bad, nullptr);
  const std::vector<std::string> keys = MixedKeys("guarded", 12);
  ASSERT_NO_FATAL_FAILURE(PutAll(*good, keys, On("guarded")));
  ASSERT_TRUE(WaitOnDisk(keys, node)) << "the node did not offload";

  const double requests = node.Metric("shelfmark_node_disk_requests_total");
  ASSERT_GE(requests, 0);
  for (const std::string& key : keys) {
    EXPECT_EQ(Outcome(ReadOnly(*bad, key, ReplicaType::MEMORY)), "TRANSFER_FAIL") << key;
    EXPECT_EQ(Outcome(ReadOnly(*bad, key, ReplicaType::LOCAL_DISK)), "ILLEGAL_CLIENT") << key;
    const std::string outcome = Outcome(bad->Get("", key));
    EXPECT_TRUE(outcome == "ILLEGAL_CLIENT" || outcome == "TRANSFER_FAIL")
        << key << ": " << outcome;
  }
  // Its writes are refused too, and leave nothing behind.
  const std::string refused = KeyOf("refused", 0, 4096);
  EXPECT_EQ(bad->Put("", refused, ValueOf(refused), On("guarded")), ErrorCode::TRANSFER_FAIL);
  auto exists = good->Exist("", refused);
  ASSERT_TRUE(exists.ok());
  EXPECT_FALSE(*exists);
  // The refused LOCAL_DISK calls never reached the service.
  EXPECT_EQ(node.Metric("shelfmark_node_disk_requests_total"), requests);

  ASSERT_NO_FATAL_FAILURE(ExpectBytes(*good, keys));
  for (const std::string& key : keys) {
    auto disk = ReadOnly(*good, key, ReplicaType::LOCAL_DISK);
    ASSERT_TRUE(disk.ok()) << key << ": " << ErrorCodeName(disk.error());
    EXPECT_TRUE(*disk == ValueOf(key)) << key << ": wrong bytes from disk";
  }
  EXPECT_EQ(node.Metric("shelfmark_node_disk_requests_total"),
            requests + static_cast<double>(keys.size()));
  EXPECT_TRUE(node.Healthy());
}

}  // namespace
}  // namespace shelfmark
