#include "transport/ucx_wire.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>

namespace shelfmark::ucx_wire {
namespace {

// Every strict prefix, one byte more, a flipped magic, another version and
// a page of zeros are all refused by `decode`.
template <typename Decode>
void ExpectOnlyExactBytes(const std::string& bytes, Decode decode) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode(bytes.data(), n).has_value()) << n;  // truncated
  }
  std::string longer = bytes + "x";
  EXPECT_FALSE(decode(longer.data(), longer.size()).has_value());
  std::string magic = bytes;
  magic[0] ^= 1;
  EXPECT_FALSE(decode(magic.data(), magic.size()).has_value());
  std::string version = bytes;
  version[4] = static_cast<char>(kVersion + 1);
  EXPECT_FALSE(decode(version.data(), version.size()).has_value());
  std::string zeros(4096, '\0');
  EXPECT_FALSE(decode(zeros.data(), zeros.size()).has_value());
}

TEST(UcxWire, NodeAddressRoundTripsAndRejectsAnythingElse) {
  const NodeAddress address{std::string("\x01\0addr", 6), "boot", "share"};
  std::string bytes = EncodeNodeAddress(address);
  auto back = DecodeNodeAddress(bytes.data(), bytes.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, address);
  ExpectOnlyExactBytes(bytes, DecodeNodeAddress);
  std::string empty = EncodeNodeAddress({});
  EXPECT_FALSE(DecodeNodeAddress(empty.data(), empty.size()).has_value());
}

TEST(UcxWire, HelloRoundTripsAndRejectsAnythingElse) {
  Hello hello{42, UUID{7, 9}, std::string("tok\0en", 6), std::string("wa\0ddr", 6)};
  std::string bytes = EncodeHello(hello);
  auto back = DecodeHello(bytes.data(), bytes.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->conn_id, 42u);
  EXPECT_EQ(back->client_id, (UUID{7, 9}));
  EXPECT_EQ(back->cluster_token, hello.cluster_token);
  EXPECT_EQ(back->worker_address, hello.worker_address);
  ExpectOnlyExactBytes(bytes, DecodeHello);
}

TEST(UcxWire, HelloReplyRoundTripsAndRejectsAnythingElse) {
  for (bool accepted : {false, true}) {
    std::string bytes = EncodeHelloReply({accepted, 5, Session{11, 0xfeedull}});
    auto back = DecodeHelloReply(bytes.data(), bytes.size());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->accepted, accepted);
    EXPECT_EQ(back->conn_id, 5u);
    EXPECT_EQ(back->session, (Session{11, 0xfeedull}));
    ExpectOnlyExactBytes(bytes, DecodeHelloReply);
  }
  std::string bytes = EncodeHelloReply({true, 5, {}});
  bytes[5] = 2;  // "accepted" is 0 or 1
  EXPECT_FALSE(DecodeHelloReply(bytes.data(), bytes.size()).has_value());
}

}  // namespace
}  // namespace shelfmark::ucx_wire
