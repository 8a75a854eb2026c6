// LookupSession: the master's side of one lookup channel connection
// (rpc/lookup_wire.h): GetReplicaList and its batch form, and the token
// handshake before them. It answers exactly as the Cap'n Proto service
// does for the same calls: the same roles (any authenticated role may
// look up), the same tenant binding checks (ConnectionAuth), the same
// leadership gate (NOT_LEADER from a standby, master/leadership_gate.h), the same
// directory calls and the same per-method metrics
// (shelfmark_master_rpc_*{method="GetReplicaList"|"BatchGetReplicaList"|
// "AuthChallenge"|"Authenticate"}).
//
// Thread safety: a session belongs to its connection's event-loop thread.
#pragma once

#include <string>
#include <string_view>

#include "master/connection_auth.h"
#include "rpc/lookup_wire.h"

namespace shelfmark {

namespace master_internal {
struct SharedState;
enum Method : int;
}

class LookupSession {
 public:
  // `shared` must outlive the session; `peer` is the caller's address.
  LookupSession(master_internal::SharedState& shared, std::string peer);

  // Answers one request frame's body: appends exactly one reply frame to
  // *out. False when the connection must end once that reply is out (an
  // unauthenticated call, a failed handshake, a malformed request).
  bool Handle(std::string_view body, std::string* out);

 private:
  // The role, tenant and leadership checks of a lookup `method` (the Cap'n
  // Proto service's own, master/service_shared.h).
  ErrorCode Admit(master_internal::Method method);
  bool Challenge(std::string* out);
  bool Authenticate(std::string* out);
  bool Get(std::string* out);
  bool BatchGet(std::string* out);

  master_internal::SharedState& s_;
  ConnectionAuth auth_;
  LookupRequest request_;  // the request being answered (its key list's capacity is reused)
  GetReplicaListResponse response_;  // each key's answer, its memory reused
};

}  // namespace shelfmark
