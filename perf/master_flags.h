// The --master and --cluster_id flags of every shelfmark-perf benchmark that
// talks to a master: "host:port", or "etcd://H:P[;H:P...]" to follow the
// leader published in etcd (docs/ha.md, "Finding the leader").
//
// Thread safety: reentrant.
#pragma once

#include <optional>
#include <string>

#include "auth/credential_flags.h"
#include "common/flags.h"

namespace shelfmark {

void AddMasterFlags(FlagSet* flags, std::string* master, std::string* cluster_id);

// "" when both are usable; else a usage error naming the flag
// (ha::MasterFlagError).
std::string CheckMasterFlags(const std::string& master, const std::string& cluster_id);

// Whether `master` names etcd endpoints (etcd://...) rather than a master.
bool FollowsLeader(const std::string& master);

// Parses `flags` (--help and malformed flags exit there), checks --master and
// --cluster_id and resolves the credentials; nullopt, the reason printed,
// when either is wrong (the caller exits 2).
std::optional<auth::Credentials> ParseWithMaster(FlagSet& flags, int argc,
                                                 const char* const* argv,
                                                 const std::string& master,
                                                 const std::string& cluster_id,
                                                 const auth::CredentialFlags& credential_flags);

}  // namespace shelfmark
