// MasterServiceFactory: the Cap'n Proto MasterService (schemas/master.capnp)
// implemented over a Directory. Each event-loop thread gets its own service
// object (it keeps per-thread scratch buffers); all of them share the
// directory and the per-method metrics registered once at construction:
//   shelfmark_master_rpc_requests_total{method="M"},
//   shelfmark_master_rpc_failures_total{method="M"} (whole-call answer not OK),
//   shelfmark_master_rpc_latency_seconds{method="M"} (server-side handling time).
//
// Authentication (master/connection_auth.h): each connection gets its own
// service object, which knows who is calling on it. With tokens, every call
// but the handshake needs one of the method's roles (the table in
// master_service.cc), and calls naming a tenant, `force` or all tenants pass
// the token's tenant binding and admin checks. An unauthenticated call is
// answered UNAUTHENTICATED and then the connection is closed
// (ConnectionHooks::close_after_reply); a call outside the token's rights
// answers PERMISSION_DENIED. Metrics:
//   shelfmark_master_auth_handshakes_total{result="ok|failed|rate_limited"},
//   shelfmark_master_auth_refused_calls_total{reason="unauthenticated|permission_denied"}.
//
// Leadership (master/leadership_gate.h): with a gate, every call but the
// handshake first passes LeadershipGate::Admit with the method's kind
// (service_shared.h); a refusal answers NOT_LEADER. No gate: always open.
//
// Robustness: a request that fails to decode (bad enum, oversized list, a
// kj exception from the reader) is answered INVALID_PARAMS; batches longer
// than `max_batch` are refused whole.
//
// Thread safety: NewService() may be called from any thread; each returned
// service is used by one connection on one event loop. The Directory, the registry and
// the gate must outlive the factory and its services.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <capnp/capability.h>

#include "auth/handshake_limiter.h"
#include "auth/token_table.h"

namespace shelfmark {

class Directory;
class MetricsRegistry;

struct AuthCounters;
struct AuthPolicy;
class LeadershipGate;
class LookupSession;
class ReplicationLeader;

// What a service knows of its connection.
struct ConnectionHooks {
  std::string peer;                       // the caller's address, e.g. "10.0.0.7"
  std::function<void()> close_after_reply;  // ends the connection once the reply is out
};

class MasterServiceFactory {
 public:
  // An empty `tokens` table: no authentication (every call served).
  MasterServiceFactory(Directory& directory, MetricsRegistry* metrics /*nullable*/,
                       size_t max_batch, auth::TokenTable tokens = {},
                       auth::HandshakeLimits limits = {}, LeadershipGate* gate = nullptr);
  ~MasterServiceFactory();
  MasterServiceFactory(const MasterServiceFactory&) = delete;
  MasterServiceFactory& operator=(const MasterServiceFactory&) = delete;

  // The service of one connection.
  capnp::Capability::Client NewService(ConnectionHooks hooks) const;
  // The service of one lookup channel connection (master/lookup_session.h)
  // from `peer` (the caller's address): same directory, tokens and metrics.
  std::unique_ptr<LookupSession> NewLookupSession(std::string peer) const;
  // Mutations wait for `replication`'s standbys before they are answered
  // (null: no wait). Before the first connection; it must outlive the factory.
  void SetReplication(ReplicationLeader* replication);
  const AuthCounters& auth_counters() const;
  bool auth_required() const;
  // The policy every connection's handshake passes (a hot standby's too:
  // RpcServerOptions::on_standby); it lives as long as any holder.
  std::shared_ptr<AuthPolicy> auth_policy() const;

 private:
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

}  // namespace shelfmark
