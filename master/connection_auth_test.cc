#include "master/connection_auth.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

auth::TokenTable Table() {
  std::string error;
  auto t = auth::TokenTable::Parse(
      "node n-tok-0123456789abc\nclient c-tok-0123456789abc tenant=acme\n"
      "admin a-tok-0123456789abc\n",
      &error);
  EXPECT_TRUE(t.ok()) << error;
  return *t;
}

// Runs the client's half of the handshake against `conn` with `token`.
Result<ConnectionAuth::Granted> Handshake(ConnectionAuth& conn, const std::string& token) {
  const auth::Nonce server = conn.Challenge();
  const auth::Nonce client = auth::NewNonce();
  const auth::Proof proof =
      auth::Prove(token, auth::kMasterClientLabel, {auth::Bytes(server), auth::Bytes(client)});
  auto granted = conn.Authenticate(auth::Bytes(client), auth::BytesOf(proof));
  if (granted.ok()) {
    // The master's proof is the one only a holder of `token` can make.
    EXPECT_EQ(granted->server_proof, auth::Prove(token, auth::kMasterServerLabel,
                                                 {auth::Bytes(server), auth::Bytes(client)}));
  }
  return granted;
}

TEST(ConnectionAuthTest, WithoutTokensEverythingIsAdmitted) {
  AuthPolicy open{auth::TokenTable()};
  ConnectionAuth conn(open, "10.0.0.1");
  EXPECT_FALSE(conn.required());
  EXPECT_EQ(conn.Admit(auth::kRoleAdmin), ErrorCode::OK);
  EXPECT_EQ(conn.Check({"any", true, true}), ErrorCode::OK);
  EXPECT_EQ(conn.Authenticate("", "").error(), ErrorCode::INVALID_PARAMS);
}

TEST(ConnectionAuthTest, NothingButTheHandshakeBeforeIt) {
  AuthPolicy policy(Table());
  ConnectionAuth conn(policy, "10.0.0.1");
  EXPECT_EQ(conn.Admit(auth::kAllRoles), ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(policy.counters.calls_unauthenticated.load(), 1u);
}

TEST(ConnectionAuthTest, RolesAndTenantOfTheProvenToken) {
  AuthPolicy policy(Table());
  ConnectionAuth conn(policy, "10.0.0.1");
  auto granted = Handshake(conn, "c-tok-0123456789abc");
  ASSERT_TRUE(granted.ok());
  EXPECT_EQ(granted->roles, auth::kRoleClient);
  EXPECT_EQ(granted->tenant, "acme");
  EXPECT_EQ(conn.Admit(auth::kRoleClient), ErrorCode::OK);
  EXPECT_EQ(conn.Admit(auth::kRoleNode), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(conn.Check({"acme"}), ErrorCode::OK);
  EXPECT_EQ(conn.Check({"other"}), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(conn.Check({""}), ErrorCode::PERMISSION_DENIED);  // the default tenant
  EXPECT_EQ(conn.Check({"acme", false, /*force=*/true}), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(conn.Check({"acme", /*all_tenants=*/true}), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(policy.counters.calls_denied.load(), 5u);
}

TEST(ConnectionAuthTest, OneTryPerChallengeAndFailuresCountAgainstThePeer) {
  AuthPolicy policy(Table(), {2, 0.001, 16});
  ConnectionAuth conn(policy, "10.0.0.9");
  EXPECT_EQ(Handshake(conn, "wrong").error(), ErrorCode::UNAUTHENTICATED);
  // The challenge was used up by the failed try.
  const auth::Nonce client = auth::NewNonce();
  EXPECT_EQ(conn.Authenticate(auth::Bytes(client), std::string(32, 'x')).error(),
            ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(Handshake(conn, "a-tok-0123456789abc").error(), ErrorCode::RATE_LIMITED);
  ConnectionAuth elsewhere(policy, "10.0.0.10");
  EXPECT_TRUE(Handshake(elsewhere, "a-tok-0123456789abc").ok()) << "another address is not limited";
  EXPECT_EQ(policy.counters.handshakes_failed.load(), 2u);
  EXPECT_EQ(policy.counters.handshakes_rate_limited.load(), 1u);
  EXPECT_EQ(policy.counters.handshakes_ok.load(), 1u);
}

TEST(ConnectionAuthTest, AClientNonceOfTheWrongSizeFails) {
  AuthPolicy policy(Table());
  ConnectionAuth conn(policy, "10.0.0.1");
  const auth::Nonce server = conn.Challenge();
  const std::string short_nonce = "abc";
  const auth::Proof proof =
      auth::Prove("a-tok-0123456789abc", auth::kMasterClientLabel,
                  {auth::Bytes(server), short_nonce});
  EXPECT_EQ(conn.Authenticate(short_nonce, auth::BytesOf(proof)).error(),
            ErrorCode::UNAUTHENTICATED);
}

}  // namespace
}  // namespace shelfmark
