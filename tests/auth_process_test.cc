// Authentication across real processes (docs/security.md), ctest label
// `hostile`: a master started with a token table, nodes and shelfmark-cli
// with their token files. A node holding a wrong master token is refused at
// mount and no put is ever placed on it; a tool without a token is answered
// UNAUTHENTICATED and one with it is served; a table with a weak line stops
// the master at start.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "rpc/master_client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"
#include "tests/ucx_client.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

constexpr int kStartMs = 30'000;

class AuthProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = WriteSecret("tokens",
                          "node node-secret-1-0123456789\nclient client-secret-2-0123456789\n"
                          "admin admin-secret-3-0123456789\n");
    data_ = WriteSecret("data", "data-plane-secret-4\n");
    const std::string err = dir_.Join("master.err");
    testing::ServicePorts ports;
    master_ = testing::StartMaster(SHELFMARK_MASTER_BIN, {"--cluster_token_file=" + tokens_}, err,
                                   &ports, kStartMs);
    ASSERT_NE(master_, nullptr) << ReadFile(err);
    rpc_ = ports.rpc;
    http_ = ports.http;
  }
  void TearDown() override {
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".err").c_str());
  }

  std::string WriteSecret(const std::string& name, const std::string& text) {
    const std::string path = dir_.Join(name);
    testing::WriteFile(path, text);
    ::chmod(path.c_str(), 0600);
    return path;
  }
  std::string Master() const { return "127.0.0.1:" + std::to_string(rpc_); }

  // A ucx node proving `master_token_file` to the master.
  std::unique_ptr<ChildProcess> StartNode(const std::string& name,
                                          const std::string& master_token_file) {
    return std::make_unique<ChildProcess>(
        SHELFMARK_NODE_BIN,
        std::vector<std::string>{"--master=" + Master(), "--segment_size=16777216",
                                 "--protocol=ucx", "--listen_ip=127.0.0.1",
                                 "--segment_name=" + name, "--ping_interval_ms=300",
                                 "--metrics_port=0", "--cluster_token_file=" + data_,
                                 "--master_token_file=" + master_token_file},
        dir_.Join(name + ".err"));
  }

  // Runs shelfmark-cli with `args`; its exit status, stderr in *err.
  int Cli(const std::vector<std::string>& args, std::string* err) {
    const std::string path = dir_.Join("cli-" + std::to_string(cli_runs_++) + ".err");
    std::vector<std::string> all = {"--master=" + Master()};
    all.insert(all.end(), args.begin(), args.end());
    ChildProcess cli(SHELFMARK_CLI_BIN, all, path);
    int status = cli.Wait(30'000);
    *err = ReadFile(path);
    return status;
  }

  testing::TempDir dir_{"auth_process"};
  std::string tokens_, data_;
  std::unique_ptr<ChildProcess> master_;
  uint16_t rpc_ = 0, http_ = 0;
  int cli_runs_ = 0;
};

TEST_F(AuthProcessTest, ARogueNodeIsRefusedAtMountAndNoPutLandsOnIt) {
  auto good = StartNode("good", WriteSecret("node-token", "node-secret-1-0123456789\n"));
  auto rogue = StartNode("rogue", WriteSecret("rogue-token", "rogue\n"));
  ASSERT_TRUE(testing::WaitForText(dir_.Join("rogue.err"), "UNAUTHENTICATED", kStartMs))
      << ReadFile(dir_.Join("rogue.err"));
  ASSERT_TRUE(testing::WaitForMetric(http_, "shelfmark_master_segments",
                                     [](double v) { return v == 1; }, kStartMs));
  // A client token cannot mount either (a role it does not have).
  auto client_as_node =
      StartNode("pretender", WriteSecret("client-token", "client-secret-2-0123456789\n"));
  ASSERT_TRUE(
      testing::WaitForText(dir_.Join("pretender.err"), "PERMISSION_DENIED", kStartMs))
      << ReadFile(dir_.Join("pretender.err"));

  ClientOptions options;
  options.transport.cluster_token = "data-plane-secret-4";
  options.master_token = "client-secret-2-0123456789";
  auto client = testing::MakeUcxClient(Master(), options);
  ASSERT_NE(client, nullptr);
  MasterClientOptions admin_options;
  admin_options.address = Master();
  admin_options.token = "admin-secret-3-0123456789";
  MasterClient admin(admin_options);
  ASSERT_TRUE(testing::WaitForText(dir_.Join("good.err"), "protocol ucx endpoint ", kStartMs));
  const std::string good_log = ReadFile(dir_.Join("good.err"));
  const size_t at = good_log.find("protocol ucx endpoint ") + 22;
  const std::string good_endpoint = good_log.substr(at, good_log.find_first_of(" \n", at) - at);
  for (int i = 0; i < 20; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(client->Put("", key, std::string(4096, static_cast<char>('a' + i))), ErrorCode::OK);
    auto info = admin.Stat("", key);
    ASSERT_TRUE(info.ok()) << ErrorCodeName(info.error());
    ASSERT_EQ(info->replicas.size(), 1u);
    EXPECT_EQ(info->replicas[0].memory.endpoint, good_endpoint) << key;
  }
  EXPECT_EQ(testing::ScrapeMetric(http_, "shelfmark_master_segments"), 1)
      << "only the node with the node token is mounted";
  EXPECT_GE(testing::ScrapeMetric(http_, "shelfmark_master_auth_handshakes_total{result=\"failed\"}"),
            1);
}

TEST_F(AuthProcessTest, TheCliIsRefusedWithoutATokenAndServedWithOne) {
  std::string err;
  EXPECT_EQ(Cli({"count"}, &err), 1);
  EXPECT_NE(err.find("UNAUTHENTICATED"), std::string::npos) << err;
  EXPECT_EQ(Cli({"--cluster_token_file=" + WriteSecret("wrong", "wrong-secret\n"), "count"}, &err),
            1);
  EXPECT_NE(err.find("UNAUTHENTICATED"), std::string::npos) << err;
  const std::string client_token = WriteSecret("c", "client-secret-2-0123456789\n");
  EXPECT_EQ(Cli({"--cluster_token_file=" + client_token, "count"}, &err), 0) << err;
  // Forced removal is an admin's: the client token is refused it.
  EXPECT_EQ(Cli({"--cluster_token_file=" + client_token, "rm", "k", "--force"}, &err), 1);
  EXPECT_NE(err.find("PERMISSION_DENIED"), std::string::npos) << err;
}

// Issue 29: `admin` alone made the word "admin" an all-roles token, `client`
// followed by `admin TOKEN` made "client" one, and a 4-byte token passed.
// Each table is refused at start (exit 2), the message naming its line.
TEST(AuthProcessTokenTableTest, AMasterWithAWeakTokenLineRefusesToStart) {
  testing::TempDir dir("auth_process_weak");
  struct Case {
    std::string table;
    std::string names;
  };
  const Case cases[] = {
      {"admin\n", "line 1: token 'admin' is a role word"},
      {"# roles\nclient\nadmin Zk3q9LmP0xWv7RtY2sHb\n", "line 2: token 'client' is a role word"},
      {"admin Zk3q9LmP0xWv7RtY2sHb\nclient abcd\n", "line 2: token is 4 bytes"},
  };
  for (const Case& c : cases) {
    const std::string table = dir.Join("tokens");
    testing::WriteFile(table, c.table);
    ::chmod(table.c_str(), 0600);
    const std::string err = dir.Join("master.err");
    ChildProcess master(SHELFMARK_MASTER_BIN,
                        {"--rpc_port=0", "--metrics_port=0", "--cluster_token_file=" + table}, err);
    EXPECT_EQ(master.Wait(kStartMs), 2) << c.table;
    const std::string log = ReadFile(err);
    EXPECT_NE(log.find("--cluster_token_file=" + table + ": " + c.names), std::string::npos)
        << log;
  }
}

}  // namespace
}  // namespace shelfmark
