#include "master/master_config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ha/leader_key.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

ParseOutcome Parse(std::vector<const char*> args, MasterConfig* c, std::string* msg) {
  args.insert(args.begin(), "shelfmark-master");
  return ParseMasterFlags(static_cast<int>(args.size()), args.data(), c, msg);
}

ParseOutcome ParseStrings(const std::vector<std::string>& args, MasterConfig* c,
                          std::string* msg) {
  std::vector<const char*> pointers;
  for (const std::string& a : args) pointers.push_back(a.c_str());
  return Parse(pointers, c, msg);
}

TEST(MasterConfig, DesignStudyExampleParses) {
  setenv("MOONCAKE_SNAPSHOT_LOCAL_PATH", "/nvme/mooncake-master-snapshots", 1);
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({"--memory_allocator=offset", "--enable_snapshot=true",
                   "--enable_snapshot_restore=true", "--snapshot_object_store_type=local",
                   "--snapshot_catalog_store_type=embedded", "--snapshot_interval_seconds=600",
                   "--snapshot_child_timeout_seconds=300", "--snapshot_retention_count=2",
                   "--eviction_ratio=0.1", "--eviction_high_watermark_ratio=0.8",
                   "--default_kv_lease_ttl=5000", "--client_ttl=20", "--enable_offload",
                   "--rpc_port=6000", "--metrics_port=6001", "--cluster_id=c1"},
                  &c, &msg),
            ParseOutcome::kRun)
      << msg;
  EXPECT_TRUE(c.enable_snapshot);
  EXPECT_TRUE(c.enable_snapshot_restore);
  EXPECT_EQ(c.snapshot_object_store_type, "local");
  EXPECT_EQ(c.snapshot_catalog_store_type, "embedded");
  EXPECT_EQ(c.snapshot_interval_seconds, 600);
  EXPECT_EQ(c.snapshot_child_timeout_seconds, 300);
  EXPECT_EQ(c.snapshot_retention_count, 2);
  EXPECT_EQ(c.snapshot_local_path, "/nvme/mooncake-master-snapshots");
  EXPECT_EQ(c.rpc_port, 6000);
  DirectoryOptions o = c.ToDirectoryOptions();
  EXPECT_EQ(o.default_kv_lease_ttl_ms, 5000);
  EXPECT_EQ(o.client_ttl_ms, 20000);
  EXPECT_DOUBLE_EQ(o.eviction_ratio, 0.1);
  EXPECT_TRUE(o.enable_offload);
  EXPECT_EQ(o.eviction_policy, EvictionPolicy::k2q) << "the default";
}

TEST(MasterConfig, EvictionPolicyFlags) {
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({"--eviction_policy=lru", "--eviction_probation_ratio=0.3"}, &c, &msg),
            ParseOutcome::kRun)
      << msg;
  DirectoryOptions o = c.ToDirectoryOptions();
  EXPECT_EQ(o.eviction_policy, EvictionPolicy::kLru);
  EXPECT_DOUBLE_EQ(o.eviction_probation_ratio, 0.3);
}

TEST(MasterConfig, BadValuesNameTheFlag) {
  for (const char* arg : {"--snapshot_retention_count=0", "--rpc_port=-1", "--client_ttl=0",
                          "--eviction_ratio=2", "--snapshot_object_store_type=ftp",
                          "--bogus=1", "--cluster_id=../x", "--rpc_max_request_bytes=10",
                          "--rpc_request_timeout_sec=0", "--rpc_idle_timeout_sec=-1",
                          "--rpc_max_buffered_request_bytes=8192", "--eviction_policy=fifo",
                          "--eviction_probation_ratio=1.5"}) {
    MasterConfig c;
    std::string msg;
    EXPECT_EQ(Parse({arg}, &c, &msg), ParseOutcome::kError) << arg;
    std::string name = std::string(arg).substr(0, std::string(arg).find('='));
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(MasterConfig, HaOffByDefaultAndClusterIdDefaults) {
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({}, &c, &msg), ParseOutcome::kRun) << msg;
  EXPECT_FALSE(c.enable_ha);
  EXPECT_EQ(c.cluster_id, ha::kDefaultClusterId);
  EXPECT_EQ(c.snapshot_cluster_id, "shelfmark_cluster");  // snapshots do not move
  MasterConfig given;
  ASSERT_EQ(Parse({"--cluster_id=c1"}, &given, &msg), ParseOutcome::kRun) << msg;
  EXPECT_EQ(given.snapshot_cluster_id, "c1");
}

TEST(MasterConfig, HaFlagsParse) {
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({"--enable_ha", "--ha_backend_type=etcd",
                   "--ha_backend_connstring=10.0.0.1:2379;10.0.0.2:2379",
                   "--rpc_advertise_address=10.0.0.5:50051", "--ha_lease_ttl_s=3",
                   "--ha_safety_margin_ms=700"},
                  &c, &msg),
            ParseOutcome::kRun)
      << msg;
  ASSERT_EQ(c.etcd_endpoint_list.size(), 2u);
  EXPECT_EQ(c.etcd_endpoint_list[1].ToString(), "10.0.0.2:2379");
  EXPECT_EQ(c.ha_lease_ttl_s, 3);
  EXPECT_EQ(c.ha_safety_margin_ms, 700);
  MasterConfig same;  // both names with the same value
  EXPECT_EQ(Parse({"--enable_ha", "--rpc_address=10.0.0.5", "--etcd_endpoints=h:1",
                   "--ha_backend_connstring=h:1"},
                  &same, &msg),
            ParseOutcome::kRun)
      << msg;
}

TEST(MasterConfig, BadHaValuesNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--ha_backend_type=redis"}, "--ha_backend_type"},
      {{"--enable_ha"}, "--etcd_endpoints"},
      {{"--etcd_endpoints=nope"}, "--etcd_endpoints"},
      {{"--ha_backend_connstring=nope"}, "--ha_backend_connstring"},
      {{"--etcd_endpoints=h:1", "--ha_backend_connstring=h:2"}, "--ha_backend_connstring"},
      {{"--enable_ha", "--etcd_endpoints=h:1"}, "--rpc_advertise_address"},
      {{"--rpc_advertise_address=nohost"}, "--rpc_advertise_address"},
      {{"--ha_lease_ttl_s=0"}, "--ha_lease_ttl_s"},
      {{"--ha_safety_margin_ms=2000"}, "--ha_safety_margin_ms"},
      {{"--enable_ha", "--etcd_endpoints=h:1", "--rpc_address=h", "--cluster_id=a b"},
       "--cluster_id"},
  };
  for (const auto& [args, name] : cases) {
    MasterConfig c;
    std::string msg;
    EXPECT_EQ(ParseStrings(args, &c, &msg), ParseOutcome::kError) << name;
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(MasterConfig, RpcLimits) {
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({"--rpc_max_connections=100", "--rpc_max_request_bytes=1048576",
                   "--rpc_max_buffered_request_bytes=4194304", "--rpc_request_timeout_sec=5",
                   "--rpc_idle_timeout_sec=600"},
                  &c, &msg),
            ParseOutcome::kRun)
      << msg;
  EXPECT_EQ(c.rpc_max_connections, 100);
  EXPECT_EQ(c.rpc_max_request_bytes, 1 << 20);
  EXPECT_EQ(c.rpc_max_buffered_request_bytes, 4 << 20);
  EXPECT_EQ(c.rpc_request_timeout_sec, 5);
  EXPECT_EQ(c.rpc_idle_timeout_sec, 600);
  MasterConfig defaults;
  EXPECT_EQ(defaults.rpc_max_request_bytes, 64 << 20);
  EXPECT_EQ(defaults.rpc_idle_timeout_sec, 0);
}

TEST(MasterConfig, SnapshotDefaultsAndChoices) {
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({}, &c, &msg), ParseOutcome::kRun) << msg;
  EXPECT_EQ(c.snapshot_retention_count, 2);
  EXPECT_FALSE(c.enable_snapshot);
  for (const char* arg : {"--memory_allocator=buddy", "--snapshot_catalog_store_type=etcd",
                          "--snapshot_interval_seconds=0", "--snapshot_child_timeout_seconds=0"}) {
    EXPECT_EQ(Parse({arg}, &c, &msg), ParseOutcome::kError) << arg;
  }
  EXPECT_EQ(Parse({"--snapshot_object_store_type=s3", "--enable_snapshot"}, &c, &msg),
            ParseOutcome::kRun) << msg;
}

TEST(MasterConfig, EmptyStartFlags) {
  MasterConfig c;
  std::string msg;
  ASSERT_EQ(Parse({}, &c, &msg), ParseOutcome::kRun) << msg;
  EXPECT_FALSE(c.snapshot_allow_empty_start);
  EXPECT_EQ(c.snapshot_restore_id, "");
  ASSERT_EQ(Parse({"--snapshot_allow_empty_start", "--snapshot_restore_id=20261203_101500_250"},
                  &c, &msg),
            ParseOutcome::kRun)
      << msg;
  EXPECT_TRUE(c.snapshot_allow_empty_start);
  EXPECT_EQ(c.snapshot_restore_id, "20261203_101500_250");
  for (const char* arg : {"--snapshot_restore_id=../latest.txt", "--snapshot_restore_id=latest",
                          "--snapshot_restore_id=20261399_101500_250"}) {
    MasterConfig bad;
    EXPECT_EQ(Parse({arg}, &bad, &msg), ParseOutcome::kError) << arg;
    EXPECT_NE(msg.find("--snapshot_restore_id"), std::string::npos) << msg;
  }
}

TEST(MasterConfig, LocalSnapshotsNeedTheLocalPathVariable) {
  unsetenv("MOONCAKE_SNAPSHOT_LOCAL_PATH");
  for (const char* arg : {"--enable_snapshot=true", "--enable_snapshot_restore=true"}) {
    MasterConfig c;
    std::string msg;
    EXPECT_EQ(Parse({arg, "--snapshot_object_store_type=local"}, &c, &msg), ParseOutcome::kError);
    EXPECT_NE(msg.find("MOONCAKE_SNAPSHOT_LOCAL_PATH"), std::string::npos) << msg;
  }
  MasterConfig off;
  std::string msg;
  EXPECT_EQ(Parse({"--enable_snapshot=false"}, &off, &msg), ParseOutcome::kRun) << msg;
  setenv("MOONCAKE_SNAPSHOT_LOCAL_PATH", "/tmp/snaps", 1);
  MasterConfig on;
  EXPECT_EQ(Parse({"--enable_snapshot=true"}, &on, &msg), ParseOutcome::kRun) << msg;
  EXPECT_EQ(on.snapshot_local_path, "/tmp/snaps");
}

TEST(MasterConfig, HelpAndPositional) {
  MasterConfig c;
  std::string msg;
  EXPECT_EQ(Parse({"--help"}, &c, &msg), ParseOutcome::kHelp);
  EXPECT_NE(msg.find("--rpc_port"), std::string::npos);
  EXPECT_EQ(Parse({"extra"}, &c, &msg), ParseOutcome::kError);
}

}  // namespace
}  // namespace shelfmark

namespace shelfmark {
namespace {

TEST(MasterConfig, TokensFromTheTableFileTheFlagOrTheEnvironment) {
  testing::TempDir dir("master_config");
  const std::string table = dir.Join("tokens");
  testing::WriteFile(table, "node n-tok-0123456789abc\nclient c-tok-0123456789abc tenant=acme\n");
  ::chmod(table.c_str(), 0600);
  MasterConfig c;
  std::string msg;
  const std::string flag = "--cluster_token_file=" + table;
  ASSERT_EQ(Parse({flag.c_str()}, &c, &msg), ParseOutcome::kRun) << msg;
  EXPECT_EQ(c.tokens.size(), 2u);
  EXPECT_TRUE(c.token_warning.empty()) << c.token_warning;

  MasterConfig literal;
  ASSERT_EQ(Parse({"--cluster_token=one-token"}, &literal, &msg), ParseOutcome::kRun) << msg;
  EXPECT_EQ(literal.tokens.size(), 1u);
  EXPECT_NE(literal.token_warning.find("ps"), std::string::npos) << literal.token_warning;

  ::setenv("SHELFMARK_CLUSTER_TOKEN", "env-token", 1);
  MasterConfig env;
  ASSERT_EQ(Parse({}, &env, &msg), ParseOutcome::kRun) << msg;
  EXPECT_EQ(env.tokens.size(), 1u);
  EXPECT_NE(env.token_warning.find("weak cluster token"), std::string::npos)
      << env.token_warning;
  ::setenv("SHELFMARK_CLUSTER_TOKEN", "a-token-of-thirty-two-bytes-long", 1);
  MasterConfig strong;
  ASSERT_EQ(Parse({}, &strong, &msg), ParseOutcome::kRun) << msg;
  EXPECT_TRUE(strong.token_warning.empty()) << strong.token_warning;
  ::unsetenv("SHELFMARK_CLUSTER_TOKEN");
  MasterConfig none;
  ASSERT_EQ(Parse({}, &none, &msg), ParseOutcome::kRun) << msg;
  EXPECT_TRUE(none.tokens.empty()) << "no token anywhere: no authentication";
}

TEST(MasterConfig, BadTokenFilesNameTheFileAndTheLine) {
  testing::TempDir dir("master_config");
  const std::string bad = dir.Join("bad");
  testing::WriteFile(bad, "ok-token-0123456789\nroot x-0123456789abcdef\n");
  MasterConfig c;
  std::string msg;
  std::string flag = "--cluster_token_file=" + bad;
  EXPECT_EQ(Parse({flag.c_str()}, &c, &msg), ParseOutcome::kError);
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  flag = "--cluster_token_file=" + dir.Join("missing");
  EXPECT_EQ(Parse({flag.c_str()}, &c, &msg), ParseOutcome::kError);
  EXPECT_NE(msg.find("FILE_NOT_FOUND"), std::string::npos) << msg;
  flag = "--metrics_token_file=" + dir.Join("missing");
  MasterConfig fresh;
  EXPECT_EQ(Parse({flag.c_str()}, &fresh, &msg), ParseOutcome::kError);
  EXPECT_NE(msg.find("metrics_token_file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace shelfmark
