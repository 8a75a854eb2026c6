#include "replication/replication_standby.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "auth/proof.h"
#include "common/clock.h"
#include "common/host_port.h"
#include "common/socket_io.h"
#include "replication/frame_io.h"
#include "replication/replication_wire.h"

namespace shelfmark {

ReplicationStandby::ReplicationStandby(ReplicationStandbyOptions options)
    : options_(std::move(options)) {}

ReplicationStandby::~ReplicationStandby() { Stop(); }

void ReplicationStandby::Start() {
  MutexLock lock(&mu_);
  if (running_) return;
  running_ = true;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
  watcher_ = std::thread([this] { WatchLoop(); });
}

void ReplicationStandby::Follow(const std::string& leader_address) {
  {
    MutexLock lock(&mu_);
    if (target_ == leader_address) return;
    // A copy counts only as the current leader's: another leader's copy is
    // kept (the state a takeover falls back to) but no longer counts.
    if (!leader_address.empty()) {
      if (!last_leader_.empty() && last_leader_ != leader_address) has_state_.store(false);
      last_leader_ = leader_address;
    }
    target_ = leader_address;
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    if (watch_fd_ >= 0) ::shutdown(watch_fd_, SHUT_RDWR);
  }
  cv_.notify_all();
}

void ReplicationStandby::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    stopping_ = true;
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    if (watch_fd_ >= 0) ::shutdown(watch_fd_, SHUT_RDWR);
  }
  cv_.notify_all();
  thread_.join();
  watcher_.join();
  MutexLock lock(&mu_);
  running_ = false;
}

ReplicationStandbyStats ReplicationStandby::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void ReplicationStandby::WithState(const std::function<void(const StandbyState&)>& f) const {
  MutexLock lock(&mu_);
  f(state_);
}

std::string ReplicationStandby::WaitForTarget() {
  MutexLock lock(&mu_);
  while (!stopping_ && target_.empty()) cv_.wait(mu_);
  return stopping_ ? "" : target_;
}

bool ReplicationStandby::Pause(const std::string& address, int64_t ms) {
  MutexLock lock(&mu_);
  if (stopping_) return false;
  if (target_ != address) return true;
  cv_.wait_for(mu_, std::chrono::milliseconds(ms));
  return !stopping_;
}

void ReplicationStandby::FollowLoop(const std::function<void(const std::string&)>& connect) {
  int64_t backoff_ms = 100;
  for (;;) {
    const std::string address = WaitForTarget();
    if (address.empty()) return;
    connect(address);
    {
      MutexLock lock(&mu_);
      if (target_ != address) backoff_ms = 0;  // a new leader: at once
    }
    if (!Pause(address, backoff_ms)) return;
    backoff_ms = std::clamp<int64_t>(backoff_ms * 2, 100, 1000);
  }
}

void ReplicationStandby::Run() {
  FollowLoop([this](const std::string& address) {
    const ErrorCode rc = Session(address);
    MutexLock lock(&mu_);
    stats_.connected = false;
    stats_.synced = false;
    if (rc != ErrorCode::OK) ++stats_.failures;
  });
}

void ReplicationStandby::WatchLoop() {
  FollowLoop([this](const std::string& address) {
    if (Watch(address) && LeaderRefuses(address) && options_.on_leader_gone) {
      options_.on_leader_gone(address);
    }
  });
}

bool ReplicationStandby::Watch(const std::string& address) {
  const auto where = ParseHostPort(address);
  if (!where) return false;
  UniqueFd fd = ConnectTcp(*where, static_cast<int>(options_.io_timeout_ms));
  if (!fd.valid()) return false;
  {
    MutexLock lock(&mu_);
    if (stopping_ || target_ != address) return false;
    watch_fd_ = fd.get();
  }
  bool closed_in_order = false;
  if (Handshake(fd.get(), kHelloWatch) == ErrorCode::OK) {
    std::string body, pending;
    // Nothing ever arrives on a watch connection: this returns when it ends.
    (void)ReadFrame(fd.get(), {kMaxControlFrameBytes}, &pending, &body, &closed_in_order);
  }
  MutexLock lock(&mu_);
  watch_fd_ = -1;
  // Our own Stop or a new target shut it down: no sign of the leader.
  return closed_in_order && !stopping_ && target_ == address;
}

bool ReplicationStandby::LeaderRefuses(const std::string& address) {
  const auto where = ParseHostPort(address);
  for (int i = 0; where && i < kGoneProbes; ++i) {
    bool refused = false;
    UniqueFd probe = ConnectTcp(*where, static_cast<int>(kGoneProbeMs), &refused);
    if (refused) return true;
    // Accepted (the dying process may not have closed its port yet) or
    // silent: look again shortly.
    probe.Reset();
    {
      MutexLock lock(&mu_);
      if (stopping_ || target_ != address) return false;
    }
    if (!Pause(address, kGoneProbeMs)) return false;
  }
  return false;
}

ErrorCode ReplicationStandby::Handshake(int fd, uint8_t flags) {
  const int timeout = static_cast<int>(options_.io_timeout_ms);
  const auth::Nonce client_nonce = auth::NewNonce();
  std::string out;
  AppendHello({options_.cluster_id, std::string(auth::Bytes(client_nonce)), flags, options_.id},
              &out);
  if (WriteFrames(fd, timeout, out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  // The leader has proven nothing yet: its answers are small and prompt.
  const FrameLimits limits{kMaxControlFrameBytes, timeout, timeout};
  std::string body, pending;
  if (ReadFrame(fd, limits, &pending, &body) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  auto challenge = DecodeChallenge(body);
  if (!challenge.ok()) return challenge.error();
  if (challenge->code != ErrorCode::OK) return challenge->code;
  const std::string_view server_nonce = challenge->server_nonce;
  if (challenge->required) {
    out.clear();
    AppendProof(auth::BytesOf(auth::Prove(options_.token, auth::kMasterClientLabel,
                                          {server_nonce, auth::Bytes(client_nonce)})),
                &out);
    if (WriteFrames(fd, timeout, out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  }
  if (ReadFrame(fd, limits, &pending, &body) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  auto welcome = DecodeWelcome(body);
  if (!welcome.ok()) return welcome.error();
  if (welcome->code != ErrorCode::OK) return welcome->code;
  if (!challenge->required) return ErrorCode::OK;
  const auth::Proof expected = auth::Prove(options_.token, auth::kMasterServerLabel,
                                           {server_nonce, auth::Bytes(client_nonce)});
  return auth::ProofMatches(expected, welcome->server_proof) ? ErrorCode::OK
                                                             : ErrorCode::UNAUTHENTICATED;
}

// Applies a batch: to the copy being built while one is under way (swapped
// in when it completes), else to the state; then acknowledges it.
ErrorCode ReplicationStandby::ApplyBatch(int fd, const std::string& body, StandbyState* copy) {
  auto batch = DecodeBatch(body);
  if (!batch.ok()) return batch.error();
  const uint64_t seq = batch->changes.seq;
  const bool reset = (batch->flags & kBatchReset) != 0;
  const bool synced = (batch->flags & kBatchSynced) != 0;
  bool live = false;  // applied to the state (no copy under way): acknowledged first
  {
    MutexLock lock(&mu_);
    live = !reset && stats_.synced;
  }
  ErrorCode acked = ErrorCode::OK;
  // The batch is decoded (it cannot fail to apply) and this thread applies
  // it before anything reads the state (a promotion Stop()s this thread
  // before it loads the copy), so the standby holds it from here: the
  // acknowledgement travels while it is applied.
  if (live) acked = SendAck(fd, seq);
  {
    MutexLock lock(&mu_);
    if (reset) copy->Reset();
    if (reset || stats_.synced == false) {
      copy->Apply(std::move(batch->changes));
      if (synced) {
        std::swap(state_, *copy);
        copy->Reset();
        stats_.synced = true;
        ++stats_.full_copies;
        has_state_.store(true);
      }
    } else {
      state_.Apply(std::move(batch->changes));
    }
    stats_.applied_seq = state_.seq();
    ++stats_.batches;
    stats_.last_batch_ms = SteadyClock().NowMs();
    if (!stats_.synced) return ErrorCode::OK;  // a copy under way: no ack yet
  }
  return live ? acked : SendAck(fd, seq);  // the last frame of a copy: acknowledged once swapped in
}

ErrorCode ReplicationStandby::SendAck(int fd, uint64_t seq) {
  std::string out;
  AppendAck(seq, &out);
  return WriteFrames(fd, static_cast<int>(options_.io_timeout_ms), out);
}

ErrorCode ReplicationStandby::Session(const std::string& address) {
  const auto where = ParseHostPort(address);
  if (!where) return ErrorCode::INVALID_PARAMS;
  UniqueFd fd = ConnectTcp(*where, static_cast<int>(options_.io_timeout_ms));
  if (!fd.valid()) return ErrorCode::RPC_FAIL;
  // Each acknowledgement leaves at once: under Nagle's rule one sent while
  // the previous is not yet acknowledged by TCP waits for the leader's
  // delayed ACK (up to 40 ms), and every put waiting on it with it. (The
  // leader's side inherits TCP_NODELAY from its listening socket.)
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  {
    MutexLock lock(&mu_);
    if (stopping_ || target_ != address) return ErrorCode::OK;
    fd_ = fd.get();
  }
  ErrorCode rc = Handshake(fd.get(), 0);
  if (rc == ErrorCode::OK) {
    MutexLock lock(&mu_);
    stats_.connected = true;
  }
  auto copy = std::make_unique<StandbyState>();
  std::string body, pending;
  while (rc == ErrorCode::OK) {
    // Batches, as the leader sends them; polled for a while after each
    // (frame_io.h, spin_us: most of an unbatched put's round trip).
    FrameLimits batches;
    batches.spin_us = kBatchSpinUs;
    rc = ReadFrame(fd.get(), batches, &pending, &body);
    if (rc == ErrorCode::OK) rc = ApplyBatch(fd.get(), body, copy.get());
  }
  MutexLock lock(&mu_);
  fd_ = -1;
  return rc;
}

}  // namespace shelfmark
