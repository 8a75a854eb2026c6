// Real shelfmark-master and shelfmark-node processes (UCX on 127.0.0.1) and
// the client library in this process: round trips, a node killed with
// SIGKILL, a node stopped with SIGTERM, and shelfmark-cli put/get.
#include <signal.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "client/client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "tests/ucx_client.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;

constexpr int kStartMs = 30'000;

using testing::ReadFile;
using testing::WaitForText;

// Waits for the master's metric `name` to equal `value`.
bool WaitForMetric(uint16_t port, const std::string& name, double value, int timeout_ms) {
  return testing::WaitForMetric(
      port, name, [value](double v) { return v == value; }, timeout_ms);
}

std::string Pattern(size_t size, int seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 31 + seed) & 0xff);
  return s;
}

class ClientProcessTest : public ::testing::Test {
 protected:
  // The master binds free ports itself (port 0) and prints them: no race
  // with other processes picking ports.
  // The whole suite runs with authentication on: one cluster token (every
  // role) that the master, the nodes, the cli and the clients all hold.
  void SetUp() override {
    testing::WriteFile(token_file_, "client-process-token\n");
    ::chmod(token_file_.c_str(), 0600);
    const std::string err = dir_.Join("master.err");
    testing::ServicePorts ports;
    master_ = testing::StartMaster(SHELFMARK_MASTER_BIN,
                                   {"--client_ttl=2", "--cluster_token_file=" + token_file_}, err,
                                   &ports, kStartMs);
    ASSERT_NE(master_, nullptr) << ReadFile(err);
    rpc_ = ports.rpc;
    http_ = ports.http;
  }

  // A failed test shows the processes' logs (the directory goes with them).
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".err").c_str());
  }

  std::string NodeErr(const std::string& name) const { return dir_.Join(name + ".err"); }

  // The node's metrics port from its stderr ("shelfmark-node: metrics port N"); 0 if absent.
  uint16_t NodeMetricsPort(const std::string& name) const {
    const std::string text = ReadFile(NodeErr(name));
    const std::string tag = "metrics port ";
    const size_t at = text.find(tag);
    return at == std::string::npos ? 0
                                   : static_cast<uint16_t>(std::stoi(text.substr(at + tag.size())));
  }

  std::string Master() const { return "127.0.0.1:" + std::to_string(rpc_); }

  // Starts a node (on `port`, 0: any) and waits for its ready line.
  std::unique_ptr<ChildProcess> StartNode(const std::string& name, uint16_t port = 0) {
    const std::string err = NodeErr(name);
    auto node = std::make_unique<ChildProcess>(
        SHELFMARK_NODE_BIN,
        std::vector<std::string>{"--master=" + Master(), "--segment_size=67108864",
                                 "--protocol=ucx", "--listen_ip=127.0.0.1",
                                 "--listen_port=" + std::to_string(port),
                                 "--segment_name=" + name, "--ping_interval_ms=300",
                                 "--cluster_token_file=" + token_file_},
        err);
    EXPECT_TRUE(WaitForText(err, "protocol ucx endpoint 127.0.0.1:", kStartMs)) << ReadFile(err);
    return node;
  }

  // Kills `node` (SIGKILL), waits for the master to drop its segment, then
  // starts `name` on `port` and waits for its segment; nullptr on a failure.
  std::unique_ptr<ChildProcess> KillAndRestart(std::unique_ptr<ChildProcess> node,
                                               const std::string& name, uint16_t port) {
    node->Signal(SIGKILL);
    EXPECT_EQ(node->Wait(10'000), 128 + SIGKILL);
    if (!WaitForMetric(http_, "shelfmark_master_segments", 0, 20'000)) return nullptr;
    auto second = StartNode(name, port);
    if (!WaitForMetric(http_, "shelfmark_master_segments", 1, 20'000)) return nullptr;
    return second;
  }

  std::unique_ptr<Client> MakeClient() {
    ClientOptions options;
    options.transfer_timeout_ms = 3000;
    options.transport.cluster_token = "client-process-token";
    return testing::MakeUcxClient(Master(), options);
  }

  testing::TempDir dir_{"client_process"};  // the processes' logs; outlives them
  const std::string token_file_ = dir_.Join("cluster_token");
  uint16_t rpc_ = 0, http_ = 0;
  std::unique_ptr<ChildProcess> master_;
};

TEST_F(ClientProcessTest, RoundTripsThroughARealNode) {
  auto node = StartNode("rt");
  auto client = MakeClient();
  ASSERT_NE(client, nullptr);
  for (size_t size : {size_t{1}, size_t{4096}, size_t{100'000}, size_t{4} << 20}) {
    const std::string key = "rt-" + std::to_string(size);
    const std::string value = Pattern(size, static_cast<int>(size % 251));
    PutOptions options;
    options.compute_checksum = true;
    ASSERT_EQ(client->Put("", key, value, options), ErrorCode::OK) << key;
    auto got = client->Get("", key);
    ASSERT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
    EXPECT_EQ(*got, value);
  }
  auto batch = client->BatchGet("", {"rt-1", "rt-4096", "nope"});
  EXPECT_EQ(*batch[0], Pattern(1, 1));
  EXPECT_EQ(*batch[1], Pattern(4096, 4096 % 251));
  EXPECT_EQ(batch[2].error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(ClientProcessTest, KilledNodeFailsReadsWithoutHangingOrWrongBytes) {
  auto node = StartNode("victim");
  auto client = MakeClient();
  ASSERT_NE(client, nullptr);
  const std::string value = Pattern(65536, 5);
  ASSERT_EQ(client->Put("", "victim-key", value), ErrorCode::OK);
  ASSERT_EQ(*client->Get("", "victim-key"), value);  // connected and cached
  node->Signal(SIGKILL);
  ASSERT_EQ(node->Wait(10'000), 128 + SIGKILL);
  auto got = client->Get("", "victim-key");
  ASSERT_FALSE(got.ok()) << "bytes from a dead node";
  EXPECT_TRUE(got.error() == ErrorCode::TRANSFER_FAIL ||
              got.error() == ErrorCode::OBJECT_NOT_FOUND)
      << ErrorCodeName(got.error());
  // After the client TTL the master drops the node and its objects.
  ASSERT_TRUE(WaitForMetric(http_, "shelfmark_master_segments", 0, 20'000));
  EXPECT_EQ(client->Get("", "victim-key").error(), ErrorCode::OBJECT_NOT_FOUND);
}

// Same-host reads are copies from the node's segment mapped into this
// process (docs/transport.md). A node killed and restarted on the same
// endpoint must never be read through the old mapping: the same key put
// again (likely at the same offset of the new segment) reads its new bytes,
// through a new mapping.
TEST_F(ClientProcessTest, SameHostReadsNeverComeFromARestartedNodesOldMemory) {
  const uint16_t port = testing::FreePort();
  auto node = StartNode("first", port);
  auto client = MakeClient();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->Put("", "k", Pattern(65536, 1)), ErrorCode::OK);
  ASSERT_EQ(*client->Get("", "k"), Pattern(65536, 1));
  auto before = client->TransferCounters("ucx");
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->local_reads, 1u);
  EXPECT_EQ(before->reads_posted, 0u);
  EXPECT_EQ(before->local_maps, 1u);
  auto second = KillAndRestart(std::move(node), "second", port);
  ASSERT_NE(second, nullptr);
  // Another client writes, so the reader's connection to the dead node is
  // untouched until its next read.
  auto writer = MakeClient();
  ASSERT_NE(writer, nullptr);
  ASSERT_EQ(writer->Put("", "k", Pattern(65536, 2)), ErrorCode::OK);
  auto got = client->Get("", "k");
  ASSERT_TRUE(!got.ok() || *got == Pattern(65536, 2)) << "bytes from the dead node's memory";
  if (!got.ok()) {  // the stale connection failed this read; the next one reconnects
    got = client->Get("", "k");
    ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  }
  EXPECT_EQ(*got, Pattern(65536, 2));
  auto after = client->TransferCounters("ucx");
  EXPECT_EQ(after->local_maps, 2u);
  EXPECT_EQ(after->local_reads, 2u);
}

// Same-host writes are copies into the node's segment mapped into this
// process. A put after the node was killed and restarted on the same
// endpoint is never copied into the old mapping and reported done: it fails
// (the stale connection) or lands in the new segment, where another client
// reads exactly its bytes.
TEST_F(ClientProcessTest, SameHostWritesNeverGoToARestartedNodesOldMemory) {
  const uint16_t port = testing::FreePort();
  auto node = StartNode("first", port);
  auto client = MakeClient();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->Put("", "w1", Pattern(65536, 1)), ErrorCode::OK);
  auto before = client->TransferCounters("ucx");
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->local_writes, 1u);
  EXPECT_EQ(before->local_bytes_written, 65536u);
  EXPECT_EQ(before->writes_posted, 0u);
  auto second = KillAndRestart(std::move(node), "second", port);
  ASSERT_NE(second, nullptr);
  ErrorCode put = client->Put("", "w2", Pattern(65536, 2));
  if (put != ErrorCode::OK) {  // the stale connection failed this put; the next one reconnects
    EXPECT_EQ(put, ErrorCode::TRANSFER_FAIL) << ErrorCodeName(put);
    put = client->Put("", "w2", Pattern(65536, 2));
  }
  ASSERT_EQ(put, ErrorCode::OK) << ErrorCodeName(put);
  auto reader = MakeClient();
  ASSERT_NE(reader, nullptr);
  auto got = reader->Get("", "w2");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, Pattern(65536, 2)) << "the put's bytes went to the dead node's memory";
  auto after = client->TransferCounters("ucx");
  EXPECT_EQ(after->local_maps, 2u);
  EXPECT_EQ(after->local_writes, 2u);  // the first put and the one through the new mapping
}

TEST_F(ClientProcessTest, SigtermUnmountsAndExitsZero) {
  auto node = StartNode("polite");
  ASSERT_TRUE(WaitForMetric(http_, "shelfmark_master_segments", 1, kStartMs));
  std::string node_metrics;
  ASSERT_EQ(testing::HttpGet(NodeMetricsPort("polite"), "/metrics", &node_metrics), 200);
  EXPECT_EQ(testing::MetricValue(node_metrics, "shelfmark_node_mounted"), 1);
  EXPECT_EQ(testing::MetricValue(node_metrics, "shelfmark_node_segment_bytes"), 67108864);
  node->Signal(SIGTERM);
  EXPECT_EQ(node->Wait(20'000), 0);
  std::string body;
  ASSERT_EQ(testing::HttpGet(http_, "/metrics", &body), 200);
  EXPECT_EQ(testing::MetricValue(body, "shelfmark_master_segments"), 0);
}

TEST_F(ClientProcessTest, CliPutGetRoundTripOfAFile) {
  auto node = StartNode("cli");
  const std::string in = dir_.Join("cli.in");
  const std::string out = dir_.Join("cli.out");
  const std::string value = Pattern(300'000, 77);
  testing::WriteFile(in, value);
  const std::string token = "--cluster_token_file=" + token_file_;
  ChildProcess put(SHELFMARK_CLI_BIN, {"--master=" + Master(), token, "--protocol=ucx", "put",
                                       "cli-key", in, "--tenant=files"});
  ASSERT_EQ(put.Wait(30'000), 0);
  ChildProcess get(SHELFMARK_CLI_BIN, {"--master=" + Master(), token, "--protocol=ucx", "get",
                                       "cli-key", out, "--tenant=files"});
  ASSERT_EQ(get.Wait(30'000), 0);
  EXPECT_EQ(ReadFile(out), value);
  ChildProcess missing(SHELFMARK_CLI_BIN,
                       {"--master=" + Master(), token, "get", "no-such-key", out});
  EXPECT_EQ(missing.Wait(30'000), 1);
}

TEST(NodeProcess, BadFlagsExitTwoNamingTheFlag) {
  testing::TempDir dir("client_process");
  const std::string err = dir.Join("node_bad_flag.err");
  for (const char* arg : {"--protocol=smoke", "--segment_size=abc", "--master=nohost",
                          "--no_such_flag=1"}) {
    ChildProcess node(SHELFMARK_NODE_BIN, {arg}, err);
    EXPECT_EQ(node.Wait(10'000), 2) << arg;
    const std::string name = std::string(arg).substr(0, std::string(arg).find('='));
    EXPECT_NE(ReadFile(err).find(name), std::string::npos) << arg << ": " << ReadFile(err);
  }
}

}  // namespace
}  // namespace shelfmark
