#include "perf/get_options.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

FlagOutcome Parse(std::vector<const char*> args, GetBenchOptions* o, std::string* message) {
  args.insert(args.begin(), "shelfmark-perf get");
  return ParseGetBenchOptions(static_cast<int>(args.size()), args.data(), o, message);
}

TEST(GetBenchOptions, DefaultsMeasureBothReplicaTypes) {
  GetBenchOptions o;
  std::string message;
  ASSERT_EQ(Parse({}, &o, &message), FlagOutcome::kOk) << message;
  EXPECT_EQ(o.replicas, (std::vector<std::string>{"memory", "local_disk"}));
  EXPECT_EQ(o.sizes, (std::vector<uint64_t>{4096, 65536, 1048576}));
  EXPECT_EQ(o.distribution, KeyDistribution::kUniform);
  EXPECT_TRUE(o.disk_dirs.empty());
  EXPECT_TRUE(o.location_cache);
}

TEST(GetBenchOptions, ParsesEveryFlag) {
  GetBenchOptions o;
  std::string message;
  ASSERT_EQ(Parse({"--master=h:7", "--replica=local_disk", "--protocol=ucx", "--size=1,2",
                   "--iters=9", "--concurrency=4", "--keys=50", "--key_dist=zipf",
                   "--zipf_theta=1.2", "--disk_dirs=/a,/b/c", "--json", "--plot=/tmp/x.png",
                   "--location_cache=false"},
                  &o, &message),
            FlagOutcome::kOk)
      << message;
  EXPECT_EQ(o.replicas, (std::vector<std::string>{"local_disk"}));
  EXPECT_EQ(o.sizes, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(o.iters, 9);
  EXPECT_EQ(o.concurrency, 4);
  EXPECT_EQ(o.distribution, KeyDistribution::kZipf);
  EXPECT_DOUBLE_EQ(o.zipf_theta, 1.2);
  EXPECT_EQ(o.disk_dirs, (std::vector<std::string>{"/a", "/b/c"}));
  EXPECT_TRUE(o.json);
  EXPECT_EQ(o.plot, "/tmp/x.png");
  EXPECT_FALSE(o.location_cache);
}

TEST(GetBenchOptions, ParsesTheCredentialFlags) {
  GetBenchOptions o;
  std::string message;
  ASSERT_EQ(Parse({"--cluster_token_file=/etc/shelfmark/cluster_token",
                   "--master_token_file=/etc/shelfmark/master_token", "--cluster_token=t0"},
                  &o, &message),
            FlagOutcome::kOk)
      << message;
  EXPECT_EQ(o.credential_flags.cluster_token_file, "/etc/shelfmark/cluster_token");
  EXPECT_EQ(o.credential_flags.master_token_file, "/etc/shelfmark/master_token");
  EXPECT_EQ(o.credential_flags.cluster_token, "t0");
  ASSERT_EQ(Parse({"--help"}, &o, &message), FlagOutcome::kHelp);
  EXPECT_NE(message.find("--cluster_token_file"), std::string::npos) << message;
  EXPECT_NE(message.find("--master_token_file"), std::string::npos) << message;
}

// The parsed flags give the tokens of the files they name (RunGetBench
// resolves them so).
TEST(GetBenchOptions, CredentialFlagsResolveToTheFilesTokens) {
  testing::TempDir dir("get_options");
  const std::string cluster = dir.Join("cluster_token");
  const std::string master = dir.Join("master_token");
  std::ofstream(cluster) << "# the cluster's\ncluster-tok\n";
  std::ofstream(master) << "master-tok\n";
  ::chmod(cluster.c_str(), 0600);  // else Resolve warns that others can read them
  ::chmod(master.c_str(), 0600);
  const std::string cluster_flag = "--cluster_token_file=" + cluster;
  const std::string master_flag = "--master_token_file=" + master;
  GetBenchOptions o;
  std::string message;
  ASSERT_EQ(Parse({cluster_flag.c_str()}, &o, &message), FlagOutcome::kOk) << message;
  auto only_cluster = o.credential_flags.Resolve("get_options_test");
  ASSERT_TRUE(only_cluster.ok());
  EXPECT_EQ(only_cluster->cluster_token, "cluster-tok");
  ASSERT_EQ(Parse({master_flag.c_str()}, &o, &message), FlagOutcome::kOk) << message;
  auto both = o.credential_flags.Resolve("get_options_test");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->cluster_token, "cluster-tok");
  EXPECT_EQ(both->master_token, "master-tok");
  o.credential_flags.cluster_token_file = dir.Join("missing");
  EXPECT_FALSE(o.credential_flags.Resolve("get_options_test").ok());
}

TEST(GetBenchOptions, BadValuesNameTheFlag) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"--replica=ssd"}, "--replica"},
      {{"--protocol=tcp"}, "--protocol"},
      {{"--size=0"}, "--size"},
      {{"--size=4k"}, "--size"},
      {{"--master=nohost"}, "--master"},
      {{"--iters=0"}, "--iters"},
      {{"--concurrency=0"}, "--concurrency"},
      {{"--key_dist=pareto"}, "--key_dist"},
      {{"--batch=4"}, "--batch"},  // with both replica types
      {{"--replica=memory", "--batch=40", "--keys=8"}, "--batch"},
      {{"--disk_dirs=relative/dir"}, "--disk_dirs"},
      {{"--tenant="}, "--tenant"},
      {{"--location_cache=maybe"}, "--location_cache"},
      {{"--bogus=1"}, "--bogus"},
      {{"stray"}, "stray"},
  };
  for (const auto& [args, flag] : cases) {
    GetBenchOptions o;
    std::string message;
    EXPECT_EQ(Parse(args, &o, &message), FlagOutcome::kBadUsage) << flag;
    EXPECT_NE(message.find(flag), std::string::npos) << message;
  }
  GetBenchOptions o;
  std::string message;
  EXPECT_EQ(Parse({"--replica=memory", "--batch=4"}, &o, &message), FlagOutcome::kOk) << message;
  EXPECT_EQ(Parse({"--help"}, &o, &message), FlagOutcome::kHelp);
  EXPECT_NE(message.find("--replica"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
