#include "auth/proof.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace shelfmark::auth {
namespace {

TEST(ProofTest, NoncesAreFreshEachTime) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    Nonce n = NewNonce();
    EXPECT_TRUE(seen.insert(std::string(Bytes(n))).second) << "nonce repeated";
  }
}

TEST(ProofTest, IsHmacSha256OfTheFramedMessage) {
  // Known answer computed independently (Python: hmac.new(b"key",
  // b"lbl\0" + b"\x03\0\0\0abc", hashlib.sha256).hexdigest()).
  Proof p = Prove("key", "lbl", {"abc"});
  std::string hex;
  for (uint8_t b : p) {
    static const char* digits = "0123456789abcdef";
    hex.push_back(digits[b >> 4]);
    hex.push_back(digits[b & 15]);
  }
  EXPECT_EQ(hex, "d18e504af52da98c984a1407584583f85651f20d5db44e92ec7e4f64f1e870ed");
}

TEST(ProofTest, EveryInputChangesTheProof) {
  Proof base = Prove("token", "ucx/client", {"n1", "n2"});
  EXPECT_NE(base, Prove("token2", "ucx/client", {"n1", "n2"}));
  EXPECT_NE(base, Prove("token", "ucx/node", {"n1", "n2"}));
  EXPECT_NE(base, Prove("token", "ucx/client", {"n2", "n1"}));
  EXPECT_NE(base, Prove("token", "ucx/client", {"n1", "n2", ""}));
  // Length prefixes: moving bytes between parts is a different message.
  EXPECT_NE(Prove("t", "l", {"ab", "c"}), Prove("t", "l", {"a", "bc"}));
}

TEST(ProofTest, ProofMatchesOnlyTheExactBytes) {
  Proof p = Prove("token", "label", {"nonce"});
  std::string wire(BytesOf(p));
  EXPECT_TRUE(ProofMatches(p, wire));
  std::string flipped = wire;
  flipped[31] = static_cast<char>(flipped[31] ^ 1);
  EXPECT_FALSE(ProofMatches(p, flipped));
  EXPECT_FALSE(ProofMatches(p, wire.substr(0, 31)));
  EXPECT_FALSE(ProofMatches(p, wire + "x"));
  EXPECT_FALSE(ProofMatches(p, ""));
}

}  // namespace
}  // namespace shelfmark::auth
