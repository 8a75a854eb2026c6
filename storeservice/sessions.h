// Sessions: Mooncake's put and get sessions of MooncakeDistributedStore
// (batch_put_session_start / batch_put_from_multi_buffer_ranges /
// batch_put_session_end / batch_put_session_revoke, batch_get_session_start /
// batch_get_into_multi_buffer_ranges / batch_get_session_end) over a client:
// an object written layer by layer, and read layer by layer from one lookup.
// Shared by the embedded store (python/native/store.h, the client of its
// setup) and the store service (service_session.h, the service's client for
// one connection's sessions, memory addresses already the service's).
//
// A put session is an object allocated at the master (Client::StartPuts) and
// not yet readable; ranges of registered memory are written into it at
// object offsets, in any order and as many calls as wanted; End makes it
// readable, Revoke drops it. A get session is one lookup of the object
// (Client::Locate, asking the master) whose read lease the ranged reads then
// ride: after the lease they answer LEASE_EXPIRED (-707) and read nothing; a
// new start looks the object up again. End forgets it.
//
// Sessions belong to the client they were started on (SessionClient::keep):
// after close or a new setup, a session of the old client answers
// INVALID_PARAMS and is dropped
// (its put is never completed; the master's object stays unreadable). Keys
// without a session answer INVALID_PARAMS; a put start of a key whose put
// session is open answers OBJECT_ALREADY_EXISTS. Codes are ErrorCode ints,
// sizes the bytes a call moved for the key.
//
// Thread safety: any method from any thread; the transfers of a call run
// outside the session table's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/mutex.h"
#include "common/types.h"

namespace shelfmark::storeservice {

// The client calls go to now: null when there is none (closed); `keep`
// alive while the client is the same one.
struct SessionClient {
  std::shared_ptr<void> keep;
  Client* client = nullptr;
  std::string tenant;
};

class Sessions {
 public:
  explicit Sessions(std::function<SessionClient()> client_of) : client_of_(std::move(client_of)) {}

  std::vector<int> PutStart(const std::vector<std::string>& keys,
                            const std::vector<uint64_t>& sizes, const PutConfig& config);
  // Key i: its pieces ptrs[i][j] (sizes[i][j] bytes) at object offsets[i][j].
  std::vector<int64_t> PutRanges(const std::vector<std::string>& keys,
                                 const std::vector<std::vector<uint64_t>>& ptrs,
                                 const std::vector<std::vector<uint64_t>>& sizes,
                                 const std::vector<std::vector<uint64_t>>& offsets);
  std::vector<int> PutEnd(const std::vector<std::string>& keys);
  std::vector<int> PutRevoke(const std::vector<std::string>& keys);

  std::vector<int> GetStart(const std::vector<std::string>& keys);
  // Key i: object bytes [offsets[i][j], + sizes[i][j]) into ptrs[i][j].
  std::vector<int64_t> GetRanges(const std::vector<std::string>& keys,
                                 const std::vector<std::vector<uint64_t>>& ptrs,
                                 const std::vector<std::vector<uint64_t>>& sizes,
                                 const std::vector<std::vector<uint64_t>>& offsets);
  int GetEnd(const std::vector<std::string>& keys);

 private:
  struct PutSession {
    std::weak_ptr<void> owner;  // the client it was started on (SessionClient::keep)
    std::vector<ReplicaDescriptor> replicas;
    uint64_t size = 0;
  };
  struct GetSession {
    std::weak_ptr<void> owner;
    ObjectLocation location;
  };
  // The session of `key` started on `ref`'s client, or null (a session of
  // another client is dropped).
  template <typename Session>
  const Session* Find(std::map<std::string, Session>& table, const std::string& key,
                      const SessionClient& ref) REQUIRES(mu_);
  // End or Revoke through `finish`: keys with a session, the rest
  // INVALID_PARAMS; sessions finished OK are dropped.
  template <typename Finish>
  std::vector<int> FinishPuts(const std::vector<std::string>& keys, const Finish& finish);

  const std::function<SessionClient()> client_of_;
  Mutex mu_;
  std::map<std::string, PutSession> puts_ GUARDED_BY(mu_);
  std::map<std::string, GetSession> gets_ GUARDED_BY(mu_);
};

}  // namespace shelfmark::storeservice
