#include "perf/get_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
