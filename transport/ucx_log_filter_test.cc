// UcxStrayMessageFilter against UCX's real log dispatcher: the three
// warnings UCX writes for a message with no handler (as its functions name
// themselves) reach no output and are counted; every other line passes.
// The end-to-end case, a stranger's UCX RMA against a node whose stdout
// is a pipe nobody drains, is in tests/hostile_test.cc.
#include "transport/ucx_log_filter.h"

#include <fcntl.h>
#include <unistd.h>
#include <ucs/config/global_opts.h>
#include <ucs/debug/log_def.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

// What UCX's log wrote to stdout while `fn` ran.
std::string StdoutOf(const std::function<void()>& fn, const std::string& path) {
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  EXPECT_GE(file, 0) << path;
  ::dup2(file, STDOUT_FILENO);
  fn();
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  ::close(file);
  return testing::ReadFile(path);
}

void Log(const char* function, const char* format, int value) {
  ucs_log_dispatch("test", 1, function, UCS_LOG_LEVEL_WARN, &ucs_global_opts.log_component,
                   format, value);
}

// What uct_iface_stub_am_handler writes for one message of AM id `id`.
void StrayReport(int id) {
  Log("uct_iface_stub_am_handler", "got active message id %d, but no handler installed", id);
  Log("uct_iface_stub_am_handler", "payload of %d bytes: 00000000", 64);
  Log("ucs_log_print_backtrace", "==== backtrace (tid: %d) ====", 1);
  Log("ucs_log_print_backtrace", "%2d  ucp_worker_progress", 0);
  Log("ucs_log_print_backtrace", "=================================%.0d", 0);
}

class UcxLogFilterTest : public ::testing::Test {
 protected:
  void SetUp() override { InstallUcxStrayMessageFilter(); }
  testing::TempDir dir_{"ucx_log_filter"};
};

TEST_F(UcxLogFilterTest, AStrangersMessagesWriteNothingAndAreCounted) {
  const uint64_t before = UcxStrayMessagesDropped();
  const std::string out = StdoutOf([] { StrayReport(17); StrayReport(18); }, dir_.Join("out"));
  EXPECT_EQ(out, "");
  EXPECT_EQ(UcxStrayMessagesDropped(), before + 2);
}

TEST_F(UcxLogFilterTest, EveryOtherLinePassesBacktracesIncluded) {
  InstallUcxStrayMessageFilter();  // a second install changes nothing
  const uint64_t before = UcxStrayMessagesDropped();
  const std::string out = StdoutOf(
      [] {
        StrayReport(17);
        Log("uct_tcp_ep_handle_disconnected", "peer %d went away", 7);
        Log("ucs_log_print_backtrace", "==== backtrace (tid: %d) ====", 2);
      },
      dir_.Join("out"));
  EXPECT_NE(out.find("peer 7 went away"), std::string::npos) << out;
  EXPECT_NE(out.find("backtrace (tid: 2)"), std::string::npos) << out;
  EXPECT_EQ(out.find("got active message"), std::string::npos) << out;
  EXPECT_EQ(out.find("tid: 1"), std::string::npos) << out;
  EXPECT_EQ(UcxStrayMessagesDropped(), before + 1);
}

}  // namespace
}  // namespace shelfmark
