// ReplicationLeader: the leading master's side of hot-standby replication
// (docs/ha.md, "Replication"). Standbys connect to the master's RPC port
// (the RPC server hands their connections over: Adopt); each gets a full
// copy of the directory, then every batch of changes (Directory's change
// feed), and acknowledges each batch once applied.
//
// Durability: a mutation is acknowledged to its caller only once every
// standby of the in-sync set has acknowledged a batch whose sequence covers
// it (WhenReplicated; `sync_standbys` 0: never wait). The set is published
// (publish_in_sync: etcd, for the campaign rule) before it counts: a
// standby joins it once synced, is waited for from then on, and is
// published only once it holds everything acknowledged so far; a standby
// that goes (a stall, an error) stays waited for until the set without it
// is published. So every standby the published set names holds every
// acknowledged mutation, and only those may take over with their copy
// (docs/ha.md, "The in-sync set"). With an empty set the leader
// acknowledges alone: availability first, and no standby may then take
// over before --ha_unsynced_takeover_s.
//
// Threads: one shipper (full copies for joining standbys, then batches to
// all) and one reader per standby (handshake, then acknowledgements) or
// per watch connection (held open: its end tells the standby this process
// is gone, replication_wire.h's kHelloWatch). A
// standby that does not keep up (a write or an acknowledgement stalls for
// io_timeout_ms) is dropped; it reconnects and copies again.
//
// Limits (docs/limits.md; a stranger may connect): at most
// `max_connections` connections (a new one takes the place of the oldest
// still in its handshake, or is closed when none is), so at most that many
// reader threads and descriptors; every frame the leader reads is a small
// one (frame_io.h, kMaxControlFrameBytes: it never buffers more, proven
// or not) and must arrive whole within io_timeout_ms of its first byte
// (a handshake's, of when the leader waits for it).
//
// Thread safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "auth/token_table.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "directory/directory.h"
#include "replication/doorbell.h"
#include "replication/frame_io.h"

namespace shelfmark {

struct ReplicationLeaderOptions {
  std::string cluster_id;
  auth::TokenTable tokens;  // empty: standbys need no proof; else an admin token
  int sync_standbys = 1;
  int64_t io_timeout_ms = 5'000;
  // Connections held at once, in their handshake or after (>= 1).
  size_t max_connections = 16;
  // How long the shipper sleeps when nobody asked for a batch (changes made
  // by the background thread, which waits on nobody, ship at this period).
  int64_t idle_ship_ms = 20;
  // Publishes the in-sync set (standby ids, sorted); true when it is
  // durable (blocking, on the shipper thread, no lock held). Unset: every
  // set counts at once (tests; a single process).
  std::function<bool(const std::vector<std::string>& ids)> publish_in_sync;
  // Whether this leader may acknowledge at all now (its fence); polled by
  // the shipper. While false, waiters are released at once: their callers
  // check the fence again and answer NOT_LEADER instead of waiting for a
  // set that cannot be published (etcd unreachable). Unset: always.
  std::function<bool()> may_acknowledge;
  // After an acknowledgement that released exactly one waiting mutation,
  // the reader polls for the next acknowledgement this long before it
  // blocks (frame_io.h, spin_us): one connection's puts, one at a time,
  // save the reader's wake-up each. Acknowledgements of many (busy RPC
  // threads, which need the CPUs) or of none (background changes) do not.
  int ack_spin_us = 200;
};

struct ReplicationLeaderStats {
  uint64_t standbys = 0;      // connected (handshake done)
  uint64_t watchers = 0;      // watch connections held (kHelloWatch)
  uint64_t in_sync = 0;       // full copy done, receiving batches
  uint64_t change_seq = 0;    // the directory's change sequence now
  uint64_t acked_seq = 0;     // what the mutations' callers may count on
  uint64_t lag_ops = 0;       // change_seq - acked_seq (0 without a standby in sync)
  int64_t lag_ms = 0;         // age of the oldest batch not yet acknowledged
  uint64_t batches = 0;       // sent (to all standbys: counted once)
  // Of those, shipped by a mutation's thread or an acknowledgement's reader
  // (ShipInline), not by the shipper.
  uint64_t inline_batches = 0;
  // Rings that found the shipper asleep (a futex wake each): a mutation
  // rings it only when another thread holds the shipping, so an idle
  // leader's unbatched puts add none (rings while it runs cost nothing).
  uint64_t shipper_wakes = 0;
  uint64_t bytes = 0;         // sent, every standby counted
  uint64_t full_copies = 0;   // started
  uint64_t dropped = 0;       // standbys dropped (error, stall, bad proof)
  uint64_t connections = 0;   // held now, whatever their state
  uint64_t evicted = 0;       // in their handshake, closed for a newer one
  uint64_t rejected = 0;      // closed at once: at max_connections, none to evict
  uint64_t reader_threads = 0;  // not joined yet (live, or ended since the last Adopt)
  std::vector<std::string> in_sync_ids;  // the published in-sync set
  uint64_t in_sync_publications = 0;     // sets published
};

class ReplicationLeader {
 public:
  ReplicationLeader(Directory& directory, ReplicationLeaderOptions options);
  ~ReplicationLeader();  // Stop()s
  ReplicationLeader(const ReplicationLeader&) = delete;
  ReplicationLeader& operator=(const ReplicationLeader&) = delete;

  // Enables the directory's change tracking and starts the shipper.
  void Start();
  // Drops every standby and joins the threads. Waiters are released.
  void Stop();

  // Takes over a standby's connection (the descriptor is closed when done);
  // `first` holds what was already read from it. With tokens,
  // `handshake_done` (may be empty) learns once, from the connection's
  // thread, whether the peer proved an admin token; a handshake that ends
  // any other way (a bad, oversized or late frame, the peer gone, evicted)
  // counts as not proven; one cut by Stop is not reported.
  void Adopt(int fd, std::string first, std::function<void(bool proven)> handshake_done = {});

  // True when a mutation whose Directory::ChangeSeq() was `seq` may be
  // acknowledged now. Otherwise `done` is called once it may (from a
  // replication thread, without locks held) and false is returned.
  bool WhenReplicated(uint64_t seq, std::function<void()> done);
  // Whether a mutation at `seq` counts as replicated now (what a released
  // waiter checks: waiters are also released, unreplicated, while the
  // leader is fenced, and when it stops). False once stopped.
  bool Replicated(uint64_t seq) const;

  ReplicationLeaderStats stats() const;

 private:
  struct Standby;
  struct Waiter {
    uint64_t seq;
    std::function<void()> done;
  };

  void ShipLoop();
  // Handshake then acknowledgements of one standby.
  void ReadLoop(std::shared_ptr<Standby> s, std::string first,
                const std::function<void(bool)>& handshake_done);
  // At max_connections: closes the oldest connection in its handshake for a
  // new one; false (counted) when there is none.
  bool MakeRoomLocked() REQUIRES(mu_);
  ErrorCode Handshake(Standby& s, std::string* pending);
  // A watch connection: held open, silent, until the standby or Stop ends it.
  void Watch(std::shared_ptr<Standby> s);
  // What a reader takes once the handshake is done: small frames (an
  // acknowledgement), whole within io_timeout_ms of their first byte.
  FrameLimits AfterHandshake() const;
  void FullCopy(Standby& s);
  // Takes the changes and sends them to every synced standby; the caller
  // holds ship_mu_. `may_block` false (a mutation's thread, ShipInline):
  // what a standby's socket does not take at once waits in its backlog for
  // the shipper. False when some did (the shipper must be rung).
  bool ShipBatch(bool may_block);
  // Writes `frames` after the standby's backlog (ship_mu_ held); without
  // `may_block`, only what the socket takes now, the rest to the backlog.
  // False on an error (the caller drops it).
  bool Send(Standby& s, std::string_view frames, bool may_block);
  // Writes every synced standby's backlog (the shipper, ship_mu_ held).
  void FlushBacklogs();
  // Ships on the calling thread (a mutation's with nothing in flight, an
  // acknowledgement's reader) if the shipper is not at work; false when it
  // must be rung.
  bool ShipInline();
  // A batch sent to a synced standby is not acknowledged yet.
  bool InFlightLocked() const REQUIRES(mu_);
  // The shipper has nothing to do but batches: no copy under way, no
  // standby to publish or to leave the set (handshakes are the readers').
  // Then, with nothing in flight, a mutation's thread ships (ShipInline);
  // with a batch in flight, the reader of its acknowledgement does.
  bool QuietLocked() const REQUIRES(mu_);
  void Drop(Standby& s);
  // The sequence mutations may count on (UINT64_MAX when none need wait).
  uint64_t AckedLocked() const REQUIRES(mu_);
  // Brings the in-sync set up to date: synced standbys join (waited for),
  // then are published once they hold all that was acknowledged; gone ones
  // leave once the set without them is published.
  void UpdateInSync();
  // A synced standby joins the set: waited for from now on (once).
  void JoinLocked(const std::string& id, uint64_t acked) REQUIRES(mu_);
  // The set to publish next (the current one when nothing changes).
  std::set<std::string> NextInSyncLocked() REQUIRES(mu_);
  // Calls the waiters whose sequence is covered now; how many it called.
  size_t Release();
  // Calls every waiter (fenced: none will be acknowledged).
  void ReleaseAll();

  Directory& dir_;
  const ReplicationLeaderOptions options_;
  mutable Mutex mu_;
  // Held by whoever writes batches or a full copy (the shipper; a
  // mutation's thread in ShipInline, which only tries it): batches go out
  // in the order they were taken, and none between a copy's start and its
  // standby's first batch. Taken before mu_, never while holding it.
  std::mutex ship_mu_;
  std::string frame_;  // a batch's frame, reused (ship_mu_)
  Doorbell doorbell_;  // wakes the shipper (doorbell.h: why not a condition variable)
  bool running_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<Standby>> standbys_ GUARDED_BY(mu_);
  // One per adopted connection; `done` set as its thread's last step, so
  // Adopt joins finished ones (a standby that reconnects again and again
  // leaves no threads behind).
  struct Reader {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void ReapReadersLocked() REQUIRES(mu_);
  std::vector<Reader> readers_ GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ GUARDED_BY(mu_);
  uint64_t shipped_seq_ GUARDED_BY(mu_) = 0;
  // The highest sequence a waiter left to the reader of an acknowledgement
  // to ship (WhenReplicated, a batch in flight).
  uint64_t wanted_seq_ GUARDED_BY(mu_) = 0;
  // The in-sync set: `in_sync_` as published, `joining_` waited for but not
  // yet published; the last acknowledgement of each of their ids (kept
  // after a standby's connection ends, until it leaves the set).
  std::set<std::string> in_sync_ GUARDED_BY(mu_);
  std::set<std::string> joining_ GUARDED_BY(mu_);
  std::map<std::string, uint64_t> required_acked_ GUARDED_BY(mu_);
  uint64_t released_seq_ GUARDED_BY(mu_) = 0;  // the highest seq acknowledged to a caller
  uint64_t anonymous_ GUARDED_BY(mu_) = 0;     // ids of standbys that gave none
  ReplicationLeaderStats counters_ GUARDED_BY(mu_);
  std::thread shipper_;
};

}  // namespace shelfmark
