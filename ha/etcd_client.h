// EtcdClient: a small synchronous etcd v3 client over etcd's gRPC JSON
// gateway (HTTP/1.1 POST of JSON to /v3/...; ha/etcd_wire.h has the bodies),
// with libcurl. Just what leader election needs: leases, get, put, and two
// transactions on a key's create_revision. docs/ha.md says why the gateway
// and not gRPC.
//
// Endpoints are tried in order, starting with the last one that answered;
// a transport failure (refused, timeout, not HTTP, a reply over
// `max_reply_bytes`) or an HTTP 5xx moves on to the next. Each attempt is bounded by `request_timeout_ms`, so a call takes
// at most endpoints x request_timeout_ms.
//
// Errors: ETCD_OPERATION_ERROR when no endpoint answered or etcd answered
// an error; ETCD_KEY_NOT_EXIST for a lease etcd no longer knows;
// DATA_CORRUPTED for a 200 reply that is not what the gateway sends (not
// JSON, over the JSON reader's limits, wrong fields). last_error() has the text (endpoint, operation,
// cause) of the latest failure.
//
// Thread safety: every method may be called from any thread at once; each
// request uses its own curl handle.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_port.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "ha/etcd_wire.h"

namespace shelfmark::ha {

// "H:P[;H:P...]" (',' also separates; an "http://" prefix is allowed): the
// endpoints in order; INVALID_PARAMS when empty or one is not host:port.
Result<std::vector<HostPort>> ParseEtcdEndpoints(std::string_view text);

struct EtcdClientOptions {
  std::vector<HostPort> endpoints;
  int request_timeout_ms = 1000;        // per attempt (connect included)
  size_t max_reply_bytes = 1 << 20;     // a larger reply fails that endpoint
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // A lease of `ttl_s` seconds; etcd may grant a longer TTL (its minimum is
  // derived from its election timeout), which the answer carries.
  Result<EtcdLease> LeaseGrant(int64_t ttl_s);
  // One renewal; the TTL the lease has again. ETCD_KEY_NOT_EXIST when etcd
  // no longer knows the lease (expired or revoked).
  Result<int64_t> LeaseKeepAliveOnce(int64_t lease_id);
  // ETCD_KEY_NOT_EXIST when etcd does not know the lease.
  ErrorCode LeaseRevoke(int64_t lease_id);

  // The key, or nullopt when absent.
  Result<std::optional<EtcdKeyValue>> Get(std::string_view key);
  // lease 0: no lease.
  ErrorCode Put(std::string_view key, std::string_view value, int64_t lease = 0);
  // Puts the key (with `lease`) only if it does not exist, atomically; the
  // answer says whether it did, and otherwise who holds it. A non-empty
  // `record_key` is put (same value, no lease) in the same transaction.
  Result<EtcdCreateResult> CreateIfAbsent(std::string_view key, std::string_view value,
                                          int64_t lease, std::string_view record_key = {});
  // Deletes the key only while its create_revision is still
  // `create_revision` (it is still the one this caller created): OK when
  // deleted, ETCD_TRANSACTION_FAIL when absent or re-created since.
  ErrorCode DeleteIfCreatedAt(std::string_view key, int64_t create_revision);
  // Puts `key` (no lease) only while `guard_key`'s create_revision is
  // `guard_create_revision` (the caller's leadership still stands): OK when
  // put, ETCD_TRANSACTION_FAIL otherwise.
  ErrorCode PutIfCreatedAt(std::string_view guard_key, int64_t guard_create_revision,
                           std::string_view key, std::string_view value);

  // The latest failure's text ("" before any): endpoint, call and cause.
  std::string last_error() const;
  const EtcdClientOptions& options() const { return options_; }

 private:
  struct Reply {
    std::string endpoint;  // "host:port" that answered
    long status = 0;
    std::string body;
  };
  // POSTs `body` to `path`, failing over between endpoints; an HTTP reply of
  // status < 500 (any endpoint) or the last failure.
  Result<Reply> Post(std::string_view path, const std::string& body);
  // One attempt on one endpoint: a curl error text, or "" with *reply.
  std::string PostOnce(const HostPort& endpoint, std::string_view path,
                       const std::string& body, Reply* reply) const;
  // The decoded 200 reply, or the error of a non-200 one.
  template <typename T, typename Decode>
  Result<T> Call(std::string_view path, const std::string& body, Decode decode);
  ErrorCode Fail(ErrorCode code, std::string text);
  // A transaction guarded by a create_revision: OK when it succeeded,
  // ETCD_TRANSACTION_FAIL ("<what> no longer created at revision N") when
  // its compare failed.
  ErrorCode GuardedTxn(const std::string& request, int64_t create_revision, const char* what);

  const EtcdClientOptions options_;
  std::atomic<size_t> preferred_{0};  // index of the endpoint that last answered
  mutable Mutex mu_;
  std::string last_error_ GUARDED_BY(mu_);
};

}  // namespace shelfmark::ha
