#include "master/lookup_session.h"

#include <chrono>
#include <exception>
#include <utility>

#include "directory/directory.h"
#include "master/replication_wait.h"
#include "master/service_shared.h"
#include "rpc/mutation_wire.h"

namespace shelfmark {

using namespace master_internal;  // NOLINT: the method table and shared state

LookupSession::LookupSession(SharedState& shared, std::string peer)
    : s_(shared), auth_(*shared.auth, std::move(peer)) {}

bool LookupSession::Handle(std::string_view body, std::string* out) {
  const ErrorCode decoded = DecodeLookupRequest(body, s_.max_batch, &request_);
  if (decoded != ErrorCode::OK) {
    AppendCodeReply(decoded, out);
    return false;  // the peer does not speak this protocol: nothing more to read
  }
  switch (request_.op) {
    case LookupOp::kChallenge:
      return Challenge(out);
    case LookupOp::kAuthenticate:
      return Authenticate(out);
    case LookupOp::kGet:
      return Get(out);
    case LookupOp::kBatchGet:
      return BatchGet(out);
    case LookupOp::kPutStart:
      return PutStart(out);
    case LookupOp::kPutEnd:
    case LookupOp::kPutRevoke:
      return PutFinish(out);
    case LookupOp::kBatchPutStart:
      return BatchPutStart(out);
    case LookupOp::kBatchPutEnd:
    case LookupOp::kBatchPutRevoke:
      return BatchPutFinish(out);
    case LookupOp::kExist:
      return Exist(out);
    case LookupOp::kBatchExist:
      return BatchExist(out);
    case LookupOp::kRemove:
      return Remove(out);
    case LookupOp::kBatchRemove:
      return BatchRemove(out);
    case LookupOp::kReservePut:
      return ReservePut(out);
    case LookupOp::kCommitPut:
      return CommitPut(out);
    case LookupOp::kBatchReservePut:
      return BatchReservePut(out);
    case LookupOp::kBatchCommitPut:
      return BatchCommitPut(out);
  }
  AppendCodeReply(ErrorCode::INVALID_PARAMS, out);
  return false;
}

bool LookupSession::Challenge(std::string* out) {
  const auto start = std::chrono::steady_clock::now();
  if (!auth_.required()) {
    AppendChallengeReply(ErrorCode::OK, false, {}, out);
  } else {
    const auth::Nonce nonce = auth_.Challenge();
    AppendChallengeReply(ErrorCode::OK, true, auth::Bytes(nonce), out);
  }
  RecordCall(s_, kAuthChallenge, ErrorCode::OK, start);
  return true;
}

bool LookupSession::Authenticate(std::string* out) {
  const auto start = std::chrono::steady_clock::now();
  auto granted = auth_.Authenticate(request_.client_nonce, request_.proof);
  const ErrorCode code = granted.ok() ? ErrorCode::OK : granted.error();
  AppendAuthenticateReply(code, granted.ok() ? auth::BytesOf(granted->server_proof) : "", out);
  RecordCall(s_, kAuthenticate, code, start);
  return code == ErrorCode::OK || code == ErrorCode::INVALID_PARAMS;
}

ErrorCode LookupSession::Admit(Method method, bool force) {
  ErrorCode code = auth_.Admit(kMethodRoles[method]);
  if (code == ErrorCode::OK) code = auth_.Check({request_.tenant, false, force});
  if (code == ErrorCode::OK) code = s_.gate.Admit(kMethodKinds[method]);
  return code;
}

template <typename Answer>
bool LookupSession::Serve(Method method, bool force, std::string* out, Answer&& answer) {
  const auto start = std::chrono::steady_clock::now();
  const size_t reply_at = out->size();
  ErrorCode code = Admit(method, force);
  if (code == ErrorCode::OK) {
    try {
      code = answer();
    } catch (const std::exception&) {
      code = ErrorCode::INTERNAL_ERROR;  // as the Cap'n Proto service answers it
      out->resize(reply_at);
      AppendCodeReply(code, out);
    }
  } else {
    AppendCodeReply(code, out);
  }
  const std::optional<uint64_t> seq =
      code == ErrorCode::OK ? ReplicationSeq(s_, kMethodKinds[method]) : std::nullopt;
  if (seq) {
    std::optional<kj::Promise<void>> wait = WaitReplicated(s_, *seq);
    if (wait) {
      pending_.emplace(Pending{method, start, *seq, reply_at, kj::mv(*wait)});
      return true;
    }
  }
  RecordCall(s_, method, code, start);
  return code != ErrorCode::UNAUTHENTICATED;
}

kj::Promise<void> LookupSession::WaitPending() { return kj::mv(*pending_->wait); }

void LookupSession::FinishPending(std::string* out) {
  const ErrorCode code = AfterReplicated(s_, pending_->seq);
  if (code != ErrorCode::OK) {
    out->resize(pending_->reply_at);
    AppendCodeReply(code, out);
  }
  RecordCall(s_, pending_->method, code, pending_->start);
  pending_.reset();
}

// --- lookups -------------------------------------------------------------------

bool LookupSession::Get(std::string* out) {
  return Serve(kGetReplicaList, false, out, [&] {
    const ErrorCode code = s_.directory.GetReplicaListInto(request_.tenant, request_.key, &response_);
    AppendGetReply(code, response_, out);
    return code;
  });
}

bool LookupSession::BatchGet(std::string* out) {
  return Serve(kBatchGetReplicaList, false, out, [&] {
    const size_t frame = BeginBatchGetReply(static_cast<uint32_t>(request_.keys.size()), out);
    s_.directory.BatchGetReplicaList(
        request_.tenant, request_.keys, &response_,
        [out](size_t, ErrorCode item, const GetReplicaListResponse& response) {
          AppendBatchItem(item, response, out);
        });
    EndLookupFrame(out, frame);
    return ErrorCode::OK;
  });
}

bool LookupSession::Exist(std::string* out) {
  return Serve(kExistKey, false, out, [&] {
    const Result<bool> r = s_.directory.ExistKey(request_.tenant, request_.key);
    AppendExistReply(r, out);
    return r.ok() ? ErrorCode::OK : r.error();
  });
}

bool LookupSession::BatchExist(std::string* out) {
  return Serve(kBatchExistKey, false, out, [&] {
    AppendBatchExistReply(s_.directory.BatchExistKey(request_.tenant, request_.keys), out);
    return ErrorCode::OK;
  });
}

// --- puts ------------------------------------------------------------------------

bool LookupSession::PutStart(std::string* out) {
  return Serve(kPutStart, false, out, [&] {
    const auto r = s_.directory.PutStart(request_.client, request_.tenant, request_.key,
                                         request_.size, request_.config);
    AppendPutStartReply(r, out);
    return r.ok() ? ErrorCode::OK : r.error();
  });
}

bool LookupSession::PutFinish(std::string* out) {
  const bool end = request_.op == LookupOp::kPutEnd;
  return Serve(end ? kPutEnd : kPutRevoke, false, out, [&] {
    Directory& d = s_.directory;
    const ErrorCode code =
        end ? d.PutEnd(request_.client, request_.tenant, request_.key, request_.type,
                       request_.end_checksum)
            : d.PutRevoke(request_.client, request_.tenant, request_.key, request_.type);
    AppendCodeReply(code, out);
    return code;
  });
}

bool LookupSession::ReservePut(std::string* out) {
  return Serve(kReservePut, false, out, [&] {
    const auto r = s_.directory.ReservePut(request_.client, request_.size, request_.config);
    AppendReservePutReply(r, out);
    return r.ok() ? ErrorCode::OK : r.error();
  });
}

bool LookupSession::CommitPut(std::string* out) {
  return Serve(kCommitPut, false, out, [&] {
    const CommitPutResult r =
        s_.directory.CommitPut(request_.client, request_.tenant, request_.key,
                               request_.reservation, request_.config, request_.renew);
    AppendCommitPutReply(r, out);
    return r.code;
  });
}

bool LookupSession::BatchReservePut(std::string* out) {
  return Serve(kBatchReservePut, false, out, [&] {
    const auto r = s_.directory.BatchReservePut(request_.client, request_.sizes, request_.config);
    AppendBatchReservePutReply(r, out);
    return r.ok() ? ErrorCode::OK : r.error();
  });
}

bool LookupSession::BatchCommitPut(std::string* out) {
  return Serve(kBatchCommitPut, false, out, [&] {
    AppendBatchCommitPutReply(
        s_.directory.BatchCommitPut(request_.client, request_.tenant, request_.keys,
                                    request_.reservations, request_.checksums, request_.config,
                                    request_.renew),
        out);
    return ErrorCode::OK;
  });
}

bool LookupSession::BatchPutStart(std::string* out) {
  return Serve(kBatchPutStart, false, out, [&] {
    AppendBatchPutStartReply(
        s_.directory.BatchPutStart(request_.client, request_.tenant, request_.keys, request_.sizes,
                                   request_.config, request_.checksums),
        out);
    return ErrorCode::OK;
  });
}

bool LookupSession::BatchPutFinish(std::string* out) {
  const bool end = request_.op == LookupOp::kBatchPutEnd;
  return Serve(end ? kBatchPutEnd : kBatchPutRevoke, false, out, [&] {
    Directory& d = s_.directory;
    AppendCodesReply(
        end ? d.BatchPutEnd(request_.client, request_.tenant, request_.keys, request_.checksums)
            : d.BatchPutRevoke(request_.client, request_.tenant, request_.keys),
        out);
    return ErrorCode::OK;
  });
}

// --- removal -----------------------------------------------------------------------

bool LookupSession::Remove(std::string* out) {
  return Serve(kRemove, request_.force, out, [&] {
    const ErrorCode code = s_.directory.Remove(request_.tenant, request_.key, request_.force);
    AppendCodeReply(code, out);
    return code;
  });
}

bool LookupSession::BatchRemove(std::string* out) {
  return Serve(kBatchRemove, request_.force, out, [&] {
    AppendCodesReply(s_.directory.BatchRemove(request_.tenant, request_.keys, request_.force), out);
    return ErrorCode::OK;
  });
}

}  // namespace shelfmark
