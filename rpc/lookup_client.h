// LookupClient: the client side of the master's lookup channel
// (rpc/lookup_wire.h, rpc/mutation_wire.h): GetReplicaList, PutStart,
// PutEnd, PutRevoke, ExistKey, Remove and their batch forms over a plain
// blocking TCP connection to the master's RPC port. The calling thread
// sends the request, polls for the reply for up to reply_poll_us, then blocks
// in recv() for it: one send and one receive per lookup, no event loop and
// no other thread in between.
//
// Connection: made on first use (and again after any failure); with a
// token, the same challenge-response proof as the Cap'n Proto handshake
// (auth/proof.h; the master proves itself back) runs before the first
// lookup. A new connection always starts with the challenge (a token or
// not) until the master has answered once, so a master that does not
// speak the channel is found out before any mutation is sent.
// Failures: RPC_FAIL for transport errors, timeouts and malformed replies,
// after which the connection is closed; the master's own codes otherwise
// (UNAUTHENTICATED, PERMISSION_DENIED, ...).
// Time: each call ends by its deadline, connect, handshake, send and
// receive together (MasterClient passes its call's, so that a lookup and
// its Cap'n Proto fallback share one call_timeout_ms); without one, by
// call_timeout_ms (10 s when <= 0) from its start.
//
// Thread safety: one thread at a time (MasterClient owns one per thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/reply_poll.h"
#include "common/result.h"
#include "common/socket_io.h"
#include "common/types.h"

namespace shelfmark {

struct LookupClientOptions {
  std::string address;  // host:port of the master's RPC port
  std::string token;    // "" : no handshake
  int64_t call_timeout_ms = 10'000;
  // After a request is sent, how long the thread polls for the reply before
  // it blocks in recv() (common/reply_poll.h; 0: it blocks at once).
  int64_t reply_poll_us = DefaultReplyPollMicros();
};

class LookupClient {
 public:
  using Clock = std::chrono::steady_clock;
  using Deadline = std::optional<Clock::time_point>;

  explicit LookupClient(LookupClientOptions options);

  Result<GetReplicaListResponse> GetReplicaList(std::string_view tenant, std::string_view key,
                                                Deadline deadline = std::nullopt);
  // One answer per key, in order (the outer Result fails only as a whole).
  Result<std::vector<Result<GetReplicaListResponse>>> BatchGetReplicaList(
      std::string_view tenant, const std::vector<std::string>& keys,
      Deadline deadline = std::nullopt);

  Result<std::vector<ReplicaDescriptor>> PutStart(const UUID& client, std::string_view tenant,
                                                  std::string_view key, uint64_t size,
                                                  const PutConfig& config,
                                                  Deadline deadline = std::nullopt);
  // PutEnd (`end`) or PutRevoke; `checksum`: PutEnd's (MasterClient::PutEnd).
  ErrorCode PutFinish(bool end, const UUID& client, std::string_view tenant, std::string_view key,
                      ReplicaType type, Deadline deadline = std::nullopt,
                      std::optional<uint64_t> checksum = std::nullopt);
  Result<std::vector<Result<std::vector<ReplicaDescriptor>>>> BatchPutStart(
      const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& sizes, const PutConfig& config,
      const std::vector<uint64_t>& checksums, Deadline deadline = std::nullopt);
  // BatchPutEnd (`end`) or BatchPutRevoke; `checksums`: BatchPutEnd's.
  Result<std::vector<ErrorCode>> BatchPutFinish(bool end, const UUID& client,
                                                std::string_view tenant,
                                                const std::vector<std::string>& keys,
                                                Deadline deadline = std::nullopt,
                                                const std::vector<uint64_t>& checksums = {});
  // The one-round-trip put (MasterClient::ReservePut, CommitPut).
  Result<PutReservationGrant> ReservePut(const UUID& client, std::string_view tenant,
                                         uint64_t size, const PutConfig& config,
                                         Deadline deadline = std::nullopt);
  Result<std::optional<PutReservationGrant>> CommitPut(const UUID& client, std::string_view tenant,
                                                       std::string_view key, uint64_t reservation,
                                                       bool renew, const PutConfig& config,
                                                       Deadline deadline = std::nullopt);
  // Their batch forms (MasterClient::BatchReservePut, BatchCommitPut).
  Result<std::vector<PutReservationGrant>> BatchReservePut(const UUID& client,
                                                           std::string_view tenant,
                                                           const std::vector<uint64_t>& sizes,
                                                           const PutConfig& config,
                                                           Deadline deadline = std::nullopt);
  Result<std::vector<Result<std::optional<PutReservationGrant>>>> BatchCommitPut(
      const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
      const std::vector<uint64_t>& reservations, const std::vector<uint64_t>& checksums, bool renew,
      const PutConfig& config, Deadline deadline = std::nullopt);
  Result<bool> ExistKey(std::string_view tenant, std::string_view key,
                        Deadline deadline = std::nullopt);
  Result<std::vector<Result<bool>>> BatchExistKey(std::string_view tenant,
                                                  const std::vector<std::string>& keys,
                                                  Deadline deadline = std::nullopt);
  ErrorCode Remove(std::string_view tenant, std::string_view key, bool force,
                   Deadline deadline = std::nullopt);
  Result<std::vector<ErrorCode>> BatchRemove(std::string_view tenant,
                                             const std::vector<std::string>& keys, bool force,
                                             Deadline deadline = std::nullopt);

  // True once any reply arrived on this client (the master speaks the
  // channel); MasterClient falls back to Cap'n Proto while it is false.
  bool ever_answered() const { return ever_answered_; }
  // Whether the last call's request may have reached the master (its send
  // began): a mutation that failed after that is not repeated elsewhere.
  bool request_sent() const { return request_sent_; }
  // The number of the connection open now, counted from 1 per connect;
  // 0 when none is open, or when the master ended it (a hang-up or unread
  // bytes wait on the socket: between calls nothing may), which closes it
  // here too (the next call connects anew instead of failing on it). What
  // the master granted on a connection numbered n belongs to a master
  // process that is still the one this client talks to while this stays
  // n: a restarted master always ends its connections (one-round-trip puts
  // rely on it).
  uint64_t IntactConnection();

 private:
  // Starts a call: its deadline, `deadline` or call_timeout_ms from now.
  void Begin(Deadline deadline);
  // Milliseconds left until the call's deadline (0: passed), rounded up.
  int LeftMs() const;
  // Bounds the socket's next blocking send or receive by the deadline
  // (SO_SNDTIMEO, SO_RCVTIMEO), changing them only when what is left
  // differs from what they hold; false once the deadline passed.
  bool Arm();
  ErrorCode EnsureConnected();
  ErrorCode Handshake();
  // Sends out_ (one request frame) and receives one reply frame; its body
  // is then [in_.data() + kLookupHeaderBytes, + *body_bytes). RPC_FAIL
  // (and the connection closed) on any transport error.
  ErrorCode RoundTrip(uint32_t* body_bytes);
  bool ReceiveAtLeast(size_t bytes);
  std::string_view Body(uint32_t body_bytes) const;
  // One call: connects (Begin, EnsureConnected), has `append(&out_)` write
  // the request frame, and decodes the reply body with `decode`.
  template <typename Ret, typename Append, typename Decode>
  Ret Exchange(Deadline deadline, Append&& append, Decode&& decode);

  LookupClientOptions options_;
  ReplyPoller poller_{options_.reply_poll_us};
  UniqueFd fd_;
  std::string out_;
  std::string in_;
  size_t have_ = 0;  // valid bytes in in_
  Clock::time_point deadline_{};  // of the call in progress
  int armed_ms_ = 0;  // the socket's send and receive time-outs (0: not set)
  bool ever_answered_ = false;
  uint64_t connections_ = 0;  // connects so far
  bool request_sent_ = false;
};

}  // namespace shelfmark
