#include "perf/master_flags.h"

#include <cstdio>

#include "ha/master_address.h"

namespace shelfmark {

void AddMasterFlags(FlagSet* flags, std::string* master, std::string* cluster_id) {
  flags->AddString("master", master,
                   "HOST:PORT of shelfmark-master's RPC, or etcd://HOST:PORT[;HOST:PORT...]: "
                   "follow the leader published in etcd");
  flags->AddString("cluster_id", cluster_id,
                   "with an etcd:// --master: the cluster whose leader to follow (\"\" = "
                   "$SHELFMARK_CLUSTER_ID, else $MC_STORE_CLUSTER_ID, else \"shelfmark\")");
}

std::string CheckMasterFlags(const std::string& master, const std::string& cluster_id) {
  return ha::MasterFlagError("master", master, cluster_id);
}

bool FollowsLeader(const std::string& master) { return master.rfind("etcd://", 0) == 0; }

std::optional<auth::Credentials> ParseWithMaster(FlagSet& flags, int argc,
                                                 const char* const* argv,
                                                 const std::string& master,
                                                 const std::string& cluster_id,
                                                 const auth::CredentialFlags& credential_flags) {
  flags.ParseOrExit(argc, argv);
  if (std::string error = CheckMasterFlags(master, cluster_id); !error.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return std::nullopt;
  }
  auto credentials = credential_flags.Resolve(argv[0]);  // prints why it fails
  if (!credentials.ok()) return std::nullopt;
  return *credentials;
}

}  // namespace shelfmark
