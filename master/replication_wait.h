// The replication acknowledgement both of the master's request paths give a
// mutation (the Cap'n Proto service, master_service.cc, and the framed
// channel's sessions, lookup_session.h): with hot standbys, a mutation that
// succeeded here is answered only once enough standbys hold it
// (ReplicationLeader::WhenReplicated), and only if this master may still
// acknowledge then (the fence is checked again: a leader cut off from etcd
// and its standbys never acknowledges a change that exists only here);
// otherwise the answer is NOT_LEADER and the caller asks the new leader,
// where the change does not exist.
//
// Thread safety: called on a connection's loop thread; the promise is
// fulfilled across threads.
#pragma once

#include <cstdint>
#include <optional>

#include <kj/async.h>

#include "common/error_code.h"
#include "master/service_shared.h"

namespace shelfmark::master_internal {

// The sequence a successful call of `kind` must see replicated before it
// is answered; nullopt when it need not wait (not a mutation, no standbys).
// Allocations (a put's start) wait too: their client must not write into
// ranges no standby holds (docs/ha.md, "A put's start waits too").
std::optional<uint64_t> ReplicationSeq(const SharedState& s, CallKind kind);

// A promise fulfilled once the directory's changes up to `seq` are
// replicated (or the waiters were released, see above); nullopt when they
// already are.
std::optional<kj::Promise<void>> WaitReplicated(const SharedState& s, uint64_t seq);

// The answer of a call whose wait for `seq` ended: OK when it is
// replicated and the gate still admits mutations; else NOT_LEADER (even if
// the fence holds again by now).
ErrorCode AfterReplicated(SharedState& s, uint64_t seq);

}  // namespace shelfmark::master_internal
