// Store: the facade the Python module (python/native/module.cc) binds, one
// C++ function per store operation of Mooncake's Python API
// (MooncakeDistributedStore) over Shelfmark's Client (client/client.h).
// Plain types in and out; codes are ErrorCode values as ints (they follow
// Mooncake's numbering: 0 OK, -10 BUFFER_OVERFLOW, -704 OBJECT_NOT_FOUND,
// -900 RPC_FAIL, ...). Python argument parsing, size strings, configuration
// files and exceptions live in python/shelfmark and python/mooncake.
//
// Memory given by address (the *_from / *_into calls, get_into_ranges) must
// lie inside one buffer registered with RegisterBuffer; any other address
// answers INVALID_PARAMS and is never touched (Mooncake leaves this
// undefined; we never dereference memory we were not shown).
//
// local_buffer_size (StoreOptions::local_buffer_bytes) is Mooncake's local
// buffer: the staging memory that put / put_parts / put_batch / get /
// get_batch / get_buffer copy through. 0 turns those calls off
// (NO_AVAILABLE_HANDLE, as Mooncake answers when it cannot allocate from its
// local buffer); the calls on registered memory still work.
//
// global_segment_size (StoreOptions::global_segment_bytes) > 0: the store
// hosts a segment of that many bytes of this process's memory
// (embedded/embedded_client.h), mounted at the master under the store's
// client id until Close; replicas inside it are read and written with
// memcpy. local_hostname ("host" or "host:port", as Mooncake's) names where
// other clients reach it: the host is the address the engines listen on, and
// "host:port" is the segment's name, what hostname() answers and what a
// put's preferred_segments names. Without a port one is drawn from
// 12300-14300 (Mooncake's range) and held, bound on the host, until Close,
// so stores on one host never share a name.
//
// The *_from / *_into calls move bytes one-sided between registered memory
// and the replicas, with no staging copy (Client::PutFrom, BatchPutFrom,
// BatchPutParts, GetInto, BatchGetInto, BatchGetIntoParts, GetIntoRanges).
// Upserts are puts whose PutConfig has `replace` set.
//
// Thread safety: every method may be called from any thread, Close and Setup
// included: a call in flight keeps the client it started with alive, so
// Close never destroys a client under a running call (it is destroyed when
// the last such call returns). Several Stores may live in one process.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/types.h"
#include "transport/rdma_plugin.h"

namespace shelfmark {
class Client;
}  // namespace shelfmark

namespace shelfmark::python {

struct StoreOptions {
  std::string master = "127.0.0.1:50051";  // host:port of shelfmark-master, or etcd://...
  // With an etcd:// master: the cluster whose leader to follow ("" :
  // $SHELFMARK_CLUSTER_ID, $MC_STORE_CLUSTER_ID, then "shelfmark";
  // MasterClientOptions::cluster_id).
  std::string cluster_id;
  bool follow_leader_hints = false;  // ClientOptions::follow_leader_hints
  // Client protocol: "ucx", "rdma", "auto" or "loopback" (the Python layers
  // map Mooncake's "tcp" to "ucx" and "rdma" to "rdma").
  std::string protocol = "ucx";
  std::string device;          // RDMA device ("" = the first)
  std::string local_hostname;  // "host" or "host:port" (above)
  std::string tenant;          // "" = the default tenant
  std::string cluster_token;   // data plane (and master, without master_token)
  std::string master_token;
  uint64_t local_buffer_bytes = 16ull << 20;  // 0: staging calls answer NO_AVAILABLE_HANDLE
  uint64_t global_segment_bytes = 0;          // the hosted segment; 0: none
  int64_t rpc_timeout_ms = 10'000;
  int64_t transfer_timeout_ms = 5'000;
  bool check_master = true;  // Setup asks the master once (unreachable: RPC_FAIL)
  // Mooncake's enable_client_http_server / client_http_port: serve this
  // store's GET /health, /metrics (Prometheus text) and /metrics/summary on
  // 0.0.0.0:http_port (0: any free port) until Close; a port that cannot be
  // bound makes Setup answer INVALID_PARAMS.
  bool http_server = false;
  uint16_t http_port = 9300;
  // Mooncake's enable_ssd_offload / ssd_offload_path: the hosted segment's
  // SSD tier (EmbeddedOptions; embedded/ssd_tier.h), in ssd_offload_path
  // ("" : $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH). Setup answers
  // INVALID_PARAMS without a segment, for a bad setting (printed on stderr)
  // and with protocol "rdma" (LOCAL_DISK reads need UCX: use "auto").
  bool enable_ssd_offload = false;
  std::string ssd_offload_path;
};

// One replica of an object, as get_replica_desc reports it.
struct ReplicaInfo {
  std::string status;  // "COMPLETE", ...
  bool memory = true;  // MEMORY (else LOCAL_DISK)
  std::string endpoint;
  std::string protocol;
  uint64_t buffer_address = 0;
  uint64_t size = 0;
  std::string segment_id;
};
// A master's replica descriptor as get_replica_desc reports it.
ReplicaInfo ReplicaInfoOf(const ReplicaDescriptor& r);

class Store {
 public:
  // `rdma`: the module's linked verbs engine (transport/rdma_plugin.h; empty
  // where the build has none: protocol "rdma" then answers INVALID_PARAMS).
  explicit Store(RdmaPlugin rdma = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Opens a client (closing the one before, if any); 0 or the code.
  int Setup(const StoreOptions& options);
  // Drops the client (calls in flight finish on it); 0. Idempotent.
  int Close();
  bool is_open() const;
  // "host:port": the hosted segment's name ("" when closed).
  std::string hostname() const;
  // The address of local_hostname's host (what a put's
  // PutConfig::prefer_host names for "this host"); "" when closed.
  std::string listen_ip() const;
  // The port the client HTTP server listens on (0: none).
  uint16_t http_port() const;
  uint64_t global_segment_bytes() const;
  // Replicas read or written by memcpy because they lie in this store's own
  // segment (copies, bytes); zeros when closed.
  std::pair<uint64_t, uint64_t> LocalCopies() const;
  // The SSD tier's counters by name (objects, used_bytes, capacity_bytes,
  // corrupt_records, disk_requests, disk_served_bytes, disk_errors,
  // offloaded, disk_reported); empty without a tier or when closed.
  std::map<std::string, uint64_t> DiskStats() const;
  // 0 when the master answers, else its code (RPC_FAIL when unreachable).
  int HealthCheck();

  // The open client and the store's tenant, for calls built in files of
  // their own (storeservice/sessions.h). `keep` holds the client alive
  // like a call in flight; `client` is null when the store is closed.
  struct ClientRef {
    std::shared_ptr<void> keep;
    Client* client = nullptr;
    std::string tenant;
  };
  ClientRef client() const;

  // --- writes --------------------------------------------------------------
  // Through the staging buffer (a copy of the bytes).
  int Put(const std::string& key, const char* data, uint64_t size, const PutConfig& config);
  int PutParts(const std::string& key, const std::vector<const char*>& datas,
               const std::vector<uint64_t>& sizes, const PutConfig& config);
  std::vector<int> PutBatch(const std::vector<std::string>& keys,
                            const std::vector<const char*>& datas,
                            const std::vector<uint64_t>& sizes, const PutConfig& config);
  // From registered memory.
  int PutFrom(const std::string& key, uint64_t ptr, uint64_t size, const PutConfig& config);
  std::vector<int> BatchPutFrom(const std::vector<std::string>& keys,
                                const std::vector<uint64_t>& ptrs,
                                const std::vector<uint64_t>& sizes, const PutConfig& config);
  std::vector<int> BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                            const std::vector<std::vector<uint64_t>>& ptrs,
                                            const std::vector<std::vector<uint64_t>>& sizes,
                                            const PutConfig& config);

  // --- reads ---------------------------------------------------------------
  // 0 and the bytes in *value, or the code.
  int Get(const std::string& key, std::string* value);
  std::vector<int> GetBatch(const std::vector<std::string>& keys, std::vector<std::string>* values);
  // Into registered memory: the object's size, or a negative code
  // (BUFFER_OVERFLOW when it does not fit in `size`).
  int64_t GetInto(const std::string& key, uint64_t ptr, uint64_t size);
  std::vector<int64_t> BatchGetInto(const std::vector<std::string>& keys,
                                    const std::vector<uint64_t>& ptrs,
                                    const std::vector<uint64_t>& sizes);
  // The object's bytes scattered over the key's buffers in order.
  std::vector<int64_t> BatchGetIntoMultiBuffers(const std::vector<std::string>& keys,
                                                const std::vector<std::vector<uint64_t>>& ptrs,
                                                const std::vector<std::vector<uint64_t>>& sizes);
  // Mooncake's shape: buffer i, key j of buffer i, fragment k of key j:
  // copies object keys[i][j] [src[i][j][k], + lengths[i][j][k]) to
  // ptrs[i] + dst[i][j][k]. Answers per fragment: its length or a code.
  std::vector<std::vector<std::vector<int64_t>>> GetIntoRanges(
      const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
      const std::vector<std::vector<std::vector<uint64_t>>>& dst_offsets,
      const std::vector<std::vector<std::vector<uint64_t>>>& src_offsets,
      const std::vector<std::vector<std::vector<uint64_t>>>& lengths);

  // The benchmarks' C++ baselines (python/bench/batch_get.py, one_call.py):
  // `iters` calls of BatchGetInto / PutFrom / GetInto / IsExist timed in
  // C++, in this process, on this store's client and buffers; ns per call,
  // or empty when a call fails (a get short of `size` bytes, a put not 0, an
  // exist check answering a code). TimePutFrom removes the key after each
  // put, untimed, so that every timed put writes.
  std::vector<int64_t> TimeBatchGetInto(const std::vector<std::string>& keys,
                                        const std::vector<uint64_t>& ptrs,
                                        const std::vector<uint64_t>& sizes, int iters);
  std::vector<int64_t> TimePutFrom(const std::string& key, uint64_t ptr, uint64_t size,
                                   const PutConfig& config, int iters);
  std::vector<int64_t> TimeGetInto(const std::string& key, uint64_t ptr, uint64_t size, int iters);
  std::vector<int64_t> TimeIsExist(const std::string& key, int iters);

  // --- registered memory ---------------------------------------------------
  int RegisterBuffer(uint64_t ptr, uint64_t size);
  int UnregisterBuffer(uint64_t ptr);  // INVALID_PARAMS when not registered
  bool IsRegistered(uint64_t ptr, uint64_t size) const;

  // --- metadata ------------------------------------------------------------
  int IsExist(const std::string& key);  // 1, 0, or a negative code
  std::vector<int> BatchIsExist(const std::vector<std::string>& keys);
  int64_t GetSize(const std::string& key);  // size or a negative code
  int GetReplicas(const std::string& key, std::vector<ReplicaInfo>* replicas);
  int Remove(const std::string& key, bool force);
  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force);
  // The number of objects removed (of this store's tenant), or a negative code.
  int64_t RemoveAll(bool force);
  // The same for the keys matching `pattern` (POSIX ERE, docs/python.md).
  int64_t RemoveByRegex(const std::string& pattern, bool force);

  // --- segments (Mooncake's allocate_and_mount_segment and
  // unmount_and_free_segment; EmbeddedClient::MountSegment) ---------------
  // One more segment of `size` bytes of this process's memory, on the
  // engine of `protocol` ("ucx", "rdma", "auto"), mounted under the store's
  // client id and named by its id at the master (preferred_segment = the id
  // places there); 0 and the id in *id, or the code (INVALID_PARAMS: closed,
  // size 0, no such engine, or local_hostname gave the engines no address).
  int AllocateAndMountSegment(uint64_t size, const std::string& protocol, std::string* id);
  // Unmounts and frees segments AllocateAndMountSegment made, all or none
  // (INVALID_PARAMS for an id that is not one, or is named twice). The
  // master drops every replica in them. grace_ms > 0: drained first, then
  // unmounted after grace_ms; returns at once (EmbeddedClient::UnmountSegments).
  int UnmountAndFreeSegments(const std::vector<std::string>& ids, int64_t grace_ms);
  // Mooncake's mount_segment: `size` bytes of the regular file at `path`
  // (a /dev/shm or hugetlbfs file, ...) from `offset` (a multiple of the
  // page size), opened read-write and mapped shared, served as one more
  // segment like AllocateAndMountSegment's (EmbeddedClient::MountFileSegment).
  // INVALID_PARAMS too when the file cannot be opened read-write, is not a
  // regular file, or is shorter than offset + size. The caller must not
  // shrink the file while the segment is mounted.
  int MountSegment(const std::string& path, uint64_t offset, uint64_t size,
                   const std::string& protocol, std::string* id);
  // Mooncake's unmount_segment: UnmountAndFreeSegments for MountSegment's
  // segments (the file and its bytes stay the caller's).
  int UnmountSegments(const std::vector<std::string>& ids, int64_t grace_ms);

 private:
  struct Impl;
  std::shared_ptr<Impl> Acquire() const;

  const RdmaPlugin rdma_;
  mutable Mutex mu_;
  std::shared_ptr<Impl> impl_ GUARDED_BY(mu_);
};

}  // namespace shelfmark::python
