// TokenTable: the master's tokens and what each may do (docs/security.md).
//
// File format (shelfmark-master --cluster_token_file), one token per line,
// '#' starts a comment line:
//     TOKEN                          every role, every tenant (one-token clusters)
//     ROLES TOKEN [tenant=NAME]      ROLES: comma-separated node, client, admin
// `tenant=` binds a client token to one tenant: each call it makes must name
// that tenant, and the calls across tenants are refused. It applies to
// client-only tokens (a node serves every tenant; an admin acts across them).
// A token appears once. A token is at least kMinTokenBytes of printable
// ASCII without spaces, and neither role words ("admin", "node,client": a
// line that gives no token but a role, or roles twice, is a mistake that
// would make a guessable word a token) nor `tenant=...` (WeakTokenReason).
//
// Identify() finds which token made a proof (the handshake never names the
// token, so a table entry is found by trying each: tables are short).
//
// Thread safety: immutable after construction; const methods thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "auth/proof.h"
#include "common/result.h"

namespace shelfmark::auth {

// Role bits.
enum Role : uint32_t {
  kRoleNode = 1u << 0,    // mount/unmount its segments, ping, offload reports
  kRoleClient = 1u << 1,  // put, get, exist, stat, list and remove (not forced) in its tenant
  kRoleAdmin = 1u << 2,   // forced removal, RemoveAll, listing across tenants, and client's calls
};
inline constexpr uint32_t kAllRoles = kRoleNode | kRoleClient | kRoleAdmin;

// "node,client" for a role mask ("none" for 0).
std::string RoleNames(uint32_t roles);
// The mask of "node,client,admin"-style text; INVALID_PARAMS on an unknown
// or empty name.
Result<uint32_t> ParseRoles(std::string_view text);

// The shortest token a table accepts (e.g. `openssl rand -base64 32` gives 44).
inline constexpr size_t kMinTokenBytes = 16;

// Why `token` may not be a table's token ("" when it may): shorter than
// kMinTokenBytes, not printable ASCII, a role word or a list of them, or a
// `tenant=` word.
std::string WeakTokenReason(std::string_view token);

struct TokenEntry {
  std::string token;
  uint32_t roles = 0;
  std::string tenant;  // "" = every tenant
};

class TokenTable {
 public:
  TokenTable() = default;  // empty: the master authenticates nobody and serves all

  // Parses the file format above. INVALID_PARAMS (with `*error` naming the
  // line) on a bad line, a weak token, a repeated token or a bound
  // non-client token.
  static Result<TokenTable> Parse(std::string_view text, std::string* error);
  // Reads and parses a file: FILE_NOT_FOUND / FILE_READ_FAIL, or Parse's.
  // `*warning` (if given) is set when others may read the file.
  static Result<TokenTable> Load(const std::string& path, std::string* error,
                                 std::string* warning = nullptr);
  // A table of one all-roles token.
  static TokenTable Single(std::string token);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

  // The entry whose token made `proof` = Prove(token, kMasterClientLabel,
  // {server_nonce, client_nonce}); null when none did.
  const TokenEntry* Identify(std::string_view server_nonce, std::string_view client_nonce,
                             std::string_view proof) const;
  // The first token with the admin role and no tenant binding ("" when
  // none): what a master proves to its peers (a hot standby to its leader).
  std::string AdminToken() const;

 private:
  std::vector<TokenEntry> entries_;
};

}  // namespace shelfmark::auth
