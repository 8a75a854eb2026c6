#include "testing/process_util.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "common/socket_io.h"
#include "testing/temp_dir.h"

namespace shelfmark::testing {
namespace {

TEST(Files, FlipBitsChangesOneByteInPlace) {
  TempDir dir("files");
  WriteFile(dir.Join("f"), "abcdef");
  FlipBits(dir.Join("f"), 2, 0x20);
  EXPECT_EQ(ReadFile(dir.Join("f")), "abCdef");
}

TEST(Files, WriteFileThenReadFileRoundTripsBinaryBytes) {
  TempDir dir("process_util_test");
  const std::string bytes("a\0b\r\n\xff", 6);
  WriteFile(dir.Join("f"), bytes);
  EXPECT_EQ(ReadFile(dir.Join("f")), bytes);
  WriteFile(dir.Join("f"), "shorter");  // replaced, not appended
  EXPECT_EQ(ReadFile(dir.Join("f")), "shorter");
  EXPECT_EQ(ReadFile(dir.Join("missing")), "");
}

TEST(Files, LogTailsShowsTheMatchingFilesByNameWithTheirLastBytes) {
  TempDir dir("process_util_test");
  WriteFile(dir.Join("b.log"), "0123456789");
  WriteFile(dir.Join("a.log"), "first");
  WriteFile(dir.Join("c.data"), "not a log");
  std::filesystem::create_directory(dir.Join("d.log"));  // not a file
  EXPECT_EQ(LogTails(dir.path(), ".log", 4), "--- a.log ---\n...irst\n--- b.log ---\n...6789\n");
  EXPECT_EQ(LogTails(dir.path(), ".log"), "--- a.log ---\nfirst\n--- b.log ---\n0123456789\n");
  EXPECT_EQ(LogTails(dir.Join("missing"), ".log"), "");
}

// Whether `addresses` holds host:port.
bool Lists(const std::vector<HostPort>& addresses, const std::string& host, uint16_t port) {
  return std::any_of(addresses.begin(), addresses.end(),
                     [&](const HostPort& a) { return a.host == host && a.port == port; });
}

TEST(Sockets, ListeningTcpAddressesFindsThisProcesssListenersOnly) {
  uint16_t port = 0;
  const int fd = ListenLoopback(4, &port);
  ASSERT_GE(fd, 0);
  const int connected = ConnectLoopback(port);  // an established socket: not listed
  ASSERT_GE(connected, 0);
  const int any = ListenTcp("0.0.0.0", 0, 4);  // a wildcard listener reads as loopback
  ASSERT_GE(any, 0);
  std::vector<HostPort> addresses = ListeningTcpAddresses(getpid());
  EXPECT_TRUE(Lists(addresses, "127.0.0.1", port));
  EXPECT_TRUE(Lists(addresses, "127.0.0.1", BoundPort(any)));
  EXPECT_EQ(addresses.size(), 2u);
  close(connected);
  close(fd);
  close(any);
  EXPECT_TRUE(ListeningTcpAddresses(getpid()).empty());
  EXPECT_TRUE(ListeningTcpAddresses(-1).empty());
}

}  // namespace
}  // namespace shelfmark::testing
