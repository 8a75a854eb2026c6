// LookupSession: the master's side of one lookup channel connection
// (rpc/lookup_wire.h, rpc/mutation_wire.h): GetReplicaList and its batch
// form; PutStart, PutEnd, PutRevoke, ExistKey, Remove and their batch
// forms; ReservePut and CommitPut (the one-round-trip put) and their batch
// forms (this channel's only); and the token handshake before them. It answers exactly as the
// Cap'n Proto service does for the same calls: the same roles
// (service_shared.h's table), the same tenant binding and `force` checks
// (ConnectionAuth), the same leadership gate (NOT_LEADER from a standby,
// and for mutations from a fenced leader, master/leadership_gate.h), the
// same directory calls, the same replication acknowledgement
// (master/replication_wait.h) and the same per-method metrics
// (shelfmark_master_rpc_*{method="..."}).
//
// Replication: a mutation that must wait for its standbys leaves its reply
// pending (pending()); the connection answers nothing after it until
// WaitPending() is done and FinishPending() settled the reply, so replies
// stay in request order.
//
// Thread safety: a session belongs to its connection's event-loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kj/async.h>

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

  // The last Handle left its reply waiting for replication.
  bool pending() const { return pending_.has_value(); }
  // Fulfilled once the pending reply's change is replicated (or the wait
  // was released); then FinishPending(out) with the same *out Handle
  // wrote the reply into (nothing appended since) keeps it, or replaces
  // it with NOT_LEADER, and counts the call.
  kj::Promise<void> WaitPending();
  void FinishPending(std::string* out);

 private:
  // A reply waiting for replication.
  struct Pending {
    master_internal::Method method;
    std::chrono::steady_clock::time_point start;
    uint64_t seq = 0;
    size_t reply_at = 0;  // where its reply frame starts in *out
    std::optional<kj::Promise<void>> wait;
  };

  // Runs one call of `method` on `tenant` (`force`: the removal flag the
  // token must allow): the role, tenant and leadership checks; then
  // `answer()`, which appends the reply and returns the whole-call code
  // (any other answer: the refusal's code reply); then the replication
  // wait (pending) or the metrics. False when the connection must end.
  template <typename Answer>
  bool Serve(master_internal::Method method, bool force, std::string* out, Answer&& answer);
  bool PutStart(std::string* out);
  bool PutFinish(std::string* out);
  bool BatchPutStart(std::string* out);
  bool BatchPutFinish(std::string* out);
  bool ReservePut(std::string* out);
  bool CommitPut(std::string* out);
  bool BatchReservePut(std::string* out);
  bool BatchCommitPut(std::string* out);
  bool Exist(std::string* out);
  bool BatchExist(std::string* out);
  bool Remove(std::string* out);
  bool BatchRemove(std::string* out);

  // The role, tenant and leadership checks of a lookup `method` (the Cap'n
  // Proto service's own, master/service_shared.h).
  ErrorCode Admit(master_internal::Method method, bool force = false);
  bool Challenge(std::string* out);
  bool Authenticate(std::string* out);
  bool Get(std::string* out);
  bool BatchGet(std::string* out);

  master_internal::SharedState& s_;
  ConnectionAuth auth_;
  LookupRequest request_;  // the request being answered (its key list's capacity is reused)
  GetReplicaListResponse response_;  // each key's answer, its memory reused
  std::optional<Pending> pending_;
};

}  // namespace shelfmark
