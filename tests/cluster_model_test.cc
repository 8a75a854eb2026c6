// A real shelfmark-master, three shelfmark-node processes each in its own
// network namespace (UCX over tcp across veths) and eight clients in this
// process, each doing 10,000 mixed Put/Get/Remove calls on 1,000 shared keys
// while one node is killed with SIGKILL and started again, then stopped with
// SIGTERM and started again. Every Get that returns bytes is checked against
// a model of what was acknowledged; every other answer must be a typed error
// (tallied by code), no call may hang, and most reads of keys the model
// holds must succeed.
//
// The model: operations on one key are serialised by that key's mutex, held
// across the client call, so for each key the model knows the values that
// may be current:
//   - Put acknowledged OK       -> exactly its value;
//   - Remove acknowledged OK    -> none (and so does OBJECT_NOT_FOUND,
//                                  from Remove or Get: no object exists);
//   - Get returning value v     -> exactly v (it was current);
//   - Put OBJECT_ALREADY_EXISTS -> unchanged (PutStart refused it);
//   - any other failed Put      -> its value is added (PutEnd may have been
//                                  applied although the call failed);
//   - any other failed Remove   -> unchanged (a value that may be current
//                                  stays so; absence is never checked).
// A key may also vanish without a call (its replicas were on the killed
// node, or it was evicted): reads then answer errors, which are allowed.
// Values are self-describing ("key=K writer=W seq=S size=N;" then bytes
// derived from those numbers), so a wrong answer says what it was.
//
// Network: a TestNetwork (netns_util.h): one bridge in the host joins the
// namespaces' veths and this process's UCX uses only the bridge; each node's
// UCX uses only its veth. The bytes still cross each node's own veth.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "tests/netns_util.h"
#include "tests/ucx_client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::NetNamespace;
using testing::TestNetwork;
using testing::ReadFile;
using testing::WaitForText;

constexpr int kStartMs = 30'000;
constexpr uint32_t kKeys = 1'000;
constexpr uint32_t kClients = 8;
constexpr int kOpsPerClient = 10'000;
constexpr int kNodes = 3;
constexpr int kVictim = 1;  // the node that is restarted
constexpr uint32_t kPreloadWriter = kClients;  // writer number of the initial values
constexpr uint32_t kMinValue = 256;
constexpr uint32_t kMaxValue = 64 << 10;
constexpr int64_t kRpcTimeoutMs = 3'000;
constexpr int64_t kTransferTimeoutMs = 3'000;
constexpr uint32_t kMaxReplicas = 2;
// Longer than this, a call counts as hung: a Put is two master RPCs
// (PutStart, then PutEnd or PutRevoke) and one transfer, a Get one RPC and
// at most one read per replica; plus 5 s of slack for a loaded machine. A
// hang check, not a performance threshold.
constexpr int64_t kHangBoundMs = 2 * kRpcTimeoutMs + kMaxReplicas * kTransferTimeoutMs + 5'000;
constexpr size_t kViolationsKept = 20;
// The workload reaching a given number of calls takes far less than this;
// past it, it is stuck.
constexpr int64_t kProgressMs = 300'000;

// --- values ------------------------------------------------------------------

struct ValueId {
  uint32_t key = 0, writer = 0, seq = 0, size = 0;
  bool operator==(const ValueId&) const = default;
};

std::string KeyName(uint32_t key) { return "model-" + std::to_string(key); }

std::string Describe(const ValueId& id) {
  return "{key " + std::to_string(id.key) + " writer " + std::to_string(id.writer) + " seq " +
         std::to_string(id.seq) + " size " + std::to_string(id.size) + "}";
}

std::string Header(const ValueId& id) {
  return "key=" + std::to_string(id.key) + " writer=" + std::to_string(id.writer) +
         " seq=" + std::to_string(id.seq) + " size=" + std::to_string(id.size) + ";";
}

// The header, then bytes of a generator seeded by the id: `id.size` bytes.
std::string MakeValue(const ValueId& id) {
  std::string value = Header(id);
  std::mt19937_64 gen((uint64_t{id.key} << 40) ^ (uint64_t{id.writer} << 32) ^ id.seq);
  while (value.size() < id.size) {
    const uint64_t word = gen();
    value.append(reinterpret_cast<const char*>(&word),
                 std::min<size_t>(sizeof(word), id.size - value.size()));
  }
  return value;
}

std::optional<ValueId> ParseHeader(const std::string& bytes) {
  ValueId id;
  int used = 0;
  if (std::sscanf(bytes.c_str(), "key=%u writer=%u seq=%u size=%u;%n", &id.key, &id.writer,
                  &id.seq, &id.size, &used) != 4 || used == 0) {
    return std::nullopt;
  }
  return id;
}

std::string Printable(const std::string& bytes) {
  std::string out;
  for (char c : bytes.substr(0, 48)) out += (c >= 32 && c < 127) ? c : '.';
  return out;
}

std::string DescribeAll(const std::vector<ValueId>& ids) {
  std::string out = "[";
  for (const ValueId& id : ids) out += (out.size() > 1 ? ", " : "") + Describe(id);
  return out + "]";
}

// "" when `bytes` is exactly one of the values `possible` for `key`; else
// what is wrong with them.
std::string CheckBytes(uint32_t key, const std::string& bytes,
                       const std::vector<ValueId>& possible) {
  const std::optional<ValueId> id = ParseHeader(bytes);
  if (!id) {
    return "unrecognised bytes (size " + std::to_string(bytes.size()) + ", starting '" +
           Printable(bytes) + "')";
  }
  const std::string expected = MakeValue(*id);
  if (bytes != expected) {
    const auto diff = std::mismatch(bytes.begin(), bytes.end(), expected.begin(), expected.end());
    return "corrupt bytes of " + Describe(*id) + " (size " + std::to_string(bytes.size()) +
           ", first difference at offset " + std::to_string(diff.first - bytes.begin()) + ")";
  }
  if (id->key != key) return "the value of another key: " + Describe(*id);
  if (std::find(possible.begin(), possible.end(), *id) == possible.end()) {
    return "a value the model does not hold: " + Describe(*id) + ", possible " +
           DescribeAll(possible);
  }
  return "";
}

// --- the model and the tally ---------------------------------------------------

struct KeyModel {
  std::mutex mu;                  // held across each client call on the key
  std::vector<ValueId> possible;  // values that may be current (guarded by mu)
};

enum OpKind { kGet, kPut, kRemove, kOpKinds };
constexpr const char* kOpNames[kOpKinds] = {"get", "put", "remove"};

struct Tally {
  std::map<std::string, uint64_t> outcomes;  // "get OK", "put OBJECT_ALREADY_EXISTS", ...
  uint64_t gets_of_held = 0;     // Gets of a key the model held a value for
  uint64_t gets_of_held_ok = 0;  // ... that returned bytes
  int64_t max_ms[kOpKinds] = {};
  uint64_t violation_count = 0;
  std::vector<std::string> violations;  // the first kViolationsKept

  void Count(OpKind op, ErrorCode code) {
    ++outcomes[std::string(kOpNames[op]) + " " + std::string(ErrorCodeName(code))];
  }
  void Violation(std::string what) {
    if (violations.size() < kViolationsKept) violations.push_back(std::move(what));
    ++violation_count;
  }
  void Merge(const Tally& other) {
    for (const auto& [name, n] : other.outcomes) outcomes[name] += n;
    gets_of_held += other.gets_of_held;
    gets_of_held_ok += other.gets_of_held_ok;
    for (int op = 0; op < kOpKinds; ++op) max_ms[op] = std::max(max_ms[op], other.max_ms[op]);
    violation_count += other.violation_count;
    for (const std::string& v : other.violations) {
      if (violations.size() < kViolationsKept) violations.push_back(v);
    }
  }
};

// One client's share of the workload; its calls keep the model up to date.
class Worker {
 public:
  Worker(Client* client, uint32_t writer, std::vector<KeyModel>* model)
      : client_(client), writer_(writer), model_(model), rng_(writer + 1) {}

  void Run(int ops, std::atomic<uint64_t>* done) {
    for (int i = 0; i < ops; ++i) {
      const uint32_t key = static_cast<uint32_t>(rng_() % kKeys);
      const uint64_t dice = rng_() % 100;
      std::lock_guard<std::mutex> lock((*model_)[key].mu);
      if (dice < 40) {
        Get(key);
      } else if (dice < 80) {
        Put(key, RandomOptions());
      } else {
        Remove(key, /*force=*/rng_() % 2 == 0);
      }
      done->fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Precondition for the three: the key's mutex is held.
  void Get(uint32_t key) {
    KeyModel& m = (*model_)[key];
    const bool held = !m.possible.empty();
    Result<std::string> got = Timed(kGet, [&] { return client_->Get("", KeyName(key)); });
    tally_.Count(kGet, got.error());
    tally_.gets_of_held += held;
    tally_.gets_of_held_ok += held && got.ok();
    if (got.error() == ErrorCode::OBJECT_NOT_FOUND) m.possible.clear();
    if (!got.ok()) return;
    const std::string wrong = CheckBytes(key, *got, m.possible);
    if (!wrong.empty()) {
      tally_.Violation("writer " + std::to_string(writer_) + " Get(" + KeyName(key) +
                       ") returned " + wrong);
      return;
    }
    m.possible = {*ParseHeader(*got)};
  }

  ErrorCode Put(uint32_t key, const PutOptions& options) {
    KeyModel& m = (*model_)[key];
    const ValueId id{key, writer_, seq_++,
                     kMinValue + static_cast<uint32_t>(rng_() % (kMaxValue - kMinValue + 1))};
    const std::string value = MakeValue(id);
    const ErrorCode rc =
        Timed(kPut, [&] { return client_->Put("", KeyName(key), value, options); });
    tally_.Count(kPut, rc);
    if (rc == ErrorCode::OK) {
      m.possible = {id};
    } else if (rc != ErrorCode::OBJECT_ALREADY_EXISTS) {
      m.possible.push_back(id);
    }
    return rc;
  }

  void Remove(uint32_t key, bool force) {
    KeyModel& m = (*model_)[key];
    const ErrorCode rc = Timed(kRemove, [&] { return client_->Remove("", KeyName(key), force); });
    tally_.Count(kRemove, rc);
    if (rc == ErrorCode::OK || rc == ErrorCode::OBJECT_NOT_FOUND) m.possible.clear();
  }

  const Tally& tally() const { return tally_; }

 private:
  // One or two replicas, with or without a stored checksum.
  PutOptions RandomOptions() {
    PutOptions options;
    options.config.replica_num = 1 + static_cast<uint32_t>(rng_() % kMaxReplicas);
    options.compute_checksum = rng_() % 2 == 0;
    return options;
  }

  // Calls `call`, keeping the longest time an `op` took.
  template <typename F>
  auto Timed(OpKind op, F call) -> decltype(call()) {
    const auto start = std::chrono::steady_clock::now();
    auto result = call();
    const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start).count();
    tally_.max_ms[op] = std::max(tally_.max_ms[op], ms);
    return result;
  }

  Client* client_;
  uint32_t writer_;
  std::vector<KeyModel>* model_;
  std::mt19937_64 rng_;
  uint32_t seq_ = 0;
  Tally tally_;
};

void PrintTally(const Tally& tally) {
  std::printf("outcomes:\n");
  for (const auto& [name, n] : tally.outcomes) {
    std::printf("  %-40s %8llu\n", name.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("gets of keys the model held: %llu, returned bytes: %llu\n",
              static_cast<unsigned long long>(tally.gets_of_held),
              static_cast<unsigned long long>(tally.gets_of_held_ok));
  std::printf("longest call: get %lld ms, put %lld ms, remove %lld ms (hang bound %lld ms)\n",
              static_cast<long long>(tally.max_ms[kGet]),
              static_cast<long long>(tally.max_ms[kPut]),
              static_cast<long long>(tally.max_ms[kRemove]),
              static_cast<long long>(kHangBoundMs));
}

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

  // The interface that holds `ip` in namespace `ns` ("": the host's); "" if none.
  static std::string InterfaceOf(const std::string& ns, const std::string& ip) {
    std::vector<std::string> argv = {"ip", "-o", "-4", "addr", "show", "to", ip};
    if (!ns.empty()) argv.insert(argv.begin() + 1, {"-n", ns});
    std::string out;
    if (testing::RunCommand(argv, &out) != 0) return "";
    char name[64] = {};
    return std::sscanf(out.c_str(), "%*d: %63s", name) == 1 ? name : "";
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
    const std::string device = InterfaceOf(ns.name(), ns.ip());
    ASSERT_FALSE(device.empty());
    nodes_[node] = std::make_unique<ChildProcess>(
        NetNamespace::Launcher(),
        ns.Wrap("env",
                {"UCX_NET_DEVICES=" + device, SHELFMARK_NODE_BIN,
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

  // Waits until `done` reaches `target` (true), or for kProgressMs (false).
  static bool WaitForProgress(const std::atomic<uint64_t>& done, uint64_t target) {
    return testing::WaitFor([&] { return done.load() >= target; }, kProgressMs);
  }

  // While the workload runs: SIGKILL the victim and start it again, later
  // SIGTERM it (a clean exit) and start it again. Prints when.
  void RestartVictimTwice(const std::atomic<uint64_t>& done, uint64_t total) {
    ASSERT_TRUE(WaitForProgress(done, total / 5)) << "the workload stalled at " << done.load();
    std::printf("SIGKILL %s after %llu ops\n", SegmentName(kVictim).c_str(),
                static_cast<unsigned long long>(done.load()));
    nodes_[kVictim]->Signal(SIGKILL);
    EXPECT_EQ(nodes_[kVictim]->Wait(10'000), 128 + SIGKILL);
    ASSERT_NO_FATAL_FAILURE(StartNode(kVictim));
    std::printf("  back after %llu ops\n", static_cast<unsigned long long>(done.load()));
    ASSERT_TRUE(WaitForProgress(done, total / 2)) << "the workload stalled at " << done.load();
    std::printf("SIGTERM %s after %llu ops\n", SegmentName(kVictim).c_str(),
                static_cast<unsigned long long>(done.load()));
    nodes_[kVictim]->Signal(SIGTERM);
    EXPECT_EQ(nodes_[kVictim]->Wait(20'000), 0);
    ASSERT_NO_FATAL_FAILURE(StartNode(kVictim));
    std::printf("  back after %llu ops\n", static_cast<unsigned long long>(done.load()));
  }

  // New values put on the restarted node (preferred segment; its endpoint
  // checked with Locate) read back intact.
  void ExpectVictimServes(Client& client) {
    constexpr uint32_t kFresh = 20;
    std::vector<KeyModel> model(kKeys + kFresh);
    Worker worker(&client, kPreloadWriter + 1, &model);
    PutOptions on_victim;
    on_victim.config.preferred_segments = {SegmentName(kVictim)};
    for (uint32_t key = kKeys; key < kKeys + kFresh; ++key) {
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
  for (uint32_t c = 0; c < kClients; ++c) {
    clients.push_back(MakeClient());
    ASSERT_NE(clients.back(), nullptr);
  }
  std::vector<KeyModel> model(kKeys);
  // Every key starts with a value, so reads of held keys dominate from the start.
  Worker preload(clients[0].get(), kPreloadWriter, &model);
  for (uint32_t key = 0; key < kKeys; ++key) {
    std::lock_guard<std::mutex> lock(model[key].mu);
    const ErrorCode rc = preload.Put(key, PutOptions{});
    ASSERT_EQ(rc, ErrorCode::OK) << KeyName(key) << ": " << ErrorCodeName(rc);
  }

  const auto veth_before = VethBytes();
  const auto start = std::chrono::steady_clock::now();
  std::atomic<uint64_t> done{0};
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < kClients; ++c) {
    workers.push_back(std::make_unique<Worker>(clients[c].get(), c, &model));
    threads.emplace_back([&, c] { workers[c]->Run(kOpsPerClient, &done); });
  }
  RestartVictimTwice(done, uint64_t{kClients} * kOpsPerClient);
  for (std::thread& t : threads) t.join();
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
  Worker final_reader(clients[0].get(), kPreloadWriter, &model);
  for (uint32_t key = 0; key < kKeys; ++key) {
    std::lock_guard<std::mutex> lock(model[key].mu);
    final_reader.Get(key);
  }

  Tally tally;
  for (const auto& w : workers) tally.Merge(w->tally());
  std::printf("%u clients x %d ops on %u keys in %.1f s\n", kClients, kOpsPerClient, kKeys,
              seconds);
  PrintTally(tally);
  std::printf("final read of every key:\n");
  PrintTally(final_reader.tally());
  // Every replica left is on a live node: a read answers bytes or no object.
  for (const auto& [outcome, n] : final_reader.tally().outcomes) {
    EXPECT_TRUE(outcome == "get OK" || outcome == "get OBJECT_NOT_FOUND")
        << "final read: " << n << " x " << outcome;
  }
  tally.Merge(final_reader.tally());

  EXPECT_EQ(tally.violation_count, 0u) << [&] {
    std::string all;
    for (const std::string& v : tally.violations) all += "\n  " + v;
    return all;
  }();
  for (int op = 0; op < kOpKinds; ++op) {
    EXPECT_LT(tally.max_ms[op], kHangBoundMs) << kOpNames[op] << " hung";
  }
  EXPECT_GT(tally.gets_of_held_ok * 2, tally.gets_of_held)
      << "fewer than half the reads of held keys returned bytes";
  ExpectVictimServes(*clients[0]);
}

}  // namespace
}  // namespace shelfmark
