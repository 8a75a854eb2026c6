// ServiceStore: the facade the Python module binds for a store in Mooncake's
// standalone-store shape (mooncake.store's setup_dummy): every call goes to
// the host's store service (storeservice/service_client.h) and answers as
// python/native/store.h's Store does (same codes, same shapes), so
// python/mooncake/store.py drives either one.
//
// Memory given by address (the *_from / *_into calls) must lie inside a
// buffer registered with RegisterBuffer, and a registered buffer must lie
// inside shared memory from AllocShm (Mooncake's MooncakeHostMemAllocator):
// RegisterBuffer hands the whole allocation's memfd to the service, which
// then reads and writes that memory in place. Other memory answers
// INVALID_PARAMS (the service cannot see it).
//
// The values of put / put_parts / put_batch / get / get_batch travel inline
// on the socket (a request or answer over kMaxFrameBytes answers
// INVALID_PARAMS); copy and move tasks run on the service's client.
// Put and get sessions (storeservice/sessions.h' calls, the same shapes)
// are held by the service for this store's connection: a reconnection (the
// service restarted) starts without them. Not through the service: segment
// mounting (the service owns the segment); python/mooncake answers it
// -1011 (Mooncake's UNAVAILABLE_IN_CURRENT_MODE).
//
// Thread safety: every method may be called from any thread (calls are
// sent one at a time).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/task_types.h"
#include "common/types.h"
#include "python/native/store.h"

namespace shelfmark::storeservice {
class ServiceClient;
}  // namespace shelfmark::storeservice

namespace shelfmark::python {

struct ServiceStoreOptions {
  // The service: Mooncake's "host:port" (the service's --port on this host),
  // "@name" or a socket path (storeservice/service_wire.h, SocketOf).
  std::string server_address = "127.0.0.1:50052";
  std::string cluster_token;  // proven to the service, which proves it back
  std::string tenant;         // "" = the default tenant; must be the service's
  int64_t timeout_ms = 10'000;
};

class ServiceStore {
 public:
  ServiceStore();
  ~ServiceStore();
  ServiceStore(const ServiceStore&) = delete;
  ServiceStore& operator=(const ServiceStore&) = delete;

  // Connects (closing the connection before); 0 or the code (INVALID_PARAMS
  // for an address of no known form, RPC_FAIL when nothing answers,
  // UNAUTHENTICATED, PERMISSION_DENIED).
  int Setup(const ServiceStoreOptions& options);
  int Close();
  bool is_open() const;
  std::string hostname() const;  // the service's socket ("" when closed)
  int HealthCheck();

  int Put(const std::string& key, const char* data, uint64_t size, const PutConfig& config);
  int Get(const std::string& key, std::string* value);
  int PutFrom(const std::string& key, uint64_t ptr, uint64_t size, const PutConfig& config);
  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys,
                                const std::vector<uint64_t>& ptrs,
                                const std::vector<uint64_t>& sizes, const PutConfig& config);
  int64_t GetInto(const std::string& key, uint64_t ptr, uint64_t size);
  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys,
                                    const std::vector<uint64_t>& ptrs,
                                    const std::vector<uint64_t>& sizes);

  // Each key's object is the concatenation of its buffers (Store's shapes).
  std::vector<int> BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<uint64_t>>& ptrs,
                                            const std::vector<std::vector<uint64_t>>& sizes,
                                            const PutConfig& config);
  std::vector<int64_t> BatchGetIntoMultiBuffers(const std::vector<std::string>& keys,
                                                const std::vector<std::vector<uint64_t>>& ptrs,
                                                const std::vector<std::vector<uint64_t>>& sizes);

  int PutParts(const std::string& key, const std::vector<const char*>& datas,
               const std::vector<uint64_t>& sizes, const PutConfig& config);
  std::vector<int> PutBatch(const std::vector<std::string>& keys,
                            const std::vector<const char*>& datas,
                            const std::vector<uint64_t>& sizes, const PutConfig& config);
  std::vector<int> GetBatch(const std::vector<std::string>& keys, std::vector<std::string>* values);
  // Store::GetIntoRanges's shapes and answers (storeservice/ranged_read.h).
  std::vector<std::vector<std::vector<int64_t>>> GetIntoRanges(
      const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
      const std::vector<std::vector<std::vector<uint64_t>>>& dst_offsets,
      const std::vector<std::vector<std::vector<uint64_t>>>& src_offsets,
      const std::vector<std::vector<std::vector<uint64_t>>>& lengths);

  int RegisterBuffer(uint64_t ptr, uint64_t size);
  int UnregisterBuffer(uint64_t ptr);  // INVALID_PARAMS when not registered
  bool IsRegistered(uint64_t ptr, uint64_t size) const;

  int IsExist(const std::string& key);
  std::vector<int> BatchIsExist(const std::vector<std::string>& keys);
  int64_t GetSize(const std::string& key);
  int Remove(const std::string& key, bool force);
  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force);
  int GetReplicas(const std::string& key, std::vector<ReplicaInfo>* replicas);
  int64_t RemoveAll(bool force);
  int64_t RemoveByRegex(const std::string& pattern, bool force);

  // Put and get sessions, as storeservice::Sessions answers them.
  std::vector<int> PutStart(const std::vector<std::string>& keys,
                            const std::vector<uint64_t>& sizes, const PutConfig& config);
  std::vector<int64_t> PutRanges(const std::vector<std::string>& keys,
                                 const std::vector<std::vector<uint64_t>>& ptrs,
                                 const std::vector<std::vector<uint64_t>>& sizes,
                                 const std::vector<std::vector<uint64_t>>& offsets);
  std::vector<int> PutEnd(const std::vector<std::string>& keys);
  std::vector<int> PutRevoke(const std::vector<std::string>& keys);
  std::vector<int> GetStart(const std::vector<std::string>& keys);
  std::vector<int64_t> GetRanges(const std::vector<std::string>& keys,
                                 const std::vector<std::vector<uint64_t>>& ptrs,
                                 const std::vector<std::vector<uint64_t>>& sizes,
                                 const std::vector<std::vector<uint64_t>>& offsets);
  int GetEnd(const std::vector<std::string>& keys);

  // Copy and move tasks (python/native/tasks.h's calls), run by the service.
  int CreateTask(const TaskSpec& spec, std::string* id);
  int RunTask(const std::string& id);
  int QueryTask(const std::string& id, TaskInfo* out);

 private:
  std::shared_ptr<storeservice::ServiceClient> Acquire() const;
  // The registered bytes from ptr to the end of the buffer holding it (0
  // when none holds it).
  uint64_t Room(uint64_t ptr) const;
  // A ranged session call (kPutRanges / kGetRanges): keys whose lists'
  // shapes differ answer INVALID_PARAMS unsent.
  std::vector<int64_t> SessionRanges(int op, const std::vector<std::string>& keys,
                                     const std::vector<std::vector<uint64_t>>& ptrs,
                                     const std::vector<std::vector<uint64_t>>& sizes,
                                     const std::vector<std::vector<uint64_t>>& offsets);

  mutable Mutex mu_;
  std::shared_ptr<storeservice::ServiceClient> client_ GUARDED_BY(mu_);
  std::string socket_ GUARDED_BY(mu_);
  // Registered buffers (start -> size), and how many of them each shared
  // memory allocation (by its start) carries: the allocation is handed to
  // the service with its first buffer and taken back with its last.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> buffers_ GUARDED_BY(mu_);  // start -> (size, allocation)
  std::map<uint64_t, int> allocations_ GUARDED_BY(mu_);
};

}  // namespace shelfmark::python
