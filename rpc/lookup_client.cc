#include "rpc/lookup_client.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <utility>

#include "auth/proof.h"
#include "common/host_port.h"
#include "rpc/lookup_wire.h"
#include "rpc/mutation_wire.h"

namespace shelfmark {
namespace {

// Replies larger than this are refused (a batch of the master's largest
// allowed size stays far below it).
constexpr size_t kMaxReplyBytes = 1ull << 30;

// Makes the connected socket blocking (Arm bounds each wait) and turns
// Nagle off (a request is one small write).
bool MakeBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return false;
  int one = 1;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0;
}

bool SetTimeouts(int fd, int timeout_ms) {
  timeval tv{};
  tv.tv_sec = timeout_ms / 1000;
  tv.tv_usec = (timeout_ms % 1000) * 1000;
  return ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
         ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0;
}

}  // namespace

LookupClient::LookupClient(LookupClientOptions options) : options_(std::move(options)) {}

void LookupClient::Begin(Deadline deadline) {
  const int64_t timeout_ms = options_.call_timeout_ms > 0 ? options_.call_timeout_ms : 10'000;
  deadline_ = deadline ? *deadline : Clock::now() + std::chrono::milliseconds(timeout_ms);
}

int LookupClient::LeftMs() const {
  const int64_t left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

bool LookupClient::Arm() {
  const int left = LeftMs();
  if (left <= 0) return false;
  if (left == armed_ms_) return true;
  if (!SetTimeouts(fd_.get(), left)) return false;
  armed_ms_ = left;
  return true;
}

ErrorCode LookupClient::EnsureConnected() {
  if (fd_.valid()) return ErrorCode::OK;
  const auto where = ParseHostPort(options_.address);
  if (!where || LeftMs() <= 0) return ErrorCode::RPC_FAIL;
  fd_ = ConnectTcp(*where, LeftMs());
  armed_ms_ = 0;
  if (!fd_.valid() || !MakeBlocking(fd_.get())) {
    fd_.Reset();
    return ErrorCode::RPC_FAIL;
  }
  have_ = 0;
  ++connections_;
  // Without a token the challenge is still asked until the master has
  // answered once: it proves the master speaks the channel before any
  // request that changes state is sent.
  const bool handshake = !options_.token.empty() || !ever_answered_;
  const ErrorCode code = handshake ? Handshake() : ErrorCode::OK;
  if (code != ErrorCode::OK) fd_.Reset();
  return code;
}

// The Cap'n Proto handshake's exchange (MasterClient::Impl::Handshake),
// carried in lookup frames.
ErrorCode LookupClient::Handshake() {
  uint32_t body = 0;
  out_.clear();
  AppendChallengeRequest(&out_);
  if (ErrorCode code = RoundTrip(&body); code != ErrorCode::OK) return code;
  auto challenge = DecodeChallengeReply(Body(body));
  if (!challenge.ok()) return challenge.error();
  // Without a token there is nothing to prove: the call goes out and the
  // master refuses it (UNAUTHENTICATED, counted as a refused call), as
  // over Cap'n Proto.
  if (!challenge->required || options_.token.empty()) return ErrorCode::OK;
  if (challenge->server_nonce.size() != auth::kNonceBytes) return ErrorCode::RPC_FAIL;
  const auth::Nonce client_nonce = auth::NewNonce();
  const std::string_view server_nonce = challenge->server_nonce;
  const auth::Proof proof = auth::Prove(options_.token, auth::kMasterClientLabel,
                                        {server_nonce, auth::Bytes(client_nonce)});
  out_.clear();
  AppendAuthenticateRequest(auth::Bytes(client_nonce), auth::BytesOf(proof), &out_);
  if (ErrorCode code = RoundTrip(&body); code != ErrorCode::OK) return code;
  auto server_proof = DecodeAuthenticateReply(Body(body));
  if (!server_proof.ok()) return server_proof.error();
  const auth::Proof expected = auth::Prove(options_.token, auth::kMasterServerLabel,
                                           {server_nonce, auth::Bytes(client_nonce)});
  return auth::ProofMatches(expected, *server_proof) ? ErrorCode::OK
                                                     : ErrorCode::UNAUTHENTICATED;
}

bool LookupClient::ReceiveAtLeast(size_t bytes) {
  if (in_.size() < bytes) in_.resize(bytes);
  while (have_ < bytes) {
    if (!Arm()) return false;  // the call's deadline passed
    const ssize_t n = ::recv(fd_.get(), in_.data() + have_, in_.size() - have_, 0);
    if (n > 0) {
      have_ += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;  // closed, error or SO_RCVTIMEO
    }
  }
  return true;
}

ErrorCode LookupClient::RoundTrip(uint32_t* body_bytes) {
  // One request is in flight at a time, so nothing is left over from an
  // earlier reply.
  have_ = 0;
  uint32_t body = 0;
  const bool sent = Arm() && SendAll(fd_.get(), out_, LeftMs());
  // The answer usually comes within the poll, sparing a blocked wake-up.
  ReplyWait wait;
  if (sent) poller_.Await(wait, fd_.get());
  const bool ok = sent && ReceiveAtLeast(kLookupHeaderBytes) &&
                  ParseLookupHeader(std::string_view(in_.data(), have_), &body) &&
                  body <= kMaxReplyBytes && ReceiveAtLeast(kLookupHeaderBytes + size_t{body}) &&
                  have_ == kLookupHeaderBytes + size_t{body};
  if (!ok) {
    fd_.Reset();
    return ErrorCode::RPC_FAIL;
  }
  ever_answered_ = true;
  *body_bytes = body;
  return ErrorCode::OK;
}

std::string_view LookupClient::Body(uint32_t body_bytes) const {
  return std::string_view(in_.data() + kLookupHeaderBytes, body_bytes);
}

uint64_t LookupClient::IntactConnection() {
  if (!fd_.valid()) return 0;
  pollfd p{fd_.get(), POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) != 0) {  // readable, hung up, or an error
    fd_.Reset();
    return 0;
  }
  return connections_;
}

template <typename Ret, typename Append, typename Decode>
Ret LookupClient::Exchange(Deadline deadline, Append&& append, Decode&& decode) {
  Begin(deadline);
  request_sent_ = false;
  if (ErrorCode code = EnsureConnected(); code != ErrorCode::OK) return code;
  out_.clear();
  append(&out_);
  request_sent_ = true;
  uint32_t body = 0;
  if (ErrorCode code = RoundTrip(&body); code != ErrorCode::OK) return code;
  Ret reply = decode(Body(body));
  const bool malformed = [&] {
    if constexpr (std::is_same_v<Ret, ErrorCode>) {
      return reply == ErrorCode::RPC_FAIL;
    } else {
      return !reply.ok() && reply.error() == ErrorCode::RPC_FAIL;
    }
  }();
  if (malformed) fd_.Reset();
  return reply;
}

Result<GetReplicaListResponse> LookupClient::GetReplicaList(std::string_view tenant,
                                                            std::string_view key,
                                                            Deadline deadline) {
  return Exchange<Result<GetReplicaListResponse>>(
      deadline, [&](std::string* out) { AppendGetRequest(tenant, key, out); }, DecodeGetReply);
}

Result<std::vector<Result<GetReplicaListResponse>>> LookupClient::BatchGetReplicaList(
    std::string_view tenant, const std::vector<std::string>& keys, Deadline deadline) {
  return Exchange<Result<std::vector<Result<GetReplicaListResponse>>>>(
      deadline, [&](std::string* out) { AppendBatchGetRequest(tenant, keys, out); },
      [&](std::string_view body) { return DecodeBatchGetReply(body, keys.size()); });
}

Result<std::vector<ReplicaDescriptor>> LookupClient::PutStart(const UUID& client,
                                                              std::string_view tenant,
                                                              std::string_view key, uint64_t size,
                                                              const PutConfig& config,
                                                              Deadline deadline) {
  return Exchange<Result<std::vector<ReplicaDescriptor>>>(
      deadline,
      [&](std::string* out) { AppendPutStartRequest(client, tenant, key, size, config, out); },
      DecodePutStartReply);
}

Result<PutReservationGrant> LookupClient::ReservePut(const UUID& client, std::string_view tenant,
                                                     uint64_t size, const PutConfig& config,
                                                     Deadline deadline) {
  return Exchange<Result<PutReservationGrant>>(
      deadline,
      [&](std::string* out) { AppendReservePutRequest(client, tenant, size, config, out); },
      DecodeReservePutReply);
}

Result<std::optional<PutReservationGrant>> LookupClient::CommitPut(
    const UUID& client, std::string_view tenant, std::string_view key, uint64_t reservation,
    bool renew, const PutConfig& config, Deadline deadline) {
  return Exchange<Result<std::optional<PutReservationGrant>>>(
      deadline,
      [&](std::string* out) {
        AppendCommitPutRequest(client, tenant, key, reservation, renew, config, out);
      },
      DecodeCommitPutReply);
}

Result<std::vector<PutReservationGrant>> LookupClient::BatchReservePut(
    const UUID& client, std::string_view tenant, const std::vector<uint64_t>& sizes,
    const PutConfig& config, Deadline deadline) {
  return Exchange<Result<std::vector<PutReservationGrant>>>(
      deadline,
      [&](std::string* out) { AppendBatchReservePutRequest(client, tenant, sizes, config, out); },
      [&](std::string_view body) { return DecodeBatchReservePutReply(body, sizes.size()); });
}

Result<std::vector<Result<std::optional<PutReservationGrant>>>> LookupClient::BatchCommitPut(
    const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& reservations, const std::vector<uint64_t>& checksums, bool renew,
    const PutConfig& config, Deadline deadline) {
  return Exchange<Result<std::vector<Result<std::optional<PutReservationGrant>>>>>(
      deadline,
      [&](std::string* out) {
        AppendBatchCommitPutRequest(client, tenant, keys, reservations, checksums, renew, config,
                                    out);
      },
      [&](std::string_view body) { return DecodeBatchCommitPutReply(body, keys.size()); });
}

ErrorCode LookupClient::PutFinish(bool end, const UUID& client, std::string_view tenant,
                                  std::string_view key, ReplicaType type, Deadline deadline,
                                  std::optional<uint64_t> checksum) {
  const LookupOp op = end ? LookupOp::kPutEnd : LookupOp::kPutRevoke;
  if (!end) checksum.reset();
  return Exchange<ErrorCode>(
      deadline,
      [&](std::string* out) {
        AppendPutFinishRequest(op, client, tenant, key, type, out, checksum);
      },
      DecodeCodeReply);
}

Result<std::vector<Result<std::vector<ReplicaDescriptor>>>> LookupClient::BatchPutStart(
    const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const PutConfig& config,
    const std::vector<uint64_t>& checksums, Deadline deadline) {
  // The master refuses mismatched lengths whole (as over Cap'n Proto); the
  // frame cannot carry them, so they are refused here.
  if (sizes.size() != keys.size() || (!checksums.empty() && checksums.size() != keys.size())) {
    return ErrorCode::INVALID_PARAMS;
  }
  return Exchange<Result<std::vector<Result<std::vector<ReplicaDescriptor>>>>>(
      deadline,
      [&](std::string* out) {
        AppendBatchPutStartRequest(client, tenant, keys, sizes, config, checksums, out);
      },
      [&](std::string_view body) { return DecodeBatchPutStartReply(body, keys.size()); });
}

Result<std::vector<ErrorCode>> LookupClient::BatchPutFinish(
    bool end, const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
    Deadline deadline, const std::vector<uint64_t>& checksums) {
  const LookupOp op = end ? LookupOp::kBatchPutEnd : LookupOp::kBatchPutRevoke;
  // As BatchPutStart's: the frame cannot carry another length.
  if (!checksums.empty() && (!end || checksums.size() != keys.size())) {
    return ErrorCode::INVALID_PARAMS;
  }
  return Exchange<Result<std::vector<ErrorCode>>>(
      deadline,
      [&](std::string* out) {
        AppendBatchPutFinishRequest(op, client, tenant, keys, out, checksums);
      },
      [&](std::string_view body) { return DecodeCodesReply(body, keys.size()); });
}

Result<bool> LookupClient::ExistKey(std::string_view tenant, std::string_view key,
                                    Deadline deadline) {
  return Exchange<Result<bool>>(
      deadline, [&](std::string* out) { AppendExistRequest(tenant, key, out); },
      DecodeExistReply);
}

Result<std::vector<Result<bool>>> LookupClient::BatchExistKey(std::string_view tenant,
                                                              const std::vector<std::string>& keys,
                                                              Deadline deadline) {
  return Exchange<Result<std::vector<Result<bool>>>>(
      deadline, [&](std::string* out) { AppendBatchExistRequest(tenant, keys, out); },
      [&](std::string_view body) { return DecodeBatchExistReply(body, keys.size()); });
}

ErrorCode LookupClient::Remove(std::string_view tenant, std::string_view key, bool force,
                               Deadline deadline) {
  return Exchange<ErrorCode>(
      deadline, [&](std::string* out) { AppendRemoveRequest(tenant, key, force, out); },
      DecodeCodeReply);
}

Result<std::vector<ErrorCode>> LookupClient::BatchRemove(std::string_view tenant,
                                                         const std::vector<std::string>& keys,
                                                         bool force, Deadline deadline) {
  return Exchange<Result<std::vector<ErrorCode>>>(
      deadline, [&](std::string* out) { AppendBatchRemoveRequest(tenant, keys, force, out); },
      [&](std::string_view body) { return DecodeCodesReply(body, keys.size()); });
}

}  // namespace shelfmark
