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

auth::Nonce NonceOf(uint8_t seed) {
  auth::Nonce nonce;
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(seed + i);
  return nonce;
}

NodeAddress AnAddress() {
  return {std::string("\x01\0addr", 6), "boot", "share", 0x1122334455667788ull, NonceOf(3)};
}

Hello AHello() {
  Hello hello{42, UUID{7, 9}, 0x0102030405060708ull, NonceOf(50), {}, std::string("wa\0ddr", 6)};
  hello.proof = UcxClientProof("token", NonceOf(3), hello);
  return hello;
}

TEST(UcxWire, NodeAddressRoundTripsAndRejectsAnythingElse) {
  const NodeAddress address = AnAddress();
  std::string bytes = EncodeNodeAddress(address);
  auto back = DecodeNodeAddress(bytes.data(), bytes.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, address);
  ExpectOnlyExactBytes(bytes, DecodeNodeAddress);
  std::string empty = EncodeNodeAddress({});
  EXPECT_FALSE(DecodeNodeAddress(empty.data(), empty.size()).has_value());
  NodeAddress no_ticket = address;  // a node always issues a challenge
  no_ticket.ticket = 0;
  bytes = EncodeNodeAddress(no_ticket);
  EXPECT_FALSE(DecodeNodeAddress(bytes.data(), bytes.size()).has_value());
}

TEST(UcxWire, HelloRoundTripsAndRejectsAnythingElse) {
  const Hello hello = AHello();
  std::string bytes = EncodeHello(hello);
  auto back = DecodeHello(bytes.data(), bytes.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, hello);
  ExpectOnlyExactBytes(bytes, DecodeHello);
}

TEST(UcxWire, HelloReplyRoundTripsAndRejectsAnythingElse) {
  for (bool accepted : {false, true}) {
    HelloReply reply{accepted, 5, Session{11, 0xfeedull}, {}};
    reply.proof = UcxNodeProof("token", NonceOf(3), AHello(), reply);
    std::string bytes = EncodeHelloReply(reply);
    auto back = DecodeHelloReply(bytes.data(), bytes.size());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, reply);
    ExpectOnlyExactBytes(bytes, DecodeHelloReply);
  }
  std::string bytes = EncodeHelloReply({true, 5, {}, {}});
  bytes[5] = 2;  // "accepted" is 0 or 1
  EXPECT_FALSE(DecodeHelloReply(bytes.data(), bytes.size()).has_value());
}

// The token never travels, and each proof is bound to everything its
// message claims: change any one of them and the proof no longer verifies.
TEST(UcxWire, ProofsBindTheTokenBothNoncesAndTheClaims) {
  const Hello hello = AHello();
  EXPECT_EQ(EncodeHello(hello).find("token"), std::string::npos);
  const std::string_view proof = auth::BytesOf(hello.proof);
  EXPECT_TRUE(auth::ProofMatches(UcxClientProof("token", NonceOf(3), hello), proof));
  EXPECT_FALSE(auth::ProofMatches(UcxClientProof("tokem", NonceOf(3), hello), proof));
  EXPECT_FALSE(auth::ProofMatches(UcxClientProof("token", NonceOf(4), hello), proof));
  auto changed = [&](auto change) {
    Hello other = hello;
    change(other);
    return UcxClientProof("token", NonceOf(3), other);
  };
  EXPECT_NE(changed([](Hello& h) { h.conn_id++; }), hello.proof);
  EXPECT_NE(changed([](Hello& h) { h.client_id.lo++; }), hello.proof);
  EXPECT_NE(changed([](Hello& h) { h.ticket++; }), hello.proof);
  EXPECT_NE(changed([](Hello& h) { h.client_nonce[0] ^= 1; }), hello.proof);
  EXPECT_NE(changed([](Hello& h) { h.worker_address += "x"; }), hello.proof);

  HelloReply reply{true, hello.conn_id, Session{11, 0xfeedull}, {}};
  const auth::Proof node = UcxNodeProof("token", NonceOf(3), hello, reply);
  EXPECT_NE(node, hello.proof);  // another label: a client's proof never passes as the node's
  EXPECT_NE(UcxNodeProof("other", NonceOf(3), hello, reply), node);
  HelloReply other_session = reply;
  other_session.session.secret++;
  EXPECT_NE(UcxNodeProof("token", NonceOf(3), hello, other_session), node);
}

}  // namespace
}  // namespace shelfmark::ucx_wire
