#include "master/lookup_session.h"

#include <chrono>
#include <utility>

#include "directory/directory.h"
#include "master/service_shared.h"

namespace shelfmark {

LookupSession::LookupSession(master_internal::SharedState& shared, std::string peer)
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
  master_internal::RecordCall(s_, master_internal::kAuthChallenge, ErrorCode::OK, start);
  return true;
}

bool LookupSession::Authenticate(std::string* out) {
  const auto start = std::chrono::steady_clock::now();
  auto granted = auth_.Authenticate(request_.client_nonce, request_.proof);
  const ErrorCode code = granted.ok() ? ErrorCode::OK : granted.error();
  AppendAuthenticateReply(code, granted.ok() ? auth::BytesOf(granted->server_proof) : "", out);
  master_internal::RecordCall(s_, master_internal::kAuthenticate, code, start);
  return code == ErrorCode::OK || code == ErrorCode::INVALID_PARAMS;
}

ErrorCode LookupSession::Admit(master_internal::Method method) {
  ErrorCode code = auth_.Admit(master_internal::kMethodRoles[method]);
  if (code == ErrorCode::OK) code = auth_.Check({request_.tenant});
  if (code == ErrorCode::OK) code = s_.gate.Admit(master_internal::kMethodKinds[method]);
  return code;
}

bool LookupSession::Get(std::string* out) {
  const auto start = std::chrono::steady_clock::now();
  ErrorCode code = Admit(master_internal::kGetReplicaList);
  if (code == ErrorCode::OK) {
    code = s_.directory.GetReplicaListInto(request_.tenant, request_.key, &response_);
    AppendGetReply(code, response_, out);
  } else {
    AppendCodeReply(code, out);
  }
  master_internal::RecordCall(s_, master_internal::kGetReplicaList, code, start);
  return code != ErrorCode::UNAUTHENTICATED;
}

bool LookupSession::BatchGet(std::string* out) {
  const auto start = std::chrono::steady_clock::now();
  ErrorCode code = Admit(master_internal::kBatchGetReplicaList);
  if (code == ErrorCode::OK) {
    const size_t frame = BeginBatchGetReply(static_cast<uint32_t>(request_.keys.size()), out);
    for (std::string_view key : request_.keys) {
      const ErrorCode item = s_.directory.GetReplicaListInto(request_.tenant, key, &response_);
      AppendBatchItem(item, response_, out);
    }
    EndLookupFrame(out, frame);
  } else {
    AppendCodeReply(code, out);
  }
  master_internal::RecordCall(s_, master_internal::kBatchGetReplicaList, code, start);
  return code != ErrorCode::UNAUTHENTICATED;
}

}  // namespace shelfmark
