#include "auth/token_table.h"

#include <gtest/gtest.h>

namespace shelfmark::auth {
namespace {

std::string ProofFor(std::string_view token, const Nonce& s, const Nonce& c) {
  return std::string(BytesOf(Prove(token, kMasterClientLabel, {Bytes(s), Bytes(c)})));
}

TEST(TokenTableTest, ParsesRolesTenantsAndBareTokens) {
  std::string error;
  auto t = TokenTable::Parse(
      "# roles\nall-token\nnode node-token\nclient,admin ops-token\n"
      "client acme-token tenant=acme\n",
      &error);
  ASSERT_TRUE(t.ok()) << error;
  EXPECT_EQ(t->size(), 4u);
  Nonce s = NewNonce(), c = NewNonce();
  const TokenEntry* e = t->Identify(Bytes(s), Bytes(c), ProofFor("acme-token", s, c));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->roles, kRoleClient);
  EXPECT_EQ(e->tenant, "acme");
  e = t->Identify(Bytes(s), Bytes(c), ProofFor("all-token", s, c));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->roles, kAllRoles);
  e = t->Identify(Bytes(s), Bytes(c), ProofFor("ops-token", s, c));
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
      "",                                  // no token
      "# nothing\n",                       // no token
      "root tok\n",                        // unknown role
      "node, tok\n",                       // empty role name
      "client tok nottenant\n",            // third word
      "node tok tenant=acme\n",            // bound non-client token
      "client tok tenant=\n",              // empty tenant
      "a\nclient a\n",                     // repeated token
      "client a tenant=x extra\n",         // too many words
  };
  for (const char* text : bad) {
    std::string error;
    auto t = TokenTable::Parse(text, &error);
    EXPECT_EQ(t.error(), ErrorCode::INVALID_PARAMS) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
  std::string error;
  EXPECT_FALSE(TokenTable::Parse("ok\nroot tok\n", &error).ok());
  EXPECT_EQ(error.rfind("line 2:", 0), 0u) << error;
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
  auto table = TokenTable::Parse("client c1\nclient acme-admin tenant=acme\nadmin a1\nadmin a2\n",
                                 &error);
  ASSERT_TRUE(table.ok()) << error;
  EXPECT_EQ(table->AdminToken(), "a1");
  auto no_admin = TokenTable::Parse("client c1\nnode n1\n", &error);
  ASSERT_TRUE(no_admin.ok()) << error;
  EXPECT_EQ(no_admin->AdminToken(), "");
  EXPECT_EQ(TokenTable::Single("all").AdminToken(), "all");
}

}  // namespace
}  // namespace shelfmark::auth
