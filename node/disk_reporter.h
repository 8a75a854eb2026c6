// DiskReporter: keeps the master's LOCAL_DISK replicas of one node in step
// with the node's SSD store, on a thread of its own with its own master
// connection. Two kinds of news:
//
//  - Evicted(key): the store evicted the key (its evict callback, any
//    thread, never blocks). Sent as EvictDiskReplica as soon as the thread
//    wakes, not at the next ping, so the master stops sending readers to a
//    record that is gone within a round trip. A key whose offload batch is
//    being written or not reported yet (Hold) waits: its eviction must
//    reach the master after its LOCAL_DISK replica does.
//  - Lost(key): a read found the key's record missing or corrupt (the store
//    dropped it). Queued first and waited for, at most lost_wait_ms: the
//    caller (the LOCAL_DISK service, before its OBJECT_NOT_FOUND reply)
//    returns once the master dropped the replica, so the client that saw
//    the miss finds the key gone and can put it again at once. A key being
//    written by an offload batch (Hold) is not reported: its new copy is on
//    its way and the master's entry (which names only the node) then holds.
//
// Sending waits while not ready (SetReady(false): the node is not mounted
// with its disk reported; a remount's re-report lists the store as it is).
// A send that fails with RPC_FAIL is kept (a lost key as an eviction) and
// retried after retry_interval_ms; any answer (OK, OBJECT_NOT_FOUND,
// ILLEGAL_CLIENT) settles it.
//
// Thread safety: every method may be called from any thread. The
// destructor stops the thread; Lost() calls waiting then return.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "rpc/master_client.h"

namespace shelfmark {

struct DiskReporterOptions {
  MasterClientOptions master;
  int64_t retry_interval_ms = 500;  // after a send failed with RPC_FAIL
  int64_t lost_wait_ms = 1000;      // the longest Lost() waits for the master
};

class DiskReporter {
 public:
  using KeyRef = std::pair<std::string, std::string>;  // (tenant, key)

  explicit DiskReporter(DiskReporterOptions options);
  ~DiskReporter();
  DiskReporter(const DiskReporter&) = delete;
  DiskReporter& operator=(const DiskReporter&) = delete;

  void SetReady(bool ready);
  void Evicted(std::string_view tenant, std::string_view key);
  void Lost(std::string_view tenant, std::string_view key);
  // An offload batch of `keys` is written or being written and not yet
  // reported (hold), or was reported (release).
  void Hold(const std::vector<KeyRef>& keys, bool hold);
  // Whether an offload batch of the key is held (written, not reported).
  bool Held(std::string_view tenant, std::string_view key) const;

  uint64_t evictions_sent() const;  // EvictDiskReplica calls answered for evictions
  uint64_t lost_sent() const;       // ... for lost records
  // Evictions and lost records not answered yet: queued (held back, not
  // ready, or waiting to retry) or being sent. 0: the master knows of every
  // record the store dropped.
  uint64_t pending() const;

 private:
  struct LostItem {
    KeyRef key;
    bool done = false;
  };
  void Loop();
  // The most evictions one pass of the thread sends (a lost record queued
  // meanwhile waits for them).
  static constexpr size_t kEvictionBatch = 64;
  // Evictions not held back, at most kEvictionBatch, taken from the queue.
  std::vector<KeyRef> TakeSendableLocked() REQUIRES(mu_);
  bool HasWorkLocked() const REQUIRES(mu_);

  const DiskReporterOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  bool ready_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<KeyRef> evictions_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<LostItem>> lost_ GUARDED_BY(mu_);
  // Keys of offload batches held, with a count each (a key may be in two).
  std::map<KeyRef, int> held_ GUARDED_BY(mu_);
  uint64_t evictions_sent_ GUARDED_BY(mu_) = 0;
  uint64_t lost_sent_ GUARDED_BY(mu_) = 0;
  size_t sending_ GUARDED_BY(mu_) = 0;  // taken from the queues, not answered yet
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace shelfmark
