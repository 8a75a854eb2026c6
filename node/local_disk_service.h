// LocalDiskService: the node side of LOCAL_DISK reads. It registers a UcxAm
// handler (kLocalDiskReadAmId, local_disk_wire.h); each request is decoded on
// the UCX progress thread, which answers it at once when the backend can
// without waiting for the device (StorageBackend::ReadValueCached: the bytes
// are in the page cache, read with preadv2 RWF_NOWAIT); otherwise it is
// queued and a small pool of worker threads reads it, so one slow read never
// stalls the progress thread or the other workers. (A worker hop costs two
// thread wake-ups, tens of microseconds: most of a 4 KiB read's time.)
//
// Every request gets exactly one reply {status, bucket_id, offset,
// data_size} + the bytes:
//  - OK with the bytes, which the backend verified against the record's
//    checksum (storage_backend.h); OBJECT_NOT_FOUND for a miss: the key is
//    not in the store, or its record did not read back intact (the backend
//    dropped it: DATA_CORRUPTED, counted in `corrupt`); INVALID_PARAMS for a
//    malformed request or a size that differs from expected_size; other
//    backend codes as they are; UNAVAILABLE_IN_CURRENT_STATUS once the
//    service is shutting down.
//  - A miss is answered by a worker, after on_missing returned: the node
//    drops its LOCAL_DISK replica at the master first, so the client that
//    sees the miss finds the key gone and may put it again at once.
//  - bucket_id and offset say where this read found the bytes
//    (StorageBackend::ReadValue's DiskPlace); 0 in error replies.
//
// It also answers the probe (kLocalDiskProbeAmId, local_disk_wire.h) on the
// progress thread: `size` zero bytes and no disk access, the transport-only
// baseline of `shelfmark-perf get --replica=local_disk`.
//
// Lifetime: `am` and `backend` must outlive the service; the destructor
// unregisters the handler (later requests: INVALID_PARAMS from UcxAm),
// answers queued requests UNAVAILABLE_IN_CURRENT_STATUS and joins the
// workers, so it must run before the engine that owns `am` is destroyed.
//
// Thread safety: stats() may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "ssdstore/storage_backend.h"
#include "transport/am_transport.h"

namespace shelfmark {

struct LocalDiskServiceOptions {
  size_t worker_threads = 4;  // at least 1
  // Called after each OK read reply was handed to the transport (not for the
  // probe or errors), with the object's size: on the progress thread for a
  // page-cache read, on a worker otherwise, so it must be cheap and
  // thread-safe and must not block (the node counts hits for promotion,
  // node/promotion_tracker.h). Null: none. Never called once the
  // destructor has returned (it waits for a call in progress).
  std::function<void(std::string_view tenant, std::string_view key, uint64_t size)> on_served;
  // Called on a worker thread for every miss (the key is not in the store,
  // or its record did not read back intact), before its OBJECT_NOT_FOUND
  // reply; it may block for a bounded time (the node tells the master).
  // Null: none. Same lifetime rule as on_served.
  std::function<void(std::string_view tenant, std::string_view key)> on_missing;
};

struct LocalDiskStats {
  uint64_t requests = 0;      // every request received (malformed ones too)
  uint64_t bytes_served = 0;  // object bytes in OK replies
  uint64_t errors = 0;        // replies with a status other than OK
  uint64_t malformed = 0;     // requests that did not decode (counted in errors too)
  uint64_t inline_reads = 0;  // answered on the progress thread from the page cache
  uint64_t misses = 0;        // answered OBJECT_NOT_FOUND (counted in errors too)
  uint64_t corrupt = 0;       // of the misses: records that did not read back intact
};

class LocalDiskService {
 public:
  LocalDiskService(AmTransport* am, StorageBackend* backend, LocalDiskServiceOptions options = {});
  ~LocalDiskService();
  LocalDiskService(const LocalDiskService&) = delete;
  LocalDiskService& operator=(const LocalDiskService&) = delete;

  LocalDiskStats stats() const;

  struct Core;  // the queue and counters, shared with the registered handler

 private:
  AmTransport* const am_;
  std::shared_ptr<Core> core_;
  std::vector<std::thread> workers_;
};

}  // namespace shelfmark
