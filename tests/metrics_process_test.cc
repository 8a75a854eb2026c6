// The real shelfmark-master (periodic snapshots on) and a real shelfmark-node
// (with an SSD store) under real puts and gets: both /metrics pages pass
// `promtool check metrics` with nothing to say, every sample belongs to a
// family with HELP and TYPE, and the families named in docs/metrics.md are
// there with their types and in their units. A page with names that break the
// conventions fails the same check, so the check can fail.
//
// promtool is Debian's prometheus package (scripts/setup.sh); CMake finds it
// and the test fails, saying so, when it was not found.
#include <stdlib.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "client/client.h"
#include "ssdstore/storage_config.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "tests/ucx_client.h"
#include "transport/transport_test_util.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

constexpr int kStartMs = 30'000;
constexpr int kWaitMs = 60'000;
constexpr int kObjects = 16;
constexpr size_t kObjectBytes = 64 * 1024;

struct Promtool {
  int status = -1;  // exit status; -1 when it did not run or died
  std::string output;
};

bool PromtoolFound() { return !std::string_view(SHELFMARK_PROMTOOL).ends_with("NOTFOUND"); }

// `promtool check metrics < page` (the page written to `path` first).
Promtool CheckMetrics(const std::string& page, const std::string& path) {
  testing::WriteFile(path, page);
  const std::string command =
      std::string("'") + SHELFMARK_PROMTOOL + "' check metrics < '" + path + "' 2>&1";
  Promtool result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

// Family name -> TYPE of a Prometheus text page, and the problems of its
// samples: a sample of a family without HELP or TYPE.
struct Families {
  std::map<std::string, std::string> type;
  std::vector<std::string> problems;
};

Families ParseFamilies(const std::string& page) {
  Families out;
  std::set<std::string> help;
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first, keyword, name, type;
    words >> first;
    if (first == "#") {
      words >> keyword >> name >> type;
      if (keyword == "HELP") help.insert(name);
      if (keyword == "TYPE") out.type[name] = type;
      continue;
    }
    if (first.empty()) continue;
    std::string family = first.substr(0, first.find('{'));
    if (out.type.count(family) == 0) {
      for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (!family.ends_with(suffix)) continue;
        std::string base = family.substr(0, family.size() - suffix.size());
        if (out.type.count(base) && out.type[base] == "histogram") family = base;
      }
    }
    if (out.type.count(family) == 0) out.problems.push_back(first + ": no TYPE");
    if (help.count(family) == 0) out.problems.push_back(first + ": no HELP");
  }
  return out;
}

// Each family of `expected` (name, TYPE) is on the page with that TYPE.
void ExpectTypes(const Families& families,
                 const std::vector<std::pair<std::string, std::string>>& expected) {
  for (const auto& [name, type] : expected) {
    auto it = families.type.find(name);
    EXPECT_EQ(it == families.type.end() ? "absent" : it->second, type) << name;
  }
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class MetricsProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(PromtoolFound())
        << "promtool was not found when CMake configured this build: install Debian's "
           "prometheus package (scripts/setup.sh) and configure again";
    ASSERT_FALSE(dir_.path().empty());
    setenv("MOONCAKE_SNAPSHOT_LOCAL_PATH", dir_.Join("snapshots").c_str(), 1);
    const std::string err = dir_.Join("master.err");
    // A short child time-out: under ASan a snapshot child can hang on an
    // allocator lock held at the fork (tests/snapshot_process_test.cc); the
    // master kills it and the next one runs.
    master_ = std::make_unique<ChildProcess>(
        SHELFMARK_MASTER_BIN,
        std::vector<std::string>{"--rpc_port=0", "--metrics_port=0", "--enable_offload",
                                 "--enable_snapshot=true", "--snapshot_interval_seconds=1",
                                 "--snapshot_child_timeout_seconds=15"},
        err);
    testing::ServicePorts ports;
    ASSERT_TRUE(testing::WaitForServicePorts(err, kStartMs, &ports)) << ReadFile(err);
    rpc_ = ports.rpc;
    master_http_ = ports.http;
    StartNode();
    client_ = testing::MakeUcxClient(Master());
    ASSERT_NE(client_, nullptr);
  }

  void TearDown() override {
    client_.reset();
    node_.reset();
    master_.reset();
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".err").c_str());
  }

  std::string Master() const { return "127.0.0.1:" + std::to_string(rpc_); }

  void StartNode() {
    const std::string err = dir_.Join("node.err");
    const std::string store = dir_.Join("node.ssd");
    std::filesystem::create_directories(store);
    auto env = [](std::string_view var, const std::string& value) {
      return std::string(var) + "=" + value;
    };
    node_ = std::make_unique<ChildProcess>(
        "/usr/bin/env",
        std::vector<std::string>{env(kEnvStoragePath, store), env(kEnvTotalSizeLimit, "64M"),
                                 SHELFMARK_NODE_BIN, "--master=" + Master(),
                                 "--segment_size=33554432", "--protocol=ucx",
                                 "--listen_ip=127.0.0.1", "--segment_name=metrics-node",
                                 "--ping_interval_ms=300"},
        err);
    ASSERT_TRUE(testing::WaitForText(err, " protocol ucx endpoint 127.0.0.1:", kStartMs))
        << ReadFile(err);
    testing::NodeReady ready;
    ASSERT_TRUE(testing::ParseNodeReady(ReadFile(err), &ready)) << ReadFile(err);
    node_http_ = ready.metrics_port;
  }

  // Puts and gets objects, waits until the node offloaded them all and a
  // snapshot succeeded, then reads them back through the node's disk: every
  // kind of metric has moved.
  void Traffic() {
    std::vector<std::string> keys;
    for (int i = 0; i < kObjects; ++i) {
      keys.push_back("metrics-" + std::to_string(i));
      const std::string value = testing::TestPattern(kObjectBytes, static_cast<char>(i));
      ASSERT_EQ(client_->Put("", keys.back(), value), ErrorCode::OK) << keys.back();
      auto got = client_->Get("", keys.back());
      ASSERT_TRUE(got.ok()) << keys.back() << ": " << ErrorCodeName(got.error());
      EXPECT_TRUE(*got == value) << keys.back();
    }
    ASSERT_TRUE(testing::WaitForMetric(
        node_http_, "shelfmark_node_offloaded_objects_total",
        [](double v) { return v >= kObjects; }, kWaitMs))
        << "the node did not offload the objects";
    ASSERT_TRUE(testing::WaitForMetric(
        master_http_, "shelfmark_master_snapshots_total{result=\"success\"}",
        [](double v) { return v >= 1; }, kWaitMs))
        << "no snapshot succeeded";
    GetOptions from_disk;
    from_disk.prefer_local_disk = true;
    for (int i = 0; i < kObjects; ++i) {
      auto got = client_->Get("", keys[i], from_disk);
      ASSERT_TRUE(got.ok()) << keys[i] << ": " << ErrorCodeName(got.error());
      EXPECT_TRUE(*got == testing::TestPattern(kObjectBytes, static_cast<char>(i))) << keys[i];
    }
  }

  std::string Page(uint16_t port) {
    std::string body;
    EXPECT_EQ(testing::HttpGet(port, "/metrics", &body), 200);
    return body;
  }

  testing::TempDir dir_{"metrics_process"};  // logs, store, snapshots, pages
  uint16_t rpc_ = 0, master_http_ = 0, node_http_ = 0;
  std::unique_ptr<ChildProcess> master_;
  std::unique_ptr<ChildProcess> node_;
  std::unique_ptr<Client> client_;
};

TEST_F(MetricsProcessTest, MasterAndNodePagesPassPromtool) {
  const double start = UnixNow();
  ASSERT_NO_FATAL_FAILURE(Traffic());
  for (auto [who, port] : {std::pair{"master", master_http_}, std::pair{"node", node_http_}}) {
    const std::string page = Page(port);
    ASSERT_FALSE(page.empty()) << who;
    Promtool check = CheckMetrics(page, dir_.Join(std::string(who) + ".metrics"));
    EXPECT_EQ(check.status, 0) << who << ": " << check.output;
    EXPECT_EQ(check.output, "") << who << "'s /metrics:\n" << page;
    Families families = ParseFamilies(page);
    EXPECT_TRUE(families.problems.empty())
        << who << ": " << ::testing::PrintToString(families.problems);
  }

  const std::string master = Page(master_http_);
  ExpectTypes(ParseFamilies(master),
              {{"process_cpu_seconds_total", "counter"},
               {"process_resident_memory_bytes", "gauge"},
               {"process_start_time_seconds", "gauge"},
               {"shelfmark_master_keys", "gauge"},
               {"shelfmark_master_segments", "gauge"},
               {"shelfmark_master_clients", "gauge"},
               {"shelfmark_master_evicted_objects_total", "counter"},
               {"shelfmark_master_rpc_requests_total", "counter"},
               {"shelfmark_master_rpc_latency_seconds", "histogram"},
               {"shelfmark_master_snapshots_total", "counter"},
               {"shelfmark_master_snapshot_duration_seconds", "histogram"},
               {"shelfmark_master_snapshot_fork_pause_seconds", "histogram"},
               {"shelfmark_master_snapshot_last_success_timestamp_seconds", "gauge"},
               {"shelfmark_master_snapshot_interval_seconds", "gauge"},
               {"shelfmark_master_restore_duration_seconds", "gauge"}});
  EXPECT_EQ(testing::MetricValue(master, "shelfmark_master_keys"), kObjects);
  EXPECT_EQ(testing::MetricValue(master, "shelfmark_master_snapshot_interval_seconds"), 1);
  // Seconds, not milliseconds or microseconds: these puts took well under a
  // second each, and the snapshot's time stamp is now-ish Unix time. (A
  // put's master call is CommitPut, or PutStart when it went in two steps.)
  auto sum_over_puts = [&](const char* field) {
    return testing::MetricValue(master, std::string("shelfmark_master_rpc_latency_seconds_") +
                                            field + "{method=\"PutStart\"}") +
           testing::MetricValue(master, std::string("shelfmark_master_rpc_latency_seconds_") +
                                            field + "{method=\"CommitPut\"}");
  };
  const double puts = sum_over_puts("count");
  EXPECT_GE(puts, kObjects);
  EXPECT_LT(sum_over_puts("sum"), puts);
  const double stamp =
      testing::MetricValue(master, "shelfmark_master_snapshot_last_success_timestamp_seconds");
  EXPECT_GE(stamp, start - 1);
  EXPECT_LE(stamp, UnixNow() + 1);
  EXPECT_GE(testing::MetricValue(master, "process_start_time_seconds"), start - 3600);

  const std::string node = Page(node_http_);
  ExpectTypes(ParseFamilies(node),
              {{"process_cpu_seconds_total", "counter"},
               {"shelfmark_node_mounted", "gauge"},
               {"shelfmark_node_pings_total", "counter"},
               {"shelfmark_node_ping_failures_total", "counter"},
               {"shelfmark_node_offloaded_objects_total", "counter"},
               {"shelfmark_node_disk_requests_total", "counter"},
               {"shelfmark_node_disk_served_bytes_total", "counter"},
               {"shelfmark_node_disk_used_bytes", "gauge"},
               {"shelfmark_node_disk_capacity_bytes", "gauge"},
               {"shelfmark_node_disk_objects", "gauge"}});
  EXPECT_GE(testing::MetricValue(node, "shelfmark_node_disk_requests_total"), kObjects);
  EXPECT_GE(testing::MetricValue(node, "shelfmark_node_disk_served_bytes_total"),
            static_cast<double>(kObjects * kObjectBytes));
  EXPECT_EQ(testing::MetricValue(node, "shelfmark_node_disk_capacity_bytes"), 64 << 20);
  EXPECT_GE(testing::MetricValue(node, "shelfmark_node_disk_used_bytes"),
            static_cast<double>(kObjects * kObjectBytes));
}

// The check the test above relies on does fail: promtool names every
// convention these samples break, and the family parser finds a sample
// without HELP or TYPE.
TEST(PromtoolCheck, FailsOnNamesThatBreakTheConventions) {
  ASSERT_TRUE(PromtoolFound()) << "promtool was not found when CMake configured this build";
  testing::TempDir dir("metrics_process");
  const std::string bad =
      "# HELP shelfmark_master_key_count objects\n"
      "# TYPE shelfmark_master_key_count gauge\n"
      "shelfmark_master_key_count 3\n"
      "# HELP shelfmark_master_restore_ms restore time\n"
      "# TYPE shelfmark_master_restore_ms gauge\n"
      "shelfmark_master_restore_ms 12\n"
      "# HELP shelfmark_node_pings pings\n"
      "# TYPE shelfmark_node_pings counter\n"
      "shelfmark_node_pings 7\n"
      "shelfmark_untyped_thing 1\n";
  Promtool check = CheckMetrics(bad, dir.Join("bad.metrics"));
  EXPECT_NE(check.status, 0) << check.output;
  for (const char* name : {"shelfmark_master_key_count", "shelfmark_master_restore_ms",
                           "shelfmark_node_pings"}) {
    EXPECT_NE(check.output.find(name), std::string::npos) << name << " in\n" << check.output;
  }
  Families families = ParseFamilies(bad);
  ASSERT_EQ(families.problems.size(), 2u) << ::testing::PrintToString(families.problems);
  EXPECT_EQ(families.problems[0], "shelfmark_untyped_thing: no TYPE");

  const std::string good =
      "# HELP shelfmark_master_keys objects\n"
      "# TYPE shelfmark_master_keys gauge\n"
      "shelfmark_master_keys 3\n";
  check = CheckMetrics(good, dir.Join("good.metrics"));
  EXPECT_EQ(check.status, 0) << check.output;
  EXPECT_EQ(check.output, "");
}

}  // namespace
}  // namespace shelfmark
