#include "common/host_port.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

TEST(ParseHostPort, Accepts) {
  auto a = ParseHostPort("127.0.0.1:50051");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 50051);
  auto b = ParseHostPort("[::1]:9003");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->ToString(), "[::1]:9003");
  EXPECT_EQ(ParseHostPort("master-0:1")->ToString(), "master-0:1");
}

TEST(ParseHostPort, Rejects) {
  for (const char* bad : {"", "host", ":80", "host:", "host:0", "host:65536", "host:12x",
                          "::1:80", "[]:80", "host:-1"}) {
    EXPECT_FALSE(ParseHostPort(bad)) << bad;
  }
}

}  // namespace
}  // namespace shelfmark
