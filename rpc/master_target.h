// MasterTarget: where a MasterClient's calls go (docs/ha.md, "Finding the
// leader"): a fixed "host:port" (used as given, as before HA), or
// "etcd://H:P[;H:P...]": the leader of cluster `cluster_id`, resolved from
// etcd's leader key (ha::ResolveLeader) on first use and again after the
// owner marks it suspect (a call answered NOT_LEADER or failed in
// transport).
//
// Thread safety: one thread (the owning MasterClient's).
#pragma once

#include <cstdint>
#include <string>

#include "common/error_code.h"
#include "ha/master_address.h"

namespace shelfmark {

class MasterTarget {
 public:
  // `cluster_id` "" : ha::ResolveClusterId (environment, then the default).
  MasterTarget(std::string address, std::string_view cluster_id);

  bool follows_leader() const { return follows_leader_; }
  // host:port to connect to: the fixed address, or the leader last resolved
  // ("" before the first resolution succeeded).
  const std::string& address() const { return address_; }
  const std::string& cluster_id() const { return cluster_id_; }

  // The next Refresh asks etcd again (no effect on a fixed address).
  void Suspect() { suspect_ = true; }
  bool needs_refresh() const { return follows_leader_ && (suspect_ || address_.empty()); }

  // When needs_refresh(): asks etcd for the leader, waiting up to
  // `timeout_ms` (>= 1) for one to be published. OK (address() set,
  // *changed when it differs from before); RPC_FAIL when no leader was
  // found (etcd unreachable, no key, a value that is not host:port);
  // INVALID_PARAMS for an etcd:// address or cluster id that does not
  // parse. OK at once otherwise.
  ErrorCode Refresh(int64_t timeout_ms, bool* changed);

 private:
  bool follows_leader_ = false;
  bool usable_ = true;  // the etcd:// address and cluster id parsed
  ha::MasterAddress etcd_;
  std::string cluster_id_;
  std::string address_;
  bool suspect_ = false;
};

}  // namespace shelfmark
