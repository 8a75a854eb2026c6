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
// named, at once to a new address. A second thread holds a silent watch
// connection to the same leader, whose end tells whether the leader is
// gone (on_leader_gone).
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
  // Called (on the standby's watch thread, no lock held) when the followed
  // leader is gone for certain: the watch connection it holds open while
  // it ships (replication_wire.h, kHelloWatch) ended in order (its side
  // closed it: FIN, not a reset), and then a connection to the same
  // address was refused (its host answered that nothing listens there).
  // A master listens on its published address until after it resigned,
  // so that leader is dead or no longer leads. Silence and resets, which a
  // partition or a firewall can cause, never count. Once per such loss.
  // Unset: nothing is called.
  std::function<void(const std::string& address)> on_leader_gone;
  // This standby's name in the leader's in-sync set: its own published
  // address ("" : the leader names it; it can then never be found there).
  std::string id;
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
  // The data stream: connects, copies, applies, acknowledges; reconnects.
  void Run();
  // The watch connection (replication_wire.h, kHelloWatch): held open to
  // the followed leader; its orderly end, then a refused port, is
  // on_leader_gone.
  void WatchLoop();
  // One watch connection; true when the leader's side closed it in order.
  bool Watch(const std::string& address);
  // Whether a connection to `address` is refused within kGoneProbes tries.
  bool LeaderRefuses(const std::string& address);
  // Calls `connect` with the address to follow, again and again (at once
  // when the address changed, else after 100 ms doubling to 1 s) until Stop.
  void FollowLoop(const std::function<void(const std::string&)>& connect);
  // The address to follow, waiting for one; "" when stopping.
  std::string WaitForTarget();
  // Waits `ms` unless stopped or the target moved from `address`; false
  // when stopping.
  bool Pause(const std::string& address, int64_t ms);
  // One connection: handshake, then batches until an error or a new target.
  ErrorCode Session(const std::string& address);
  ErrorCode Handshake(int fd, uint8_t flags);
  ErrorCode ApplyBatch(int fd, const std::string& body, StandbyState* copy);
  ErrorCode SendAck(int fd, uint64_t seq);
  // While the leader may be gone: the pause between probes, and how many
  // are tried (a dying process may still accept for a moment; a live one
  // that closed the watch keeps accepting, and is not probed for long).
  static constexpr int64_t kGoneProbeMs = 10;
  // How long the receiver polls for the next batch before it sleeps.
  static constexpr int kBatchSpinUs = 200;
  static constexpr int kGoneProbes = 20;

  const ReplicationStandbyOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::string target_ GUARDED_BY(mu_);
  std::string last_leader_ GUARDED_BY(mu_);  // the last non-empty target
  bool stopping_ GUARDED_BY(mu_) = false;
  bool running_ GUARDED_BY(mu_) = false;
  int fd_ GUARDED_BY(mu_) = -1;  // the live connection (shut down to end it)
  int watch_fd_ GUARDED_BY(mu_) = -1;  // the watch connection (likewise)
  StandbyState state_ GUARDED_BY(mu_);
  ReplicationStandbyStats stats_ GUARDED_BY(mu_);
  std::atomic<bool> has_state_{false};
  std::thread thread_;
  std::thread watcher_;
};

}  // namespace shelfmark
