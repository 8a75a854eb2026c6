// MasterTarget: where a MasterClient's calls go (docs/ha.md, "Finding the
// leader"): a fixed "host:port" (used as given, as before HA), or
// "etcd://H:P[;H:P...]": the leader of cluster `cluster_id`, resolved from
// etcd's leader key (ha::ResolveLeader) on first use and again after the
// owner marks it suspect (a call answered NOT_LEADER or failed in
// transport).
//
// Leader hints (docs/ha.md, "NOT_LEADER names the leader"): a NOT_LEADER
// answer may name the leader; a target that follows hints (every etcd://
// one, a fixed one when asked to) goes there at once, without asking etcd.
// One hop only: a hint is taken only from an address that did not itself
// come from a hint, so two masters naming each other cannot bounce a client;
// a hinted address that fails (LeaveHint) sends the target back to etcd or
// to its configured address.
//
// Thread safety: one thread (the owning MasterClient's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error_code.h"
#include "ha/master_address.h"

namespace shelfmark {

class MasterTarget {
 public:
  // `cluster_id` "" : ha::ResolveClusterId (environment, then the default).
  // `fixed_follows_hints`: a host:port target follows hints too (an
  // etcd:// one always does).
  MasterTarget(std::string address, std::string_view cluster_id,
               bool fixed_follows_hints = false);

  bool follows_leader() const { return follows_leader_; }
  bool follows_hints() const { return follows_leader_ || fixed_follows_hints_; }
  // host:port to connect to: the fixed address, the leader last resolved
  // ("" before the first resolution succeeded), or the leader a hint named.
  const std::string& address() const { return address_; }
  const std::string& cluster_id() const { return cluster_id_; }
  // address() came from a hint.
  bool hinted() const { return hinted_; }

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

  // A NOT_LEADER answer named `leader`: true when calls go there from now
  // on. False (nothing changes) when this target does not follow hints,
  // `leader` is empty or not host:port, is where calls go already, or
  // address() is itself a hint (the one hop).
  bool FollowHint(std::string_view leader);
  // The hinted address failed: an etcd:// target asks etcd next (Suspect),
  // a fixed one goes back to its configured address. True when address()
  // changed.
  bool LeaveHint();

 private:
  bool follows_leader_ = false;
  bool fixed_follows_hints_ = false;
  bool usable_ = true;  // the etcd:// address and cluster id parsed
  ha::MasterAddress etcd_;
  std::string cluster_id_;
  std::string configured_;  // a fixed address as given
  std::string address_;
  bool suspect_ = false;
  bool hinted_ = false;
};

}  // namespace shelfmark
