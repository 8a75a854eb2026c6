// MemberRegistration: one master's claim on its published address in its
// cluster: the key "shelfmark/<cluster_id>/members/<address>"
// (ha/leader_key.h MemberKey), created only if absent and attached to a
// lease of its own that a background thread renews. A second master
// publishing the same address in the same cluster finds the key held and
// refuses to start (docs/ha.md, "The master's role").
//
// A holder that crashed leaves the key until etcd expires its lease, so
// Register waits (bounded: the lease TTL and a second) for a held key to go
// before it refuses: a restarted master reclaims its own address, a live
// duplicate keeps renewing and is refused. An etcd that does not answer is
// tried again within the same bound (a busy etcd is no reason to exit).
//
// After a renewal finds the lease gone (etcd expired it while unreachable),
// the thread claims the key again on a new lease; while another process
// holds it, claims_lost() counts and the thread keeps trying.
//
// Thread safety: Register and Stop from one owner thread; the accessors
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/host_port.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "ha/etcd_client.h"

namespace shelfmark::ha {

struct MemberRegistrationOptions {
  std::vector<HostPort> etcd_endpoints;
  std::string cluster_id;  // ValidClusterId
  std::string address;     // the master's published RPC address
  std::string holder;      // the key's value: who holds it (host and pid), for errors
  int lease_ttl_s = 2;
  int request_timeout_ms = 500;  // per etcd request and endpoint
};

class MemberRegistration {
 public:
  explicit MemberRegistration(MemberRegistrationOptions options);
  ~MemberRegistration();  // Stop()
  MemberRegistration(const MemberRegistration&) = delete;
  MemberRegistration& operator=(const MemberRegistration&) = delete;

  // Claims the key and starts renewing it. Errors, with *error set to a
  // sentence for the operator: ETCD_OPERATION_ERROR (etcd did not answer:
  // EtcdClient::last_error()), ETCD_TRANSACTION_FAIL (another live master
  // holds the key; *error names its holder), INVALID_PARAMS for bad options.
  ErrorCode Register(std::string* error);
  // Ends the thread, revokes the lease (deleting the key). Idempotent.
  void Stop();

  const std::string& key() const { return key_; }
  uint64_t claims_lost() const { return claims_lost_.load(); }

 private:
  using Clock = std::chrono::steady_clock;

  // One lease grant and create-if-absent: OK (lease_id_ set) or the error;
  // *holder is the holding value when the key is held.
  ErrorCode ClaimOnce(std::string* holder);
  void Run();
  bool WaitUntil(Clock::time_point until);

  const MemberRegistrationOptions options_;
  const std::string key_;
  std::unique_ptr<EtcdClient> etcd_;
  std::thread thread_;
  int64_t lease_id_ = 0;          // the thread's (the owner's before and after it)
  int64_t granted_ttl_s_ = 0;
  std::atomic<uint64_t> claims_lost_{0};

  Mutex mu_;
  std::condition_variable_any cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace shelfmark::ha
