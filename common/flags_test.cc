#include "common/flags.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

struct Fixture {
  int64_t port = 50051;
  double ratio = 0.05;
  bool offload = false;
  std::string mode = "offset";
  FlagSet flags{"prog"};
  Fixture() {
    flags.AddInt64("rpc_port", &port, "port", 1, 65535);
    flags.AddDouble("eviction_ratio", &ratio, "ratio", 0.0, 1.0);
    flags.AddBool("enable_offload", &offload, "offload");
    flags.AddString("memory_allocator", &mode, "alloc", {"offset"});
  }
  bool Parse(std::vector<const char*> args, std::string* error) {
    args.insert(args.begin(), "prog");
    return flags.Parse(static_cast<int>(args.size()), args.data(), error);
  }
};

TEST(Flags, ParsesEveryKind) {
  Fixture f;
  std::string error;
  ASSERT_TRUE(f.Parse({"--rpc_port=6000", "--eviction_ratio=0.2", "--enable_offload",
                       "--memory_allocator=offset", "pos"}, &error)) << error;
  EXPECT_EQ(f.port, 6000);
  EXPECT_DOUBLE_EQ(f.ratio, 0.2);
  EXPECT_TRUE(f.offload);
  ASSERT_EQ(f.flags.positional().size(), 1u);
  EXPECT_EQ(f.flags.positional()[0], "pos");
}

TEST(Flags, DefaultsStayWhenAbsent) {
  Fixture f;
  std::string error;
  ASSERT_TRUE(f.Parse({}, &error));
  EXPECT_EQ(f.port, 50051);
  EXPECT_FALSE(f.offload);
}

TEST(Flags, ErrorsNameTheFlag) {
  struct Case { const char* arg; const char* name; };
  for (Case c : {Case{"--no_such_flag=1", "--no_such_flag"},
                 Case{"--rpc_port=abc", "--rpc_port"},
                 Case{"--rpc_port=70000", "--rpc_port"},
                 Case{"--rpc_port", "--rpc_port"},
                 Case{"--eviction_ratio=1.5", "--eviction_ratio"},
                 Case{"--eviction_ratio=nan", "--eviction_ratio"},
                 Case{"--enable_offload=maybe", "--enable_offload"},
                 Case{"--memory_allocator=cachelib", "--memory_allocator"}}) {
    Fixture f;
    std::string error;
    EXPECT_FALSE(f.Parse({c.arg}, &error)) << c.arg;
    EXPECT_NE(error.find(c.name), std::string::npos) << error;
  }
}

TEST(Flags, UsageListsFlags) {
  Fixture f;
  EXPECT_NE(f.flags.Usage().find("--rpc_port (default 50051)"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
