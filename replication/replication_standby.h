// ReplicationStandby: a standby master's side of hot-standby replication
// (docs/ha.md, "Replication"). It connects to the leader's RPC address,
// proves the token (the Cap'n Proto handshake's proof, an admin token),
// receives a full copy of the leader's directory and then every batch of
// changes, applies each to its StandbyState and acknowledges it.
//
// A full copy is applied to a fresh state that replaces the current one
// only once complete (kBatchSynced): a standby that loses its leader in the
// middle of a copy still holds its last complete state. After any failure
// it reconnects (100 ms, doubling to 1 s) to whatever address Follow() last
// named; every 10 ms for up to 20 tries when the leader closed the stream
// in order (to learn whether it is gone: on_leader_gone).
//
// Thread safety: every public method may be called from any thread; the
// state is read through WithState (under the standby's lock) or taken
// after Stop().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "replication/standby_state.h"

namespace shelfmark {

struct ReplicationStandbyOptions {
  std::string cluster_id;
  std::string token;  // proven to the leader; "" when the leader asks none
  int64_t io_timeout_ms = 5'000;
  // Called (on the standby's thread, no lock held) when the followed leader
  // is gone for certain: its stream, after the handshake, ended in order
  // (the leader's side closed it: FIN, not a reset) and at once a new
  // connection to the same address was refused (its host answered that
  // nothing listens there), with no handshake answered in between. A
  // master listens on its published address until
  // after it resigned, so that leader is dead or no longer leads. Silence
  // and resets, which a partition or a firewall can cause, never count.
  // Once per such loss. Unset: nothing is called.
  std::function<void(const std::string& address)> on_leader_gone;
};

struct ReplicationStandbyStats {
  bool connected = false;
  bool synced = false;     // a complete copy, and receiving batches
  uint64_t applied_seq = 0;
  uint64_t batches = 0;
  uint64_t full_copies = 0;  // completed
  uint64_t failures = 0;     // connections that ended in an error
  int64_t last_batch_ms = 0; // steady ms of the last batch applied (0: none)
};

class ReplicationStandby {
 public:
  explicit ReplicationStandby(ReplicationStandbyOptions options);
  ~ReplicationStandby();  // Stop()s
  ReplicationStandby(const ReplicationStandby&) = delete;
  ReplicationStandby& operator=(const ReplicationStandby&) = delete;

  void Start();
  // The leader to copy from ("" : none; the current connection ends when
  // the address changes). Naming another leader than the last one clears
  // has_state() until a copy from the new one completes.
  void Follow(const std::string& leader_address);
  // Ends the connection and joins the thread.
  void Stop();

  // True once a complete copy from the followed leader arrived (it stays
  // true after the connection ends: the state is what that leader had
  // acknowledged through it).
  bool has_state() const { return has_state_.load(); }
  ReplicationStandbyStats stats() const;
  // Runs `f` on the state under the lock.
  void WithState(const std::function<void(const StandbyState&)>& f) const;

 private:
  void Run();
  struct SessionEnd {
    ErrorCode rc = ErrorCode::OK;
    bool refused = false;          // the connection was refused (ConnectTcp)
    bool handshook = false;        // the leader answered the handshake: alive
    bool closed_in_order = false;  // after the handshake, the leader closed (FIN)
  };
  // While the leader may be gone: the pause between connections, and how
  // many are tried before backing off as usual.
  static constexpr int64_t kGoneProbeMs = 10;
  static constexpr int kGoneProbes = 20;
  // One connection: handshake, then batches until an error or a new target.
  SessionEnd Session(const std::string& address);
  ErrorCode Handshake(int fd);
  ErrorCode ApplyBatch(int fd, const std::string& body, StandbyState* copy);

  const ReplicationStandbyOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::string target_ GUARDED_BY(mu_);
  std::string last_leader_ GUARDED_BY(mu_);  // the last non-empty target
  bool stopping_ GUARDED_BY(mu_) = false;
  bool running_ GUARDED_BY(mu_) = false;
  int fd_ GUARDED_BY(mu_) = -1;  // the live connection (shut down to end it)
  StandbyState state_ GUARDED_BY(mu_);
  ReplicationStandbyStats stats_ GUARDED_BY(mu_);
  std::atomic<bool> has_state_{false};
  std::thread thread_;
};

}  // namespace shelfmark
