// The real binaries with an etcd:// master address (docs/ha.md, "Finding
// the leader"): shelfmark-cli finds a shelfmark-master whose address is
// published in a real etcd (testing/etcd_process.h), says so when no leader
// is published, and shelfmark-cli, shelfmark-node and shelfmark-perf refuse
// a bad etcd:// address or cluster id naming the flag.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "directory/directory_test_util.h"
#include "ha/etcd_client.h"
#include "ha/leader_key.h"
#include "rpc/master_client.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

// Quotes `s` for /bin/sh.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `binary args...` with the environment assignments `env` ("NAME=V")
// through /bin/sh, stdout into `out`, stderr into `err`; its exit status.
int RunBinary(const std::string& binary, const std::vector<std::string>& args, const std::string& out,
        const std::string& err, const std::vector<std::string>& env = {}) {
  std::string command;
  for (const std::string& e : env) command += e + " ";
  command += "exec " + Quote(binary);
  for (const std::string& a : args) command += " " + Quote(a);
  command += " >" + Quote(out);
  ChildProcess child("/bin/sh", {"-c", command}, err);
  return child.Wait(60'000);
}

class HaCliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.Start()) << etcd_.StartFailure(); }
  std::string Etcd() const { return "etcd://" + etcd_.endpoint(); }

  testing::EtcdProcess etcd_;
  testing::TempDir dir_{"ha_process"};
};

TEST_F(HaCliTest, CliFindsTheMasterPublishedInEtcd) {
  testing::ServicePorts ports;
  auto master = testing::StartMaster(SHELFMARK_MASTER_BIN, {}, dir_.Join("master.err"), &ports);
  ASSERT_NE(master, nullptr) << ReadFile(dir_.Join("master.err"));
  const std::string address = "127.0.0.1:" + std::to_string(ports.rpc);
  ha::EtcdClient etcd({{{"127.0.0.1", etcd_.client_port()}}});
  ASSERT_EQ(etcd.Put(ha::LeaderKey("proc"), address), ErrorCode::OK);

  MasterClientOptions o;
  o.address = address;
  MasterClient direct(o);
  ASSERT_EQ(direct.MountSegment(MakeTestSegment("seg", 1 << 20, 1 << 20, "127.0.0.1:1")),
            ErrorCode::OK);
  for (const char* key : {"a", "b"}) {
    ASSERT_TRUE(direct.PutStart("", key, 1000, {}).ok());
    ASSERT_EQ(direct.PutEnd("", key), ErrorCode::OK);
  }

  const std::string out = dir_.Join("count.out"), err = dir_.Join("count.err");
  ASSERT_EQ(RunBinary(SHELFMARK_CLI_BIN, {"--master=" + Etcd(), "--cluster_id=proc", "count"}, out,
                err),
            0)
      << ReadFile(err);
  EXPECT_EQ(ReadFile(out), "2\n");
  // The cluster id from the environment (ours over Mooncake's).
  ASSERT_EQ(RunBinary(SHELFMARK_CLI_BIN, {"--master=" + Etcd(), "count"}, out, err,
                {"SHELFMARK_CLUSTER_ID=proc", "MC_STORE_CLUSTER_ID=other"}),
            0)
      << ReadFile(err);
  EXPECT_EQ(ReadFile(out), "2\n");
  ASSERT_EQ(RunBinary(SHELFMARK_CLI_BIN, {"--master=" + Etcd(), "count"}, out, err,
                {"SHELFMARK_CLUSTER_ID=", "MC_STORE_CLUSTER_ID=proc"}),
            0)
      << ReadFile(err);
  EXPECT_EQ(ReadFile(out), "2\n");
}

TEST_F(HaCliTest, CliSaysWhenNoLeaderIsPublished) {
  const std::string out = dir_.Join("none.out"), err = dir_.Join("none.err");
  EXPECT_EQ(RunBinary(SHELFMARK_CLI_BIN,
                {"--master=" + Etcd(), "--cluster_id=nobody", "--timeout_ms=300", "count"}, out,
                err),
            1);
  EXPECT_NE(ReadFile(err).find("no leader found in etcd at " + etcd_.endpoint() +
                               " for cluster ID 'nobody'"),
            std::string::npos)
      << ReadFile(err);
}

TEST_F(HaCliTest, BadEtcdAddressesAreUsageErrorsNamingTheFlag) {
  const std::string out = dir_.Join("bad.out"), err = dir_.Join("bad.err");
  struct Case {
    std::string binary;
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {SHELFMARK_CLI_BIN, {"--master=etcd://", "count"}, "--master"},
      {SHELFMARK_CLI_BIN, {"--master=etcd://h", "count"}, "--master"},
      {SHELFMARK_CLI_BIN, {"--master=etcd://h:1", "--cluster_id=a/b", "count"}, "--cluster_id"},
      {SHELFMARK_NODE_BIN, {"--master=etcd://;", "--segment_size=1048576"}, "--master"},
      {SHELFMARK_NODE_BIN, {"--master=etcd://h:1", "--cluster_id=a b", "--segment_size=1048576"},
       "--cluster_id"},
      {SHELFMARK_PERF_BIN, {"master", "--master=etcd://"}, "--master"},
      {SHELFMARK_PERF_BIN, {"master", "--master=etcd://h:1"}, "--metrics"},
      {SHELFMARK_PERF_BIN, {"get", "--master=etcd://x"}, "--master"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RunBinary(c.binary, c.args, out, err), 2) << c.args[0] << " " << ReadFile(err);
    EXPECT_NE(ReadFile(err).find(c.names), std::string::npos) << c.args[0] << ": " << ReadFile(err);
  }
}

}  // namespace
}  // namespace shelfmark
