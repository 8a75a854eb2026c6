#include "replication/replication_leader.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <mutex>
#include <utility>

#include "auth/proof.h"
#include "common/clock.h"
#include "common/socket_io.h"
#include "directory/shard.h"
#include "replication/frame_io.h"
#include "replication/replication_wire.h"

namespace shelfmark {
namespace {

constexpr uint64_t kNoWait = std::numeric_limits<uint64_t>::max();
// Shards per frame of a full copy (a frame stays far below the size limit).
constexpr uint32_t kShardsPerCopyFrame = 16;
// The batch buffer kept between batches (a larger one is given back).
constexpr size_t kKeptFrameBytes = size_t{16} << 20;

int64_t NowMs() { return SteadyClock().NowMs(); }

// Puts every object of a full copy's frame into one ShardState: one payload
// (one zstd frame) per frame instead of one per shard (a batch of changes
// comes as one already: Directory::TakeChanges). The standby files each
// object by its own key's hash (StandbyState::Apply), whatever shard the
// frame names.
void MergeShards(ChangeSet* c) {
  if (c->shards.size() < 2) return;
  ShardState& all = c->shards.front();
  for (size_t i = 1; i < c->shards.size(); ++i) {
    for (ObjectState& o : c->shards[i].objects) all.objects.push_back(std::move(o));
  }
  c->shards.resize(1);
}

}  // namespace

struct ReplicationLeader::Standby {
  // kWatching: a watch connection (kHelloWatch), held open and silent.
  enum class State { kHandshake, kCopying, kSynced, kWatching, kDead };
  UniqueFd fd;
  State state = State::kHandshake;  // guarded by the leader's mu_
  bool watch = false;               // the hello asked for a watch connection
  std::string id;                   // its name in the in-sync set (set by the handshake)
  uint64_t acked = 0;               // guarded by the leader's mu_
  uint64_t sent = 0;                // guarded by the leader's mu_
  int64_t unacked_since_ms = 0;     // guarded by the leader's mu_; 0: all acked
  // Guarded by the leader's ship_mu_: the rest of the frames a ship on a
  // mutation's thread could not write at once (ShipInline), written by the
  // shipper before anything else goes to this standby.
  std::string backlog;
};

ReplicationLeader::ReplicationLeader(Directory& directory, ReplicationLeaderOptions options)
    : dir_(directory), options_(std::move(options)) {}

ReplicationLeader::~ReplicationLeader() { Stop(); }

void ReplicationLeader::Start() {
  MutexLock lock(&mu_);
  if (running_) return;
  dir_.EnableChangeTracking();
  running_ = true;
  stopping_ = false;
  // A new term publishes its own set; sequences start over with the
  // directory this term serves.
  in_sync_.clear();
  joining_.clear();
  required_acked_.clear();
  released_seq_ = 0;
  shipped_seq_ = 0;
  wanted_seq_ = 0;
  shipper_ = std::thread([this] { ShipLoop(); });
}

void ReplicationLeader::Stop() {
  std::vector<Reader> readers;
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    stopping_ = true;
    for (auto& s : standbys_) {
      s->state = Standby::State::kDead;
      ::shutdown(s->fd.get(), SHUT_RDWR);
    }
    standbys_.clear();
    readers.swap(readers_);
  }
  doorbell_.Ring();
  shipper_.join();
  for (Reader& r : readers) r.thread.join();
  // A mutation's thread still shipping (ShipInline) is done past this.
  { std::lock_guard<std::mutex> ship(ship_mu_); }
  {
    MutexLock lock(&mu_);
    running_ = false;
  }
  Release();
}

void ReplicationLeader::Adopt(int fd, std::string first,
                              std::function<void(bool proven)> handshake_done) {
  auto s = std::make_shared<Standby>();
  s->fd.Reset(fd);
  MutexLock lock(&mu_);
  if (!running_ || stopping_) return;  // `s` closes the descriptor
  ReapReadersLocked();
  if (!MakeRoomLocked()) return;
  standbys_.push_back(s);
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread thread([this, s, done, first = std::move(first),
                      handshake_done = std::move(handshake_done)]() mutable {
    ReadLoop(std::move(s), std::move(first), handshake_done);
    done->store(true);  // last: nothing after it touches the leader
  });
  readers_.push_back({std::move(thread), std::move(done)});
}

bool ReplicationLeader::MakeRoomLocked() {
  if (standbys_.size() < std::max<size_t>(1, options_.max_connections)) return true;
  // standbys_ is in the order of adoption: the first in its handshake is
  // the oldest (a stranger's, most likely: a standby's takes milliseconds).
  auto oldest = std::find_if(standbys_.begin(), standbys_.end(), [](const auto& s) {
    return s->state == Standby::State::kHandshake;
  });
  if (oldest == standbys_.end()) {
    ++counters_.rejected;
    return false;
  }
  (*oldest)->state = Standby::State::kDead;  // its reader ends at once
  ::shutdown((*oldest)->fd.get(), SHUT_RDWR);
  standbys_.erase(oldest);
  ++counters_.evicted;
  return true;
}

void ReplicationLeader::ReapReadersLocked() {
  std::erase_if(readers_, [](Reader& r) {
    if (!r.done->load()) return false;
    r.thread.join();  // it is past its last step: returns at once
    return true;
  });
}

ErrorCode ReplicationLeader::Handshake(Standby& s, std::string* pending) {
  const int timeout = static_cast<int>(options_.io_timeout_ms);
  const FrameLimits limits{kMaxControlFrameBytes, timeout, timeout};
  std::string body;
  if (ReadFrame(s.fd.get(), limits, pending, &body) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  auto hello = DecodeHello(body);
  if (!hello.ok()) return hello.error();
  s.watch = (hello->flags & kHelloWatch) != 0;
  {
    MutexLock lock(&mu_);
    s.id = !hello->id.empty() ? hello->id : "#" + std::to_string(++anonymous_);
  }
  std::string out;
  ReplicationChallenge challenge;
  if (hello->cluster_id != options_.cluster_id) challenge.code = ErrorCode::PERMISSION_DENIED;
  challenge.required = !options_.tokens.empty();
  const auth::Nonce nonce = auth::NewNonce();
  if (challenge.required) challenge.server_nonce = std::string(auth::Bytes(nonce));
  AppendChallenge(challenge, &out);
  if (WriteFrames(s.fd.get(), timeout, out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  if (challenge.code != ErrorCode::OK) return challenge.code;
  ReplicationWelcome welcome;
  if (challenge.required) {
    if (ReadFrame(s.fd.get(), limits, pending, &body) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
    auto proof = DecodeProof(body);
    if (!proof.ok()) return proof.error();
    const auth::TokenEntry* entry =
        options_.tokens.Identify(challenge.server_nonce, hello->client_nonce, *proof);
    if (entry == nullptr || (entry->roles & auth::kRoleAdmin) == 0 || !entry->tenant.empty()) {
      welcome.code = ErrorCode::UNAUTHENTICATED;
    } else {
      welcome.server_proof = std::string(auth::BytesOf(auth::Prove(
          entry->token, auth::kMasterServerLabel, {challenge.server_nonce, hello->client_nonce})));
    }
  }
  out.clear();
  AppendWelcome(welcome, &out);
  if (WriteFrames(s.fd.get(), timeout, out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  return welcome.code;
}

void ReplicationLeader::ReadLoop(std::shared_ptr<Standby> s, std::string first,
                                 const std::function<void(bool)>& handshake_done) {
  const bool proven = Handshake(*s, &first) == ErrorCode::OK;
  if (handshake_done && !options_.tokens.empty()) {
    bool stopping = false;
    {
      MutexLock lock(&mu_);
      stopping = stopping_;
    }
    if (!stopping) handshake_done(proven);
  }
  if (!proven) {
    Drop(*s);
    return;
  }
  if (s->watch) {
    Watch(std::move(s));
    return;
  }
  {
    MutexLock lock(&mu_);
    if (s->state != Standby::State::kHandshake) return;  // dropped meanwhile
    s->state = Standby::State::kCopying;
  }
  doorbell_.Ring();
  std::string body;
  std::string none;
  // Acknowledgements until the connection ends; a stall is the shipper's
  // to notice (an idle standby sends nothing). The reader polls for the
  // next one only after an acknowledgement that released a lone mutation
  // (ack_spin_us): when the RPC threads are busy, a reader spinning on the
  // leader's CPUs would take its share of them.
  FrameLimits acks = AfterHandshake();
  while (ReadFrame(s->fd.get(), acks, &none, &body) == ErrorCode::OK) {
    auto ack = DecodeAck(body);
    if (!ack.ok()) break;
    bool ship = false;
    {
      MutexLock lock(&mu_);
      s->acked = std::max(s->acked, *ack);
      if (s->acked >= s->sent) s->unacked_since_ms = 0;
      if (auto r = required_acked_.find(s->id); r != required_acked_.end()) {
        r->second = std::max(r->second, s->acked);
      }
      // The last acknowledgement of the batch in flight: the changes waited
      // for meanwhile go now, from this thread (WhenReplicated left them).
      ship = wanted_seq_ > shipped_seq_ && !InFlightLocked();
    }
    if (ship && !ShipInline()) doorbell_.Ring();
    // One mutation acknowledged and none waiting behind it: its client's
    // next put likely comes alone too, its acknowledgement within
    // microseconds.
    const size_t released = Release();
    acks.spin_us = released == 1 && !ship ? options_.ack_spin_us : 0;
  }
  Drop(*s);
}

FrameLimits ReplicationLeader::AfterHandshake() const {
  return {kMaxControlFrameBytes, -1, static_cast<int>(options_.io_timeout_ms)};
}

void ReplicationLeader::Watch(std::shared_ptr<Standby> s) {
  {
    MutexLock lock(&mu_);
    if (s->state != Standby::State::kHandshake) return;  // dropped meanwhile
    s->state = Standby::State::kWatching;
  }
  // Held until the standby goes (or Stop shuts it down); a watcher that
  // sends anything breaks the protocol and is dropped.
  std::string body, none;
  (void)ReadFrame(s->fd.get(), AfterHandshake(), &none, &body);
  Drop(*s);
}

void ReplicationLeader::Drop(Standby& s) {
  {
    MutexLock lock(&mu_);
    if (s.state == Standby::State::kDead) return;
    s.state = Standby::State::kDead;
    ::shutdown(s.fd.get(), SHUT_RDWR);
    std::erase_if(standbys_, [&](const auto& p) { return p.get() == &s; });
    ++counters_.dropped;
  }
  doorbell_.Ring();  // the shipper publishes the in-sync set without it
  Release();
}

void ReplicationLeader::FullCopy(Standby& s) {
  const int timeout = static_cast<int>(options_.io_timeout_ms);
  // Every change counted up to here is in the shards exported below (each
  // is exported after this read); later ones follow in batches.
  const uint64_t seq = dir_.ChangeSeq();
  ReplicationBatch batch;
  batch.flags = kBatchReset;
  batch.changes.has_segments = true;
  batch.changes.segments = dir_.ExportSegmentTable();
  batch.changes.held = dir_.ExportHeldRanges();
  std::string out;
  uint64_t sent_bytes = 0;
  bool ok = true;
  for (uint32_t index = 0; ok && index < kShardCount; ++index) {
    ShardState shard = dir_.ExportShardLive(index);
    if (!shard.objects.empty()) batch.changes.shards.push_back(std::move(shard));
    if (batch.changes.shards.size() < kShardsPerCopyFrame && index + 1 < kShardCount) continue;
    if (index + 1 == kShardCount) {
      batch.flags |= kBatchSynced;
      batch.changes.seq = seq;
    }
    MergeShards(&batch.changes);
    out.clear();
    AppendCopyBatch(batch, &out);
    ok = WriteFrames(s.fd.get(), timeout, out) == ErrorCode::OK;
    sent_bytes += out.size();
    batch = ReplicationBatch{};
  }
  if (!ok) {
    Drop(s);
    return;
  }
  MutexLock lock(&mu_);
  if (s.state != Standby::State::kCopying) return;
  s.state = Standby::State::kSynced;
  s.sent = seq;
  s.unacked_since_ms = s.acked < seq ? NowMs() : 0;  // (its acknowledgement may be in)
  JoinLocked(s.id, s.acked);  // published later (UpdateInSync)
  counters_.bytes += sent_bytes;
}

bool ReplicationLeader::Send(Standby& s, std::string_view frames, bool may_block) {
  const int timeout = static_cast<int>(options_.io_timeout_ms);
  if (!may_block) {
    if (s.backlog.empty()) {
      const ssize_t n =
          ::send(s.fd.get(), frames.data(), frames.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      if (n > 0) frames.remove_prefix(static_cast<size_t>(n));
    }
    s.backlog.append(frames);  // the shipper writes it (ShipInline rings it)
    return true;
  }
  if (!s.backlog.empty()) {
    if (WriteFrames(s.fd.get(), timeout, s.backlog) != ErrorCode::OK) return false;
    s.backlog.clear();
  }
  return frames.empty() || WriteFrames(s.fd.get(), timeout, frames) == ErrorCode::OK;
}

void ReplicationLeader::FlushBacklogs() {
  std::vector<std::shared_ptr<Standby>> to;
  {
    MutexLock lock(&mu_);
    for (auto& s : standbys_) {
      if (s->state == Standby::State::kSynced) to.push_back(s);
    }
  }
  for (auto& s : to) {
    if (!s->backlog.empty() && !Send(*s, {}, /*may_block=*/true)) Drop(*s);
  }
}

bool ReplicationLeader::ShipBatch(bool may_block) {
  std::vector<std::shared_ptr<Standby>> to;
  {
    MutexLock lock(&mu_);
    if (!running_ || stopping_ || dir_.ChangeSeq() == shipped_seq_) return true;
    for (auto& s : standbys_) {
      if (s->state == Standby::State::kSynced) to.push_back(s);
    }
  }
  ReplicationBatch batch;
  batch.changes = dir_.TakeChanges();
  // Into the reused buffer (ship_mu_ held): a batch of thousands of objects
  // in a new string each time cost page faults for every one.
  std::string& out = frame_;
  out.clear();
  AppendBatch(batch, &out);
  {
    // Recorded before the write: a standby's acknowledgement can come
    // before this thread is past it, and its reader must then see the batch
    // as the one in flight, not ship (or ring the shipper for) changes this
    // batch carries.
    MutexLock lock(&mu_);
    shipped_seq_ = batch.changes.seq;
    for (auto& s : to) {
      if (s->state != Standby::State::kSynced) continue;
      if (s->acked < batch.changes.seq && s->unacked_since_ms == 0) {
        s->unacked_since_ms = NowMs();
      }
      s->sent = batch.changes.seq;
    }
  }
  bool written = true;
  size_t sent_to = 0;
  for (auto& s : to) {
    if (!Send(*s, out, may_block)) {
      Drop(*s);
      continue;
    }
    ++sent_to;
    if (!s->backlog.empty()) written = false;
  }
  {
    MutexLock lock(&mu_);
    ++counters_.batches;
    if (!may_block) ++counters_.inline_batches;
    counters_.bytes += sent_to * out.size();
  }
  if (out.capacity() > kKeptFrameBytes) out = std::string();
  Release();
  return written;
}

bool ReplicationLeader::ShipInline() {
  std::unique_lock<std::mutex> ship(ship_mu_, std::try_to_lock);
  // The shipper is at work (it may have taken the changes before this
  // mutation's): it is rung instead.
  if (!ship.owns_lock()) return false;
  return ShipBatch(/*may_block=*/false);
}

bool ReplicationLeader::InFlightLocked() const {
  return std::any_of(standbys_.begin(), standbys_.end(), [](const auto& s) {
    return s->state == Standby::State::kSynced && s->acked < s->sent;
  });
}

bool ReplicationLeader::QuietLocked() const {
  if (!joining_.empty()) return false;  // the shipper publishes the set
  // A connection in its handshake (a standby's watch connection, a
  // stranger) is no work of the shipper's: its reader rings it once a copy
  // is due. (Counting it sent every put to the shipper while a standby's
  // watch connection was being proven, and while any stranger idled.)
  for (const auto& s : standbys_) {
    if (s->state == Standby::State::kCopying) return false;
  }
  // A standby waited for and gone: the shipper publishes the set without it.
  for (const auto& [id, acked] : required_acked_) {
    if (std::none_of(standbys_.begin(), standbys_.end(), [&id = id](const auto& s) {
          return s->state == Standby::State::kSynced && s->id == id;
        })) {
      return false;
    }
  }
  return true;
}

void ReplicationLeader::ShipLoop() {
  for (;;) {
    std::vector<std::shared_ptr<Standby>> copying;
    std::vector<std::shared_ptr<Standby>> stalled;
    doorbell_.Wait(options_.idle_ship_ms);  // at once when rung meanwhile
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      const int64_t now = NowMs();
      for (auto& s : standbys_) {
        if (s->state == Standby::State::kCopying) copying.push_back(s);
        if (s->state == Standby::State::kSynced && s->unacked_since_ms != 0 &&
            now - s->unacked_since_ms > options_.io_timeout_ms) {
          stalled.push_back(s);
        }
      }
    }
    for (auto& s : stalled) Drop(*s);
    UpdateInSync();
    if (options_.may_acknowledge && !options_.may_acknowledge()) ReleaseAll();
    std::lock_guard<std::mutex> ship(ship_mu_);
    FlushBacklogs();
    for (auto& s : copying) {
      {
        MutexLock lock(&mu_);
        ++counters_.full_copies;
      }
      FullCopy(*s);
    }
    // A copied standby joined: published by the next round at once.
    if (!copying.empty()) doorbell_.Ring();
    ShipBatch(/*may_block=*/true);  // also drains the feed when no standby listens
  }
}

uint64_t ReplicationLeader::AckedLocked() const {
  if (options_.sync_standbys <= 0 || required_acked_.empty()) return kNoWait;
  uint64_t acked = kNoWait;
  for (const auto& [id, seq] : required_acked_) acked = std::min(acked, seq);
  return acked;
}

void ReplicationLeader::JoinLocked(const std::string& id, uint64_t acked) {
  if (options_.sync_standbys > 0 && in_sync_.count(id) == 0 && joining_.insert(id).second) {
    required_acked_[id] = acked;
  }
}

std::set<std::string> ReplicationLeader::NextInSyncLocked() {
  std::map<std::string, uint64_t> synced;  // id -> acked of a synced connection
  for (const auto& s : standbys_) {
    if (s->state == Standby::State::kSynced) synced[s->id] = std::max(synced[s->id], s->acked);
  }
  for (const auto& [id, acked] : synced) JoinLocked(id, acked);
  // A joining standby that went was never published: it just leaves.
  for (auto it = joining_.begin(); it != joining_.end();) {
    if (synced.count(*it) == 0) {
      required_acked_.erase(*it);
      it = joining_.erase(it);
    } else {
      ++it;
    }
  }
  std::set<std::string> next;
  for (const std::string& id : in_sync_) {
    if (synced.count(id) != 0) next.insert(id);  // gone ones leave
  }
  for (const std::string& id : joining_) {
    // Published once it holds all that was acknowledged (nothing newer is
    // acknowledged without it since it joined).
    if (required_acked_[id] >= released_seq_) next.insert(id);
  }
  return next;
}

void ReplicationLeader::UpdateInSync() {
  if (options_.sync_standbys <= 0) return;
  std::set<std::string> next;
  {
    MutexLock lock(&mu_);
    next = NextInSyncLocked();
    if (next == in_sync_) return;
  }
  const std::vector<std::string> ids(next.begin(), next.end());
  if (options_.publish_in_sync && !options_.publish_in_sync(ids)) return;  // tried again next round
  {
    MutexLock lock(&mu_);
    for (const std::string& id : in_sync_) {
      if (next.count(id) == 0) required_acked_.erase(id);
    }
    for (const std::string& id : next) joining_.erase(id);
    in_sync_ = std::move(next);
    ++counters_.in_sync_publications;
  }
  Release();
}

bool ReplicationLeader::WhenReplicated(uint64_t seq, std::function<void()> done) {
  bool quiet = false;
  {
    MutexLock lock(&mu_);
    if (!running_ || stopping_) return true;
    if (AckedLocked() >= seq) {
      released_seq_ = std::max(released_seq_, seq);
      return true;
    }
    waiters_.push_back({seq, std::move(done)});
    // Shipped already (another waiter rang for it): its acknowledgement
    // releases this one; no wake-up of the shipper needed.
    if (seq <= shipped_seq_) return false;
    quiet = QuietLocked();
    if (quiet) {
      wanted_seq_ = std::max(wanted_seq_, seq);
      // A batch in flight: the reader of its last acknowledgement ships
      // this change with all that came meanwhile (ReadLoop), one batch in
      // flight at a time and no shipper woken for it.
      if (InFlightLocked()) return false;
    }
  }
  // Nothing in flight: this thread ships the batch itself (waking the
  // shipper for it cost a wake-up per unbatched put). The shipper is rung
  // when it has other work (a copy, a standby to publish) or is at work.
  if (!quiet || !ShipInline()) doorbell_.Ring();
  return false;
}

bool ReplicationLeader::Replicated(uint64_t seq) const {
  MutexLock lock(&mu_);
  // Stopped (a lost term, a shutdown): what waited was not replicated.
  return running_ && !stopping_ && AckedLocked() >= seq;
}

void ReplicationLeader::ReleaseAll() {
  std::vector<Waiter> all;
  {
    MutexLock lock(&mu_);
    all.swap(waiters_);
  }
  for (Waiter& w : all) w.done();  // not acknowledged: the caller re-checks the fence
}

size_t ReplicationLeader::Release() {
  std::vector<Waiter> ready;
  {
    MutexLock lock(&mu_);
    const uint64_t acked = (!running_ || stopping_) ? kNoWait : AckedLocked();
    auto split = std::partition(waiters_.begin(), waiters_.end(),
                                [acked](const Waiter& w) { return w.seq > acked; });
    for (auto w = split; w != waiters_.end(); ++w) released_seq_ = std::max(released_seq_, w->seq);
    std::move(split, waiters_.end(), std::back_inserter(ready));
    waiters_.erase(split, waiters_.end());
  }
  for (Waiter& w : ready) w.done();
  return ready.size();
}

ReplicationLeaderStats ReplicationLeader::stats() const {
  MutexLock lock(&mu_);
  ReplicationLeaderStats out = counters_;
  const int64_t now = NowMs();
  for (const auto& s : standbys_) {
    if (s->state == Standby::State::kWatching) ++out.watchers;
    if (s->state == Standby::State::kHandshake || s->state == Standby::State::kWatching) continue;
    ++out.standbys;
    if (s->state != Standby::State::kSynced) continue;
    ++out.in_sync;
    if (s->unacked_since_ms != 0) out.lag_ms = std::max(out.lag_ms, now - s->unacked_since_ms);
  }
  out.reader_threads = readers_.size();
  out.shipper_wakes = doorbell_.wakes();
  out.connections = standbys_.size();
  out.in_sync_ids.assign(in_sync_.begin(), in_sync_.end());
  out.change_seq = dir_.ChangeSeq();
  const uint64_t acked = AckedLocked();
  out.acked_seq = acked == kNoWait ? out.change_seq : acked;
  out.lag_ops = out.change_seq - std::min(out.change_seq, out.acked_seq);
  return out;
}

}  // namespace shelfmark
