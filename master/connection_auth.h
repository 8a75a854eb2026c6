// ConnectionAuth: who is calling on one RPC connection, and what it may do
// (docs/security.md; schemas/master.capnp, authChallenge / authenticate).
//
// A master with an empty TokenTable authenticates nobody: every connection
// may make every call. With tokens, a connection starts unauthenticated;
// Challenge() issues a fresh nonce, Authenticate() checks the caller's proof
// against every token (TokenTable::Identify), and on success the connection
// acts with that token's roles and tenant until it closes. One try per
// challenge; failed tries count against the peer's address
// (auth::HandshakeLimiter), and while its budget is spent its tries are
// refused unchecked (RATE_LIMITED).
//
// Thread safety: a ConnectionAuth belongs to its connection's event-loop
// thread. AuthPolicy is shared by every loop (immutable but for its
// thread-safe limiter and atomic counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "auth/handshake_limiter.h"
#include "auth/proof.h"
#include "auth/token_table.h"
#include "common/clock.h"
#include "common/error_code.h"

namespace shelfmark {

// Handshake outcomes and refused calls since start (metrics).
struct AuthCounters {
  std::atomic<uint64_t> handshakes_ok{0};
  std::atomic<uint64_t> handshakes_failed{0};
  std::atomic<uint64_t> handshakes_rate_limited{0};
  std::atomic<uint64_t> calls_unauthenticated{0};  // answered UNAUTHENTICATED, connection closed
  std::atomic<uint64_t> calls_denied{0};           // answered PERMISSION_DENIED
};

// The master's tokens and the state all connections share.
struct AuthPolicy {
  explicit AuthPolicy(auth::TokenTable table, auth::HandshakeLimits limits = {})
      : tokens(std::move(table)), limiter(clock, limits) {}
  bool required() const { return !tokens.empty(); }
  // Every handshake of the master's port passes these, whichever protocol
  // checks its proof (this file's ConnectionAuth; a hot standby's,
  // replication/replication_leader.h): false, counted rate_limited, while
  // `peer` has no failures left (refuse its handshake unchecked)...
  bool AdmitHandshake(std::string_view peer);
  // ...and then its outcome is counted, a failure charged to `peer`.
  void HandshakeDone(std::string_view peer, bool ok);

  const auth::TokenTable tokens;
  SteadyClock clock;
  auth::HandshakeLimiter limiter;
  AuthCounters counters;
};

// What a call touches, for the tenant and escalation checks.
struct CallScope {
  std::string_view tenant;   // "" = the default tenant
  bool all_tenants = false;  // needs admin, and no tenant binding
  bool force = false;        // needs admin
};

class ConnectionAuth {
 public:
  // `policy` must outlive this; `peer` is the caller's address (the
  // limiter's key).
  ConnectionAuth(AuthPolicy& policy, std::string peer);

  bool required() const { return policy_.required(); }

  // A fresh nonce; replaces any earlier one of this connection.
  auth::Nonce Challenge();

  struct Granted {
    auth::Proof server_proof;
    uint32_t roles = 0;
    std::string tenant;
  };
  // Checks `proof` for the live challenge. UNAUTHENTICATED (no challenge,
  // a nonce of the wrong size or a wrong proof), RATE_LIMITED, or
  // INVALID_PARAMS when the master has no tokens.
  Result<Granted> Authenticate(std::string_view client_nonce, std::string_view proof);

  // May the connection make a call any of `roles` may make? OK,
  // UNAUTHENTICATED (no handshake yet: the caller closes the connection) or
  // PERMISSION_DENIED. Counts refusals.
  ErrorCode Admit(uint32_t roles);
  // May it touch `scope`? OK or PERMISSION_DENIED (counted).
  ErrorCode Check(const CallScope& scope);

 private:
  AuthPolicy& policy_;
  const std::string peer_;
  std::optional<auth::Nonce> challenge_;
  bool authenticated_ = false;
  uint32_t roles_ = 0;
  std::string tenant_;
};

}  // namespace shelfmark
