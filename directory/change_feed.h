// ChangeFeed: which parts of the directory changed since they were last
// taken, for hot standbys (replication/: the leader ships the current state
// of every changed key, so a standby's copy converges to the leader's).
//
// Changes are states, not operations: the feed records WHICH keys (and
// whether the segment table) changed; whoever takes them reads their state
// at that moment. So a key changed twice is shipped once, in its latest
// state, and a state shipped twice is harmless.
//
// Protocol (the sequence is what a mutation's caller waits on before it
// acknowledges, see Directory::ChangeSeq): a mutation, holding the key's
// shard lock exclusively, appends the key to the shard's `changed` list,
// then MarkShard() sets the shard's flag and then advances the sequence.
// TakeChanges reads the sequence S first, then takes every flagged shard's
// list under that shard's lock: any mutation counted in S had set its flag
// before S was read, and holds (or held) the shard lock while appending, so
// its key is in what is taken. Off until Enable(): nothing is recorded then.
//
// Frees: a range a standby may hold as an object's replica is freed only
// after that key was touched (the mutation marks it first). The caller of
// an allocation serialised after the free (the segment allocator's lock)
// reads the sequence afterwards, so what it waits on covers the change that
// freed its range: a standby that acknowledged it no longer holds the old
// object there.
//
// Held ranges (held_ranges.h: ranges no object holds) follow the same
// protocol: record in the list, then MarkHeld(). A take takes the releases
// before the shards and the adds after them: a range passed between an
// object and the list under the key's shard lock (a pending version
// swapped in, a replica retired) is then never missing from both.
//
// Thread safety: all members are atomics.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "directory/shard.h"

namespace shelfmark {

class ChangeFeed {
 public:
  bool enabled() const { return enabled_.load(); }
  void Enable() { enabled_.store(true); }

  // After a key of shard `index` was appended to its list.
  void MarkShard(size_t index) {
    shards_[index].store(true);
    seq_.fetch_add(1);
  }
  // After the segment table, the disks or the view version changed.
  void MarkSegments() {
    segments_.store(true);
    seq_.fetch_add(1);
  }
  // After a held range was added or released (held_ranges.h).
  void MarkHeld() {
    held_.store(true);
    seq_.fetch_add(1);
  }
  uint64_t seq() const { return seq_.load(); }
  // Clears and returns the flag. A load first: the shipper scans all
  // kShardCount flags for every batch, and an exchange of each would take
  // every flag's cache line from the mutating threads (a batch of one key
  // paid for 1024 of them). A flag set before seq() was read is seen by the
  // load (its store precedes that increment).
  bool TakeShard(size_t index) { return shards_[index].load() && shards_[index].exchange(false); }
  bool TakeSegments() { return segments_.exchange(false); }
  bool TakeHeld() { return held_.load() && held_.exchange(false); }

 private:
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> seq_{0};
  std::atomic<bool> segments_{false};
  std::atomic<bool> held_{false};
  std::array<std::atomic<bool>, kShardCount> shards_{};
};

}  // namespace shelfmark
