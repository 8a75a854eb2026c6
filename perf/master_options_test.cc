#include "perf/master_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shelfmark {
namespace {

struct Parsed {
  FlagOutcome outcome;
  MasterBenchOptions options;
  std::string message;
};

Parsed Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "shelfmark-perf master");
  Parsed p;
  p.outcome = ParseMasterBenchOptions(static_cast<int>(args.size()), args.data(), &p.options,
                                      &p.message);
  return p;
}

TEST(MasterBenchOptions, Defaults) {
  Parsed p = Parse({});
  ASSERT_EQ(p.outcome, FlagOutcome::kOk) << p.message;
  EXPECT_EQ(p.options.connections, 1);
  EXPECT_EQ(p.options.batch, 1);
  EXPECT_EQ(p.options.seconds, 5);
  EXPECT_TRUE(p.options.reads);
  EXPECT_EQ(p.options.metrics_at.ToString(), "127.0.0.1:9003");
  EXPECT_FALSE(Parse({"--reads=false"}).options.reads);
  EXPECT_EQ(Parse({"--reads=sometimes"}).outcome, FlagOutcome::kBadUsage);
}

TEST(MasterBenchOptions, MetricsDefaultsToTheMasterHost) {
  Parsed p = Parse({"--master=10.1.2.3:50051", "--json", "--batch=128", "--connections=16"});
  ASSERT_EQ(p.outcome, FlagOutcome::kOk) << p.message;
  EXPECT_EQ(p.options.metrics_at.ToString(), "10.1.2.3:9003");
  EXPECT_TRUE(p.options.json);
  EXPECT_EQ(p.options.batch, 128);
  EXPECT_EQ(p.options.connections, 16);
}

TEST(MasterBenchOptions, EveryBadValueNamesItsFlag) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"--connections=0", "--connections"},   {"--connections=x", "--connections"},
      {"--batch=0", "--batch"},               {"--batch=65537", "--batch"},
      {"--seconds=0", "--seconds"},           {"--seconds=abc", "--seconds"},
      {"--objects=-1", "--objects"},          {"--key_size=8", "--key_size"},
      {"--key_size=5000", "--key_size"},      {"--value_size=0", "--value_size"},
      {"--master=nohost", "--master"},        {"--master=h:0", "--master"},
      {"--metrics=h:99999", "--metrics"},     {"--keep_keys=x", "--keep_keys"},
      {"--segment_size=4096", "--segment_size"}, {"--timeout_ms=0", "--timeout_ms"},
      {"--keep_keys=-5", "--keep_keys"},      {"--json=maybe", "--json"},
      {"--bogus=1", "--bogus"},
  };
  for (const auto& [arg, flag] : cases) {
    Parsed p = Parse({arg});
    EXPECT_EQ(p.outcome, FlagOutcome::kBadUsage) << arg;
    EXPECT_NE(p.message.find(flag), std::string::npos) << arg << ": " << p.message;
  }
}

TEST(MasterBenchOptions, TenantLength) {
  std::string long_tenant = "--tenant=" + std::string(257, 't');
  Parsed p = Parse({long_tenant.c_str()});
  EXPECT_EQ(p.outcome, FlagOutcome::kBadUsage);
  EXPECT_NE(p.message.find("--tenant"), std::string::npos);
  EXPECT_EQ(Parse({"--tenant="}).outcome, FlagOutcome::kOk);  // the default tenant
  EXPECT_EQ(Parse({"--tenant=team-a"}).outcome, FlagOutcome::kOk);
}

TEST(MasterBenchOptions, LongPrefixNeedsLongerKeys) {
  Parsed p = Parse({"--key_prefix=0123456789", "--key_size=24"});
  EXPECT_EQ(p.outcome, FlagOutcome::kBadUsage);
  EXPECT_NE(p.message.find("--key_prefix"), std::string::npos);
  EXPECT_NE(p.message.find("32"), std::string::npos);
  EXPECT_EQ(Parse({"--key_prefix=0123456789", "--key_size=32"}).outcome, FlagOutcome::kOk);
}

TEST(MasterBenchOptions, ParsesTheCredentialFlags) {
  Parsed p = Parse({"--cluster_token_file=/etc/shelfmark/cluster_token",
                    "--master_token_file=/etc/shelfmark/master_token"});
  ASSERT_EQ(p.outcome, FlagOutcome::kOk) << p.message;
  EXPECT_EQ(p.options.credential_flags.cluster_token_file, "/etc/shelfmark/cluster_token");
  EXPECT_EQ(p.options.credential_flags.master_token_file, "/etc/shelfmark/master_token");
  EXPECT_TRUE(p.options.credential_flags.cluster_token.empty());
  p = Parse({"--cluster_token=t0"});
  ASSERT_EQ(p.outcome, FlagOutcome::kOk) << p.message;
  EXPECT_EQ(p.options.credential_flags.cluster_token, "t0");
  EXPECT_EQ(Parse({"--master_token=t0"}).outcome, FlagOutcome::kBadUsage);  // files only
}

TEST(MasterBenchOptions, PositionalArgumentIsRejected) {
  Parsed p = Parse({"extra"});
  EXPECT_EQ(p.outcome, FlagOutcome::kBadUsage);
  EXPECT_NE(p.message.find("extra"), std::string::npos);
}

TEST(MasterBenchOptions, Help) {
  Parsed p = Parse({"--help"});
  EXPECT_EQ(p.outcome, FlagOutcome::kHelp);
  EXPECT_NE(p.message.find("--objects"), std::string::npos);
  EXPECT_NE(p.message.find("--cluster_token_file"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
