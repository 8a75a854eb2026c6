// The real shelfmark-master binary: flags, /health, /metrics moving under
// real RPC traffic, clean stop on SIGTERM.
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#include <string>

#include "rpc/master_client.h"
#include "directory/directory_test_util.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

TEST(MasterProcess, BadFlagExitsNonZeroNamingTheFlag) {
  testing::TempDir dir("master_process");
  const std::string err = dir.Join("bad_flag.err");
  for (const char* arg : {"--no_such_flag=1", "--rpc_port=abc", "--snapshot_retention_count=0",
                          "--eviction_ratio=7"}) {
    ChildProcess master(SHELFMARK_MASTER_BIN, {arg}, err);
    EXPECT_EQ(master.Wait(10'000), 2) << arg;
    std::string name = std::string(arg).substr(0, std::string(arg).find('='));
    EXPECT_NE(ReadFile(err).find(name), std::string::npos) << ReadFile(err);
  }
}

TEST(MasterProcess, ServesHealthAndMetricsThatMoveUnderTraffic) {
  uint16_t rpc = testing::FreePort(), http = testing::FreePort();
  ChildProcess master(SHELFMARK_MASTER_BIN,
                      {"--rpc_port=" + std::to_string(rpc), "--metrics_port=" + std::to_string(http)});
  ASSERT_TRUE(testing::WaitHealthy(http, 20'000));
  std::string before;
  ASSERT_EQ(testing::HttpGet(http, "/metrics", &before), 200);
  EXPECT_GT(testing::MetricValue(before, "process_resident_memory_bytes"), 0);
  EXPECT_EQ(testing::MetricValue(before, "shelfmark_master_keys"), 0);

  MasterClientOptions opts;
  opts.address = "127.0.0.1:" + std::to_string(rpc);
  MasterClient client(opts);
  ASSERT_EQ(client.MountSegment(MakeTestSegment("seg", 1 << 20, 1 << 20, "127.0.0.1:1")),
            ErrorCode::OK);
  for (int i = 0; i < 10; ++i) {
    std::string key = "k" + std::to_string(i);
    ASSERT_TRUE(client.PutStart("", key, 1000, {}).ok());
    ASSERT_EQ(client.PutEnd("", key), ErrorCode::OK);
  }
  std::string after;
  ASSERT_EQ(testing::HttpGet(http, "/metrics", &after), 200);
  EXPECT_EQ(testing::MetricValue(after, "shelfmark_master_keys"), 10);
  EXPECT_EQ(testing::MetricValue(after, "shelfmark_master_total_capacity_bytes"), 1 << 20);
  EXPECT_EQ(testing::MetricValue(after, "shelfmark_master_allocated_bytes"), 10 * 1024);
  EXPECT_NE(after.find("shelfmark_master_rpc_requests_total{method=\"PutStart\"} 10"),
            std::string::npos);
  std::string body;
  EXPECT_EQ(testing::HttpGet(http, "/nope", &body), 404);

  master.Signal(SIGTERM);
  EXPECT_EQ(master.Wait(20'000), 0);
}

TEST(MasterProcess, PortInUseIsAClearError) {
  uint16_t rpc = testing::FreePort(), http = testing::FreePort();
  ChildProcess first(SHELFMARK_MASTER_BIN,
                     {"--rpc_port=" + std::to_string(rpc), "--metrics_port=" + std::to_string(http)});
  ASSERT_TRUE(testing::WaitHealthy(http, 20'000));
  testing::TempDir dir("master_process");
  const std::string err = dir.Join("port_in_use.err");
  ChildProcess second(SHELFMARK_MASTER_BIN,
                      {"--rpc_port=" + std::to_string(testing::FreePort()),
                       "--metrics_port=" + std::to_string(http)}, err);
  EXPECT_EQ(second.Wait(20'000), 1);
  EXPECT_NE(ReadFile(err).find("--metrics_port"), std::string::npos) << ReadFile(err);
}

// A snapshot location it cannot write stops the master at start, naming the
// path and the cause, before the RPC port opens (it used to start and fail
// its first snapshot an interval later, with neither in the log).
TEST(MasterProcess, RefusesToStartWithASnapshotPathItCannotWrite) {
  testing::TempDir dir("master_process");
  const std::string readonly = dir.Join("readonly"), err = dir.Join("readonly.err");
  ASSERT_EQ(mkdir(readonly.c_str(), 0755), 0);
  // Root ignores permission bits: a read-only tmpfs for it, mode 0555 for others.
  bool mounted = false;
  if (geteuid() == 0) {
    mounted = mount("tmpfs", readonly.c_str(), "tmpfs", MS_RDONLY, "size=64k") == 0;
    if (!mounted) GTEST_SKIP() << "root without mount rights: " << std::strerror(errno);
  } else {
    ASSERT_EQ(chmod(readonly.c_str(), 0555), 0);
  }
  setenv("MOONCAKE_SNAPSHOT_LOCAL_PATH", readonly.c_str(), 1);
  ChildProcess master(SHELFMARK_MASTER_BIN,
                      {"--rpc_port=0", "--metrics_port=0", "--enable_snapshot=true"}, err);
  int status = master.Wait(20'000);
  unsetenv("MOONCAKE_SNAPSHOT_LOCAL_PATH");
  if (mounted) umount2(readonly.c_str(), MNT_DETACH);
  EXPECT_EQ(status, 1);
  std::string log = ReadFile(err);
  EXPECT_NE(log.find("cannot write to local:" + readonly), std::string::npos) << log;
  EXPECT_NE(log.find(mounted ? "Read-only file system" : "Permission denied"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("rpc port"), std::string::npos) << log;
}

}  // namespace
}  // namespace shelfmark
