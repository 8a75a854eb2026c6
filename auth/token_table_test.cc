#include "auth/token_table.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark::auth {
namespace {

std::string ProofFor(std::string_view token, const Nonce& s, const Nonce& c) {
  return std::string(BytesOf(Prove(token, kMasterClientLabel, {Bytes(s), Bytes(c)})));
}

TEST(TokenTableTest, ParsesRolesTenantsAndBareTokens) {
  std::string error;
  auto t = TokenTable::Parse(
      "# roles\nall-token-0123456789\nnode node-token-0123456789\n"
      "client,admin ops-token-0123456789\nclient acme-token-0123456789 tenant=acme\n",
      &error);
  ASSERT_TRUE(t.ok()) << error;
  EXPECT_EQ(t->size(), 4u);
  Nonce s = NewNonce(), c = NewNonce();
  const TokenEntry* e = t->Identify(Bytes(s), Bytes(c), ProofFor("acme-token-0123456789", s, c));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->roles, kRoleClient);
  EXPECT_EQ(e->tenant, "acme");
  e = t->Identify(Bytes(s), Bytes(c), ProofFor("all-token-0123456789", s, c));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->roles, kAllRoles);
  e = t->Identify(Bytes(s), Bytes(c), ProofFor("ops-token-0123456789", s, c));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(RoleNames(e->roles), "client,admin");
}

TEST(TokenTableTest, WrongTokenOrOtherNoncesIdentifyNobody) {
  auto t = TokenTable::Single("right");
  Nonce s = NewNonce(), c = NewNonce();
  EXPECT_NE(t.Identify(Bytes(s), Bytes(c), ProofFor("right", s, c)), nullptr);
  EXPECT_EQ(t.Identify(Bytes(s), Bytes(c), ProofFor("wrong", s, c)), nullptr);
  // A proof recorded for other nonces (a replay) does not verify.
  Nonce s2 = NewNonce();
  EXPECT_EQ(t.Identify(Bytes(s2), Bytes(c), ProofFor("right", s, c)), nullptr);
  // The server's own proof reflected back is not a client proof.
  std::string reflected(BytesOf(Prove("right", kMasterServerLabel, {Bytes(s), Bytes(c)})));
  EXPECT_EQ(t.Identify(Bytes(s), Bytes(c), reflected), nullptr);
  EXPECT_EQ(t.Identify(Bytes(s), Bytes(c), ""), nullptr);
}

TEST(TokenTableTest, BadFilesNameTheLine) {
  const char* bad[] = {
      "",                                              // no token
      "# nothing\n",                                   // no token
      "root token-0123456789ab\n",                     // unknown role
      "node, token-0123456789ab\n",                    // empty role name
      "client token-0123456789ab nottenant\n",         // third word
      "node token-0123456789ab tenant=acme\n",         // bound non-client token
      "client token-0123456789ab tenant=\n",           // empty tenant
      "token-0123456789ab\nclient token-0123456789ab\n",  // repeated token
      "client token-0123456789ab tenant=x extra\n",    // too many words
  };
  for (const char* text : bad) {
    std::string error;
    auto t = TokenTable::Parse(text, &error);
    EXPECT_EQ(t.error(), ErrorCode::INVALID_PARAMS) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
  std::string error;
  EXPECT_FALSE(TokenTable::Parse("token-0123456789ab\nroot token-0123456789ac\n", &error).ok());
  EXPECT_EQ(error.rfind("line 2:", 0), 0u) << error;
}

// Issue 29: `admin` alone made "admin" an all-roles token, and `client`
// followed by `admin TOKEN` made "client" one; a 4-byte token passed.
TEST(TokenTableTest, WeakTokensAreRefusedNamingTheLine) {
  const std::string good = "admin Zk3q9LmP0xWv7RtY2sHb\n";
  struct Case {
    std::string text;
    std::string line;  // the error's start
    std::string why;   // a part of its reason
  };
  const Case cases[] = {
      {"admin\n", "line 1:", "'admin' is a role word"},
      {"# ops\nclient\nadmin Zk3q9LmP0xWv7RtY2sHb\n", "line 2:", "'client' is a role word"},
      {good + "client admin\n", "line 2:", "'admin' is a role word"},
      {good + "node,client\n", "line 2:", "'node,client' is a role word"},
      {good + "client abcd\n", "line 2:", "4 bytes, shorter than 16"},
      {good + "short-but-15-by\n", "line 2:", "shorter than 16"},
      {good + "tenant=acme-corporation-x\n", "line 2:", "tenant= word"},
      {good + "client Zk3q9LmP0xWv7RtY2sH\xc3\xa9\n", "line 2:", "not printable ASCII"},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_EQ(TokenTable::Parse(c.text, &error).error(), ErrorCode::INVALID_PARAMS) << c.text;
    EXPECT_EQ(error.rfind(c.line, 0), 0u) << error;
    EXPECT_NE(error.find(c.why), std::string::npos) << error;
  }
  std::string error;
  EXPECT_TRUE(TokenTable::Parse(good + "client exactly-16-bytes\n", &error).ok()) << error;
  EXPECT_EQ(WeakTokenReason("exactly-16-bytes"), "");
  EXPECT_NE(WeakTokenReason("exactly-15-byte"), "");
}

TEST(TokenTableTest, RoleNamesRoundTrip) {
  EXPECT_EQ(RoleNames(0), "none");
  EXPECT_EQ(*ParseRoles(RoleNames(kAllRoles)), kAllRoles);
  EXPECT_EQ(*ParseRoles("admin"), kRoleAdmin);
  EXPECT_FALSE(ParseRoles("").ok());
  EXPECT_FALSE(ParseRoles("node,").ok());
}

}  // namespace
}  // namespace shelfmark::auth

namespace shelfmark::auth {
namespace {

TEST(TokenTableTest, AdminTokenIsTheFirstUnboundAdmin) {
  std::string error;
  auto table = TokenTable::Parse(
      "client c1-0123456789abcdef\nclient acme-admin-0123456789 tenant=acme\n"
      "admin a1-0123456789abcdef\nadmin a2-0123456789abcdef\n",
      &error);
  ASSERT_TRUE(table.ok()) << error;
  EXPECT_EQ(table->AdminToken(), "a1-0123456789abcdef");
  auto no_admin = TokenTable::Parse("client c1-0123456789abcdef\nnode n1-0123456789abcdef\n",
                                    &error);
  ASSERT_TRUE(no_admin.ok()) << error;
  EXPECT_EQ(no_admin->AdminToken(), "");
  EXPECT_EQ(TokenTable::Single("all").AdminToken(), "all");
}

}  // namespace
}  // namespace shelfmark::auth
