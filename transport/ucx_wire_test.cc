#include "transport/ucx_wire.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark::ucx_wire {
namespace {

TEST(UcxWire, HelloRoundTripsAndRejectsAnythingElse) {
  Hello hello{42, UUID{7, 9}, std::string("tok\0en", 6)};
  std::string bytes = EncodeHello(hello);
  auto back = DecodeHello(bytes.data(), bytes.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->conn_id, 42u);
  EXPECT_EQ(back->client_id, (UUID{7, 9}));
  EXPECT_EQ(back->cluster_token, hello.cluster_token);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeHello(bytes.data(), n).has_value()) << n;  // truncated
  }
  std::string longer = bytes + "x";
  EXPECT_FALSE(DecodeHello(longer.data(), longer.size()).has_value());
  std::string magic = bytes;
  magic[0] ^= 1;
  EXPECT_FALSE(DecodeHello(magic.data(), magic.size()).has_value());
  std::string version = bytes;
  version[4] = 2;
  EXPECT_FALSE(DecodeHello(version.data(), version.size()).has_value());
  std::string zeros(4096, '\0');
  EXPECT_FALSE(DecodeHello(zeros.data(), zeros.size()).has_value());
}

TEST(UcxWire, HelloReplyRoundTripsAndRejectsAnythingElse) {
  for (bool accepted : {false, true}) {
    std::string bytes = EncodeHelloReply({accepted, 5});
    auto back = DecodeHelloReply(bytes.data(), bytes.size());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->accepted, accepted);
    EXPECT_EQ(back->conn_id, 5u);
  }
  std::string bytes = EncodeHelloReply({true, 5});
  bytes[5] = 2;  // "accepted" is 0 or 1
  EXPECT_FALSE(DecodeHelloReply(bytes.data(), bytes.size()).has_value());
  EXPECT_FALSE(DecodeHelloReply(bytes.data(), 3).has_value());
}

}  // namespace
}  // namespace shelfmark::ucx_wire
