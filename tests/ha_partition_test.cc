// Master HA under network and etcd faults: real shelfmark-master processes
// with --enable_ha on a real etcd (testing/etcd_process.h), clients putting
// continuously while the fault happens, and what every acknowledged put
// became afterwards.
//
//  - The leader partitioned. Three masters, each in its own network
//    namespace (tests/netns_util.h TestNetwork: the namespaces' veths joined
//    by one bridge in the host, on-link routes between the namespaces),
//    etcd in the host on the bridge's address. Two clients inside the
//    leader's namespace put to it directly over the namespace's loopback
//    (so the partition does not cut them off), logging every put
//    (`shelfmark-perf failover --put_log`): one waits long for answers, one
//    gives up soon and asks again; a client in the host puts through
//    etcd://. The host end of the leader's veth goes down: the old leader
//    can reach neither etcd nor its standbys. Contracts (docs/ha.md,
//    "Fencing" and "Acknowledging mutations"): (a) the old leader stops
//    acknowledging (its clients get NOT_LEADER, also for the put pending on
//    a standby's ack when the link went down) and its last acknowledgement
//    is earlier than the new leader's first, each as its client received
//    it; (b) every put either leader acknowledged reads back from the new
//    leader (nothing acknowledged exists only on the partitioned master),
//    checked during the partition and after it; (c) once the link is back,
//    the old leader rejoins as a synced standby counted by the new leader,
//    and one master leads.
//  - etcd SIGKILLed and restarted, then a standby SIGKILLed and restarted,
//    all while a client puts through etcd:// (on loopback: no namespaces
//    needed). Without etcd the leader is fenced: it serves reads of
//    acknowledged keys and refuses mutations (NOT_LEADER), and no put
//    started after that is acknowledged until etcd is back; then puts are
//    acknowledged again. A restarted standby copies the leader's directory
//    again (synced, counted in the leader's standbys in sync) while puts go
//    on. Every acknowledged put reads back at the end.
//
// Times compared across processes are CLOCK_REALTIME of this one machine
// (the put log's start_ns/end_ns and RealtimeNs() here): only their order is
// asserted, never a duration. Every wait is WaitFor with a deadline. The
// partition case needs root and iproute2 (skipped otherwise, with the
// reason); it adds devices to the host, so ctest runs this file alone
// (RUN_SERIAL).
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/host_port.h"
#include "directory/directory_test_util.h"
#include "rpc/master_client.h"
#include "service/http_client.h"
#include "tests/netns_util.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::NetNamespace;
using testing::ReadFile;
using testing::TestNetwork;

constexpr int kDeadlineMs = 30'000;
constexpr char kCluster[] = "ha_partition";
// Inside a namespace of its own a master has every port to itself.
constexpr uint16_t kNsRpcPort = 50051;
constexpr uint16_t kNsHttpPort = 9100;
// Namespace numbers (netns_util: 10.<pid-based>.<index>.0/24), away from the
// cluster tests' numbers.
constexpr int kNsIndex[] = {61, 62, 63};
// Sizes of the puts: shelfmark-perf failover's, the host loop's.
constexpr uint64_t kPerfPutSize = 64;
constexpr uint64_t kLoopPutSize = 4096;

int64_t RealtimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One put (PutStart then PutEnd) as its client saw it.
struct PutRecord {
  std::string key;
  std::string result;  // ErrorCodeName of the first call that failed, else "OK"
  int64_t start_ns = 0;  // CLOCK_REALTIME before PutStart was sent
  int64_t end_ns = 0;    // CLOCK_REALTIME once PutEnd (or the failed call) returned
  std::string master;    // the host loop's: the address the put went to
  bool acked() const { return result == "OK"; }
};

// The value of `"field":` in a put log line: the text up to the next `,"`
// or `}`, quotes removed.
std::string Field(const std::string& line, const std::string& field) {
  const std::string tag = "\"" + field + "\":";
  const size_t at = line.find(tag);
  if (at == std::string::npos) return "";
  size_t from = at + tag.size();
  size_t to = line.find_first_of(",}", from);
  if (to == std::string::npos) return "";
  std::string value = line.substr(from, to - from);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    value = value.substr(1, value.size() - 2);
  }
  return value;
}

// The complete lines of a `shelfmark-perf failover --put_log` file (the one
// being written may still lack its newline).
std::vector<PutRecord> ReadPutLog(const std::string& path) {
  const std::string text = ReadFile(path);
  std::vector<PutRecord> out;
  size_t from = 0;
  for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string line = text.substr(from, nl - from);
    PutRecord r;
    r.key = Field(line, "key");
    r.result = Field(line, "result");
    const std::string start = Field(line, "start_ns");
    const std::string end = Field(line, "end_ns");
    if (r.key.empty() || r.result.empty() || start.empty() || end.empty()) continue;
    r.start_ns = std::stoll(start);
    r.end_ns = std::stoll(end);
    out.push_back(r);
  }
  return out;
}

size_t CountAcked(const std::vector<PutRecord>& records, int64_t started_after_ns = 0) {
  return static_cast<size_t>(std::count_if(records.begin(), records.end(), [&](const PutRecord& r) {
    return r.acked() && r.start_ns > started_after_ns;
  }));
}

// A thread putting one object after another through a client that follows
// the leader (etcd://), on a bookkeeping segment of its own (no bytes behind
// it) that it mounts first, recording every put.
class PutLoop {
 public:
  PutLoop(const std::string& etcd_endpoint, uint64_t segment_base)
      : etcd_(etcd_endpoint), base_(segment_base), thread_([this] { Run(); }) {}
  ~PutLoop() { Stop(); }
  PutLoop(const PutLoop&) = delete;
  PutLoop& operator=(const PutLoop&) = delete;

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<PutRecord> Records() const {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }
  // Acknowledged puts that started after `since_ns`.
  size_t AckedAfter(int64_t since_ns) const { return CountAcked(Records(), since_ns); }
  // What the segment's mount answered ("" while it has not).
  std::string mount_result() const {
    std::lock_guard<std::mutex> lock(mu_);
    return mount_result_;
  }

 private:
  void Run() {
    MasterClientOptions options;
    options.address = "etcd://" + etcd_;
    options.cluster_id = kCluster;
    // Short enough that a put stuck on an unreachable leader gives up (and
    // the next one looks the leader up again) well within a test's wait.
    options.call_timeout_ms = 1000;
    MasterClient client(options);
    const ErrorCode mounted = client.MountSegment(
        MakeTestSegment("loop-" + std::to_string(base_), base_, uint64_t{1} << 30, "127.0.0.1:9"));
    {
      std::lock_guard<std::mutex> lock(mu_);
      mount_result_ = ErrorCodeName(mounted);
    }
    if (mounted != ErrorCode::OK) return;
    for (uint64_t i = 0; !stop_; ++i) {
      PutRecord r;
      r.key = "loop-" + std::to_string(base_) + "-" + std::to_string(i);
      r.start_ns = RealtimeNs();
      auto started = client.PutStart("", r.key, kLoopPutSize, {});
      const ErrorCode rc = started.ok() ? client.PutEnd("", r.key) : started.error();
      r.end_ns = RealtimeNs();
      r.result = ErrorCodeName(rc);
      r.master = client.master_address();
      std::lock_guard<std::mutex> lock(mu_);
      records_.push_back(std::move(r));
    }
  }

  const std::string etcd_;
  const uint64_t base_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<PutRecord> records_;  // guarded by mu_
  std::string mount_result_;        // guarded by mu_
  std::thread thread_;              // last: starts once the rest is made
};

// One shelfmark-master process: in a namespace (reached at the namespace's
// address) or on loopback.
struct HaMaster {
  std::string name;
  NetNamespace* ns = nullptr;  // null: loopback
  std::string ip;              // where it listens and is reached
  uint16_t rpc = 0;
  uint16_t http = 0;
  std::string log;
  std::unique_ptr<ChildProcess> process;

  std::string address() const { return ip + ":" + std::to_string(rpc); }
  // A sample of its /metrics; -1 when it cannot be read (down, cut off).
  double Metric(const std::string& series) const {
    auto reply = HttpGet(HostPort{ip, http}, "/metrics", 1000);
    if (!reply.ok() || reply->status != 200) return -1;
    return PrometheusValue(reply->body, series).value_or(-1);
  }
  bool Healthy() const {
    auto reply = HttpGet(HostPort{ip, http}, "/health", 1000);
    return reply.ok() && reply->status == 200;
  }
  double Role() const { return Metric("shelfmark_master_ha_role"); }
  bool Synced() const { return Metric("shelfmark_master_ha_standby_synced") == 1; }
  double InSync() const { return Metric("shelfmark_master_ha_replication_standbys_in_sync"); }
  // A client of this master only (no leader following).
  std::unique_ptr<MasterClient> Client() const {
    MasterClientOptions options;
    options.address = address();
    options.call_timeout_ms = 5000;
    return std::make_unique<MasterClient>(options);
  }
};

// A client that follows the leader through etcd.
std::unique_ptr<MasterClient> LeaderClient(const testing::EtcdProcess& etcd) {
  MasterClientOptions options;
  options.address = "etcd://" + etcd.endpoint();
  options.cluster_id = kCluster;
  options.call_timeout_ms = 10'000;
  return std::make_unique<MasterClient>(options);
}

class HaPartitionTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".log").c_str());
    for (HaMaster& m : masters_) m.process.reset();
    etcd_.reset();
    network_.reset();  // namespaces and bridge, once nothing runs in them
  }

  // Three namespaces on one bridge, reaching the host and each other.
  void MakeNetwork() {
    std::string error;
    network_ = TestNetwork::Create(&error);
    ASSERT_NE(network_, nullptr) << error;
    for (int index : kNsIndex) {
      NetNamespace* ns = network_->Namespace(index, &error);
      ASSERT_NE(ns, nullptr) << error;
      namespaces_.push_back(ns);
    }
    // The masters reach each other too (replication). Each namespace has a
    // subnet of its own and the host does not forward (ip_forward is the
    // machine's, left alone), but all veths hang on one bridge: a route
    // on-link to each other namespace's address lets them talk over it
    // directly (ARP on the bridge).
    for (NetNamespace* from : namespaces_) {
      for (NetNamespace* to : namespaces_) {
        if (from == to) continue;
        ASSERT_EQ(testing::RunOk({"ip", "-n", from->name(), "route", "add", to->ip() + "/32", "dev",
                         from->device()}),
                  "");
      }
    }
  }

  void StartEtcd(const std::string& client_host) {
    etcd_ = std::make_unique<testing::EtcdProcess>(client_host);
    ASSERT_TRUE(etcd_->Start()) << etcd_->StartFailure();
  }

  // Adds a master (not started yet): in `ns`, or on loopback at free ports.
  HaMaster& AddMaster(const std::string& name, NetNamespace* ns) {
    HaMaster& m = masters_.emplace_back();
    m.name = name;
    m.ns = ns;
    m.ip = ns != nullptr ? ns->ip() : "127.0.0.1";
    m.rpc = ns != nullptr ? kNsRpcPort : testing::FreePort();
    m.http = ns != nullptr ? kNsHttpPort : testing::FreePort();
    while (ns == nullptr && m.http == m.rpc) m.http = testing::FreePort();
    return m;
  }

  // Starts (or starts again, same ports and published address) `m`.
  void Launch(HaMaster& m) {
    m.log = dir_.Join(m.name + "-" + std::to_string(++launches_) + ".log");
    const std::vector<std::string> flags = {
        "--enable_ha",
        "--etcd_endpoints=" + etcd_->endpoint(),
        "--cluster_id=" + std::string(kCluster),
        "--rpc_address=" + std::string(m.ns != nullptr ? "0.0.0.0" : "127.0.0.1"),
        "--rpc_port=" + std::to_string(m.rpc),
        "--rpc_advertise_address=" + m.address(),
        "--metrics_port=" + std::to_string(m.http),
        // The clients mount without pinging (the perf client pings its
        // master only): their segments must outlive the test.
        "--client_ttl=3600",
    };
    m.process = m.ns != nullptr
                    ? std::make_unique<ChildProcess>(NetNamespace::Launcher(),
                                                     m.ns->Wrap(SHELFMARK_MASTER_BIN, flags), m.log)
                    : std::make_unique<ChildProcess>(SHELFMARK_MASTER_BIN, flags, m.log);
  }

  bool WaitHealthy(const HaMaster& m) {
    return testing::WaitFor([&] { return m.Healthy(); }, kDeadlineMs);
  }

  // The index of the one master (of those listed) whose role is leader
  // while every other listed one is a standby; -1 otherwise.
  int OnlyLeader(const std::vector<int>& which) const {
    int leader = -1;
    for (int i : which) {
      const double role = masters_[static_cast<size_t>(i)].Role();
      if (role == 1) {
        if (leader >= 0) return -1;
        leader = i;
      } else if (role != 0) {
        return -1;  // unreachable
      }
    }
    return leader;
  }
  // Each master's role, synced flag and standbys in sync (-1: unreadable),
  // for failure messages.
  std::string Describe() const {
    std::string out;
    for (const HaMaster& m : masters_) {
      char line[160];
      std::snprintf(line, sizeof(line), "%s %s: role %g synced %g in sync %g\n", m.name.c_str(),
                    m.address().c_str(), m.Role(),
                    m.Metric("shelfmark_master_ha_standby_synced"), m.InSync());
      out += line;
    }
    return out;
  }
  std::vector<int> All() const {
    std::vector<int> all;
    for (size_t i = 0; i < masters_.size(); ++i) all.push_back(static_cast<int>(i));
    return all;
  }

  // Waits until one master leads and every other holds a synced copy that
  // the leader counts; the leader's index, -1 when that did not happen.
  int WaitLeaderAndSyncedStandbys() {
    int leader = -1;
    const bool ok = testing::WaitFor(
        [&] {
          leader = OnlyLeader(All());
          if (leader < 0) return false;
          for (size_t i = 0; i < masters_.size(); ++i) {
            if (static_cast<int>(i) != leader && !masters_[i].Synced()) return false;
          }
          return masters_[static_cast<size_t>(leader)].InSync() ==
                 static_cast<double>(masters_.size() - 1);
        },
        kDeadlineMs);
    return ok ? leader : -1;
  }

  // Every key reads back through `client` (the leader): GetReplicaList OK
  // with `size`; the failures, at most 5 named, "" when none.
  static std::string ReadBack(MasterClient& client, const std::vector<std::string>& keys,
                              uint64_t size) {
    std::string failures;
    size_t failed = 0;
    for (size_t at = 0; at < keys.size(); at += 1000) {
      const std::vector<std::string> chunk(keys.begin() + static_cast<ptrdiff_t>(at),
                                           keys.begin() + static_cast<ptrdiff_t>(
                                                              std::min(keys.size(), at + 1000)));
      auto got = client.BatchGetReplicaList("", chunk);
      if (!got.ok()) return "BatchGetReplicaList: " + std::string(ErrorCodeName(got.error()));
      for (size_t i = 0; i < chunk.size(); ++i) {
        const auto& r = (*got)[i];
        if (r.ok() && r->size == size) continue;
        if (++failed <= 5) {
          failures += chunk[i] + ": " +
                      (r.ok() ? "size " + std::to_string(r->size)
                              : std::string(ErrorCodeName(r.error()))) + "\n";
        }
      }
    }
    return failed == 0 ? "" : std::to_string(failed) + " of " + std::to_string(keys.size()) +
                                  " acknowledged keys do not read back:\n" + failures;
  }

  static std::vector<std::string> AckedKeys(const std::vector<PutRecord>& records) {
    std::vector<std::string> keys;
    for (const PutRecord& r : records) {
      if (r.acked()) keys.push_back(r.key);
    }
    return keys;
  }

  testing::TempDir dir_{"ha_partition"};
  std::unique_ptr<TestNetwork> network_;
  std::vector<NetNamespace*> namespaces_;
  std::unique_ptr<testing::EtcdProcess> etcd_;
  std::vector<HaMaster> masters_;
  int launches_ = 0;
};

TEST_F(HaPartitionTest, PartitionedLeaderStopsAcknowledgingBeforeTheNewLeaderAndRejoins) {
  const std::string why = NetNamespace::Unavailable();
  if (!why.empty()) GTEST_SKIP() << why;
  MakeNetwork();
  ASSERT_EQ(namespaces_.size(), 3u);
  StartEtcd(namespaces_[0]->host_ip());
  masters_.reserve(3);
  for (size_t i = 0; i < 3; ++i) Launch(AddMaster("m" + std::to_string(i), namespaces_[i]));
  for (const HaMaster& m : masters_) ASSERT_TRUE(WaitHealthy(m)) << m.name;
  const int old_index = WaitLeaderAndSyncedStandbys();
  ASSERT_GE(old_index, 0) << "one leader, two synced standbys:\n" << Describe();
  HaMaster& old_leader = masters_[static_cast<size_t>(old_index)];
  std::vector<int> others;
  for (int i : All()) {
    if (i != old_index) others.push_back(i);
  }

  // The host's client, following the leader.
  PutLoop loop(etcd_->endpoint(), uint64_t{1} << 40);
  ASSERT_TRUE(testing::WaitFor([&] { return loop.AckedAfter(0) >= 50; }, kDeadlineMs))
      << "the host's client puts (mount: " << loop.mount_result() << ")";
  // Two clients beside the old leader, on its namespace's loopback (the
  // partition leaves them connected), each logging every put: `waiting`
  // waits long for an answer (it sees what the old leader answers a put
  // pending on a standby's ack when the partition starts), `probing` gives
  // up soon and tries again (it keeps asking the old leader all through
  // the partition). A refused put is retried after a pause (a fenced
  // leader refuses at once).
  struct InNamespaceClient {
    std::string put_log;
    std::string log;
    std::unique_ptr<ChildProcess> process;
    std::vector<PutRecord> Puts() const { return ReadPutLog(put_log); }
  };
  InNamespaceClient clients[2];
  const int timeouts_ms[2] = {10'000, 300};
  for (int i = 0; i < 2; ++i) {
    const std::string name = i == 0 ? "waiting" : "probing";
    clients[i].put_log = dir_.Join(name + "-puts.jsonl");
    clients[i].log = dir_.Join(name + ".log");
    clients[i].process = std::make_unique<ChildProcess>(
        NetNamespace::Launcher(),
        old_leader.ns->Wrap(SHELFMARK_PERF_BIN,
                            {"failover", "--master=127.0.0.1:" + std::to_string(kNsRpcPort),
                             "--seconds=3600", "--gap_ms=3600000",
                             "--timeout_ms=" + std::to_string(timeouts_ms[i]),
                             "--retry_pause_ms=20", "--put_log=" + clients[i].put_log}),
        clients[i].log);
  }
  InNamespaceClient& waiting = clients[0];
  InNamespaceClient& probing = clients[1];
  for (const InNamespaceClient& c : clients) {
    ASSERT_TRUE(testing::WaitFor([&] { return CountAcked(c.Puts()) >= 50; }, kDeadlineMs))
        << c.put_log << ": the old leader's client puts: " << ReadFile(c.log);
  }

  // The partition: the host end of the old leader's veth goes down. A put
  // that started once the command returned cannot reach the old leader.
  ASSERT_EQ(testing::RunOk({"ip", "link", "set", old_leader.ns->host_device(), "down"}), "");
  const int64_t partitioned_ns = RealtimeNs();

  // The new leader: the host's client gets acknowledgements again, from
  // another master (the old one is out of its reach).
  int new_index = -1;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return loop.AckedAfter(partitioned_ns) >= 20 && (new_index = OnlyLeader(others)) >= 0;
      },
      kDeadlineMs))
      << "another master leads and acknowledges the host's puts";
  HaMaster& new_leader = masters_[static_cast<size_t>(new_index)];
  PutRecord first_new;  // the new leader's first acknowledgement the host saw
  for (const PutRecord& r : loop.Records()) {
    if (r.acked() && r.start_ns > partitioned_ns &&
        (first_new.end_ns == 0 || r.end_ns < first_new.end_ns)) {
      first_new = r;
    }
  }
  EXPECT_EQ(first_new.master, new_leader.address());

  // (a) The old leader refuses: `probing` gets NOT_LEADER for a put it
  // started after the new leader's first acknowledgement (fenced);
  // `waiting`, whose puts wait long, gets NOT_LEADER for the first put
  // after the link went down that was not acknowledged (one a standby had
  // acknowledged just before may still be; later ones (a) and (b) below
  // hold to account): the put pending on a standby that no longer answers
  // is refused once the fence closes, not left to time out.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (const PutRecord& r : probing.Puts()) {
          if (r.start_ns > first_new.end_ns && r.result == "NOT_LEADER") return true;
        }
        return false;
      },
      kDeadlineMs))
      << "the partitioned leader answers NOT_LEADER";
  std::string pending;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (const PutRecord& r : waiting.Puts()) {
          if (r.end_ns > partitioned_ns && !r.acked()) {
            pending = r.key + " " + r.result;
            return true;
          }
        }
        return false;
      },
      kDeadlineMs))
      << "the partitioned leader answers the put pending at the partition";
  EXPECT_NE(pending.find(" NOT_LEADER"), std::string::npos) << pending;

  // (b), while the partition lasts: what the old leader acknowledged so far
  // is on the new leader (checked again with the rest at the end).
  auto reader = LeaderClient(*etcd_);
  for (const InNamespaceClient& c : clients) {
    EXPECT_EQ(ReadBack(*reader, AckedKeys(c.Puts()), kPerfPutSize), "") << c.put_log;
  }
  EXPECT_EQ(reader->master_address(), new_leader.address());

  // Heal.
  const int64_t healed_ns = RealtimeNs();
  ASSERT_EQ(testing::RunOk({"ip", "link", "set", old_leader.ns->host_device(), "up"}), "");

  // (c) The old leader rejoins as a synced standby, counted by the new
  // leader; one leader; the host's puts go on.
  EXPECT_TRUE(testing::WaitFor([&] { return old_leader.Role() == 0 && old_leader.Synced(); },
                               kDeadlineMs))
      << "the old leader becomes a synced standby (role " << old_leader.Role() << ")";
  EXPECT_TRUE(testing::WaitFor([&] { return new_leader.InSync() == 2; }, kDeadlineMs))
      << "the new leader counts both standbys in sync (" << new_leader.InSync() << ")";
  EXPECT_EQ(OnlyLeader(All()), new_index) << "exactly one leader, the new one";
  EXPECT_TRUE(testing::WaitFor([&] { return loop.AckedAfter(healed_ns) >= 20; }, kDeadlineMs));
  EXPECT_GE(old_leader.Metric("shelfmark_master_ha_fenced_writes_total"), 1)
      << "the old leader refused mutations as a fenced leader";
  EXPECT_GE(old_leader.Metric("shelfmark_master_ha_leaderships_lost_total"), 1);

  for (const InNamespaceClient& c : clients) {
    c.process->Signal(SIGKILL);
    EXPECT_EQ(c.process->Wait(kDeadlineMs), 128 + SIGKILL);
  }
  loop.Stop();

  // (a) Every acknowledgement of the old leader came before the new
  // leader's first (each as its client received it). The host's client
  // reached the old leader only before the partition; its acknowledgements
  // from there are held to the same order.
  const std::vector<PutRecord> host_puts = loop.Records();
  for (const PutRecord& r : host_puts) {
    if (r.acked() && r.master == old_leader.address()) {
      EXPECT_LT(r.end_ns, first_new.end_ns) << r.key << " acknowledged by the old leader";
    }
  }
  // The timeline, for the log (ms from the link going down).
  auto ms = [&](int64_t ns) { return static_cast<double>(ns - partitioned_ns) / 1e6; };
  std::vector<std::vector<PutRecord>> old_puts;
  for (const InNamespaceClient& c : clients) {
    old_puts.push_back(c.Puts());
    int64_t last_ack = 0;
    int64_t first_refusal = 0;  // the first NOT_LEADER once the link was down
    std::map<std::string, size_t> results;
    for (const PutRecord& r : old_puts.back()) {
      ++results[r.result];
      if (r.acked()) last_ack = std::max(last_ack, r.end_ns);
      if (r.result == "NOT_LEADER" && r.end_ns > partitioned_ns && first_refusal == 0) {
        first_refusal = r.end_ns;
      }
    }
    ASSERT_GT(last_ack, 0);
    EXPECT_LT(last_ack, first_new.end_ns)
        << c.put_log << ": the old leader acknowledged a put " << (last_ack - first_new.end_ns)
        << " ns after the new leader's first acknowledgement";
    std::string counts;
    for (const auto& [result, n] : results) counts += " " + result + " " + std::to_string(n);
    std::printf("%s:%s; last ack %.1f ms, first NOT_LEADER %.1f ms\n",
                c.put_log.substr(c.put_log.rfind('/') + 1).c_str(), counts.c_str(), ms(last_ack),
                ms(first_refusal));
  }
  std::printf("new leader's first ack %.1f ms; healed %.1f ms; host acks %zu\n",
              ms(first_new.end_ns), ms(healed_ns), CountAcked(host_puts));

  // (b) Everything either leader acknowledged reads back from the new one.
  for (const std::vector<PutRecord>& puts : old_puts) {
    EXPECT_EQ(ReadBack(*reader, AckedKeys(puts), kPerfPutSize), "");
  }
  EXPECT_EQ(ReadBack(*reader, AckedKeys(host_puts), kLoopPutSize), "");
  EXPECT_EQ(reader->master_address(), new_leader.address());
}

TEST_F(HaPartitionTest, EtcdAndAStandbyKilledAndRestartedWhilePutsGoOn) {
  StartEtcd("");
  masters_.reserve(2);
  for (const char* name : {"a", "b"}) Launch(AddMaster(name, nullptr));
  for (const HaMaster& m : masters_) ASSERT_TRUE(WaitHealthy(m)) << m.name;
  int leader_index = WaitLeaderAndSyncedStandbys();
  ASSERT_GE(leader_index, 0) << "one leader, a synced standby:\n" << Describe();
  PutLoop loop(etcd_->endpoint(), uint64_t{2} << 40);
  ASSERT_TRUE(testing::WaitFor([&] { return loop.AckedAfter(0) >= 50; }, kDeadlineMs))
      << "the client puts (mount: " << loop.mount_result() << ")";

  // etcd crashes: the leader cannot renew its lease and fences itself.
  ASSERT_TRUE(etcd_->Kill());
  const int64_t killed_etcd_ns = RealtimeNs();
  {
    HaMaster& leader = masters_[static_cast<size_t>(leader_index)];
    auto direct = leader.Client();
    // Remove of an absent key changes nothing: OBJECT_NOT_FOUND while admitted.
    ASSERT_TRUE(testing::WaitFor(
        [&] { return direct->Remove("", "absent") == ErrorCode::NOT_LEADER; }, kDeadlineMs))
        << "the leader refuses mutations once it cannot be sure of its lease";
    const int64_t fenced_ns = RealtimeNs();
    EXPECT_GE(leader.Metric("shelfmark_master_ha_fenced_writes_total"), 1);
    auto started = direct->PutStart("", "while-fenced", kLoopPutSize, {});
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.error(), ErrorCode::NOT_LEADER);
    // Reads are served: every put acknowledged so far.
    const std::vector<std::string> acked = AckedKeys(loop.Records());
    EXPECT_EQ(ReadBack(*direct, acked, kLoopPutSize), "");
    auto exists = direct->BatchExistKey("", acked);
    ASSERT_TRUE(exists.ok()) << ErrorCodeName(exists.error());
    for (size_t i = 0; i < acked.size(); ++i) {
      ASSERT_TRUE((*exists)[i].ok() && *(*exists)[i]) << acked[i];
    }

    // The client's puts fail while etcd is down (each after its call
    // timeout: no leader can be found, the fenced one refuses).
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          size_t failed = 0;
          for (const PutRecord& r : loop.Records()) {
            if (r.start_ns > fenced_ns && !r.acked()) ++failed;
          }
          return failed >= 2;
        },
        kDeadlineMs))
        << "the client keeps trying while etcd is down";

    // etcd back on its port with its data: puts are acknowledged again (by
    // whichever master leads now), and none that started while the leader
    // was fenced and etcd down.
    const int64_t restart_ns = RealtimeNs();
    ASSERT_TRUE(etcd_->Start()) << etcd_->StartFailure();
    ASSERT_TRUE(testing::WaitFor([&] { return loop.AckedAfter(restart_ns) >= 20; }, kDeadlineMs))
        << "puts are acknowledged again once etcd is back";
    size_t tried_while_fenced = 0;
    int64_t first_ack_after = 0;
    for (const PutRecord& r : loop.Records()) {
      if (r.start_ns > fenced_ns && r.start_ns < restart_ns) ++tried_while_fenced;
      if (r.acked() && r.start_ns > fenced_ns) {
        EXPECT_GT(r.end_ns, restart_ns) << r.key << " acknowledged with etcd down";
        if (first_ack_after == 0) first_ack_after = r.end_ns;
      }
    }
    // The timeline, for the log (ms from etcd's death).
    auto ms = [&](int64_t ns) { return static_cast<double>(ns - killed_etcd_ns) / 1e6; };
    const int now = OnlyLeader(All());
    std::printf("etcd killed: %s fenced by %.1f ms, etcd restarted at %.1f ms, %zu puts started "
                "meanwhile, first ack after %.1f ms, leader now %s\n",
                leader.name.c_str(), ms(fenced_ns), ms(restart_ns), tried_while_fenced,
                ms(first_ack_after),
                now >= 0 ? masters_[static_cast<size_t>(now)].name.c_str() : "none");
  }
  auto reader = LeaderClient(*etcd_);
  EXPECT_EQ(ReadBack(*reader, AckedKeys(loop.Records()), kLoopPutSize), "");

  // A standby crashes and comes back while puts go on.
  leader_index = WaitLeaderAndSyncedStandbys();
  ASSERT_GE(leader_index, 0) << "one leader, a synced standby after etcd's restart:\n"
                             << Describe();
  HaMaster& leader = masters_[static_cast<size_t>(leader_index)];
  HaMaster& standby = masters_[static_cast<size_t>(1 - leader_index)];
  standby.process->Signal(SIGKILL);
  ASSERT_EQ(standby.process->Wait(kDeadlineMs), 128 + SIGKILL);
  const int64_t killed_ns = RealtimeNs();
  EXPECT_TRUE(testing::WaitFor([&] { return leader.InSync() == 0; }, kDeadlineMs))
      << "the leader stops counting the dead standby";
  EXPECT_TRUE(testing::WaitFor([&] { return loop.AckedAfter(killed_ns) >= 20; }, kDeadlineMs))
      << "the leader acknowledges alone";
  Launch(standby);
  ASSERT_TRUE(WaitHealthy(standby));
  EXPECT_TRUE(testing::WaitFor(
      [&] { return standby.Role() == 0 && standby.Synced() && leader.InSync() == 1; },
      kDeadlineMs))
      << "the restarted standby copies the directory and the leader counts it in sync";
  const int64_t synced_ns = RealtimeNs();
  EXPECT_TRUE(testing::WaitFor([&] { return loop.AckedAfter(synced_ns) >= 20; }, kDeadlineMs))
      << "puts go on with the standby back";
  EXPECT_EQ(OnlyLeader(All()), leader_index);
  loop.Stop();
  EXPECT_EQ(ReadBack(*reader, AckedKeys(loop.Records()), kLoopPutSize), "");
}

}  // namespace
}  // namespace shelfmark
