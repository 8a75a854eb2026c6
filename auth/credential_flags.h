// CredentialFlags: the token flags every Shelfmark program takes, read the
// same way everywhere (docs/security.md, "Tokens"):
//   --cluster_token_file=PATH | --cluster_token=T | $SHELFMARK_CLUSTER_TOKEN
//       the cluster token: proven to nodes and by nodes on the data plane,
//       and to the master unless a master token is given;
//   --master_token_file=PATH | $SHELFMARK_MASTER_TOKEN
//       a token of its own for the master (clusters that give nodes,
//       clients and admins different roles: auth/token_table.h).
// A literal --cluster_token is accepted with a warning (ps shows it).
#pragma once

#include <string>
#include <string_view>

#include "common/flags.h"
#include "common/result.h"

namespace shelfmark::auth {

struct Credentials {
  std::string cluster_token;  // data plane ("" = none)
  std::string master_token;   // control plane ("" = no handshake)
};

struct CredentialFlags {
  std::string cluster_token_file;
  std::string cluster_token;
  std::string master_token_file;

  // Registers the three flags on `flags`; `this` must outlive its Parse.
  void Add(FlagSet& flags);
  // The tokens the flags and environment give. Warnings and errors go to
  // stderr as "<program>: ..." lines; errors (an unreadable or malformed
  // file, a token of several words) are returned.
  Result<Credentials> Resolve(std::string_view program) const;
};

}  // namespace shelfmark::auth
