#include "perf/master_flags.h"

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

}  // namespace shelfmark
