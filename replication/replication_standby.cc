#include "replication/replication_standby.h"

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
  }
  cv_.notify_all();
}

void ReplicationStandby::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    stopping_ = true;
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }
  cv_.notify_all();
  thread_.join();
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

void ReplicationStandby::Run() {
  int64_t backoff_ms = 100;
  // The leader at this address closed the stream in order, and no session
  // since proved it alive (a handshake): is it gone? A process dying closes
  // its descriptors one by one, so its port may still take a connection or
  // two (reset at once) after the stream's FIN.
  bool maybe_gone = false;
  int probes_left = 0;  // bounded: a live master that closes early is not probed for long
  for (;;) {
    std::string address;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && target_.empty()) cv_.wait(mu_);
      if (stopping_) return;
      address = target_;
    }
    const SessionEnd end = Session(address);
    if (maybe_gone && end.refused) {
      maybe_gone = false;
      if (options_.on_leader_gone) options_.on_leader_gone(address);
    } else if (end.closed_in_order) {
      maybe_gone = true;
      probes_left = kGoneProbes;
    } else {
      maybe_gone = maybe_gone && !end.handshook && --probes_left > 0;
    }
    MutexLock lock(&mu_);
    stats_.connected = false;
    stats_.synced = false;
    if (end.rc != ErrorCode::OK) ++stats_.failures;
    if (stopping_) return;
    if (target_ != address) {
      backoff_ms = 100;
      maybe_gone = false;
      continue;
    }
    // Soon while the leader may be gone, else backing off.
    cv_.wait_for(mu_, std::chrono::milliseconds(maybe_gone ? kGoneProbeMs : backoff_ms));
    if (!maybe_gone) backoff_ms = std::min<int64_t>(backoff_ms * 2, 1000);
  }
}

ErrorCode ReplicationStandby::Handshake(int fd) {
  const int timeout = static_cast<int>(options_.io_timeout_ms);
  const auth::Nonce client_nonce = auth::NewNonce();
  std::string out;
  AppendHello({options_.cluster_id, std::string(auth::Bytes(client_nonce))}, &out);
  if (WriteFrames(fd, timeout, out) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
  std::string body, pending;
  if (ReadFrame(fd, timeout, &pending, &body) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
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
  if (ReadFrame(fd, timeout, &pending, &body) != ErrorCode::OK) return ErrorCode::RPC_FAIL;
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
  std::string out;
  AppendAck(seq, &out);
  return WriteFrames(fd, static_cast<int>(options_.io_timeout_ms), out);
}

ReplicationStandby::SessionEnd ReplicationStandby::Session(const std::string& address) {
  SessionEnd end;
  const auto where = ParseHostPort(address);
  if (!where) {
    end.rc = ErrorCode::INVALID_PARAMS;
    return end;
  }
  UniqueFd fd = ConnectTcp(*where, static_cast<int>(options_.io_timeout_ms), &end.refused);
  if (!fd.valid()) {
    end.rc = ErrorCode::RPC_FAIL;
    return end;
  }
  {
    MutexLock lock(&mu_);
    if (stopping_ || target_ != address) return end;
    fd_ = fd.get();
  }
  end.rc = Handshake(fd.get());
  if (end.rc == ErrorCode::OK) {
    end.handshook = true;
    MutexLock lock(&mu_);
    stats_.connected = true;
  }
  auto copy = std::make_unique<StandbyState>();
  std::string body, pending;
  while (end.rc == ErrorCode::OK) {
    end.rc = ReadFrame(fd.get(), -1, &pending, &body, &end.closed_in_order);
    if (end.rc == ErrorCode::OK) end.rc = ApplyBatch(fd.get(), body, copy.get());
  }
  MutexLock lock(&mu_);
  fd_ = -1;
  // Our own Stop or a new target shut the descriptor down: that is no close
  // by the leader.
  if (stopping_ || target_ != address) end.closed_in_order = false;
  return end;
}

}  // namespace shelfmark
