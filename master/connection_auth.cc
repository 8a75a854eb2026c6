#include "master/connection_auth.h"

#include "common/object_key.h"

namespace shelfmark {
namespace {

void Count(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

bool AuthPolicy::AdmitHandshake(std::string_view peer) {
  if (limiter.Allow(peer)) return true;
  Count(counters.handshakes_rate_limited);
  return false;
}

void AuthPolicy::HandshakeDone(std::string_view peer, bool ok) {
  if (ok) {
    Count(counters.handshakes_ok);
    return;
  }
  limiter.Failed(peer);
  Count(counters.handshakes_failed);
}

ConnectionAuth::ConnectionAuth(AuthPolicy& policy, std::string peer)
    : policy_(policy), peer_(std::move(peer)) {}

auth::Nonce ConnectionAuth::Challenge() {
  challenge_ = auth::NewNonce();
  return *challenge_;
}

Result<ConnectionAuth::Granted> ConnectionAuth::Authenticate(std::string_view client_nonce,
                                                             std::string_view proof) {
  if (!required()) return ErrorCode::INVALID_PARAMS;
  if (!policy_.AdmitHandshake(peer_)) return ErrorCode::RATE_LIMITED;
  std::optional<auth::Nonce> challenge = challenge_;
  challenge_.reset();  // one try per challenge
  const auth::TokenEntry* entry = nullptr;
  if (challenge.has_value() && client_nonce.size() == auth::kNonceBytes) {
    entry = policy_.tokens.Identify(auth::Bytes(*challenge), client_nonce, proof);
  }
  policy_.HandshakeDone(peer_, entry != nullptr);
  if (entry == nullptr) return ErrorCode::UNAUTHENTICATED;
  authenticated_ = true;
  roles_ = entry->roles;
  tenant_ = entry->tenant;
  return Granted{auth::Prove(entry->token, auth::kMasterServerLabel,
                             {auth::Bytes(*challenge), client_nonce}),
                 roles_, tenant_};
}

ErrorCode ConnectionAuth::Admit(uint32_t roles) {
  if (!required()) return ErrorCode::OK;
  if (!authenticated_) {
    Count(policy_.counters.calls_unauthenticated);
    return ErrorCode::UNAUTHENTICATED;
  }
  if ((roles_ & roles) == 0) {
    Count(policy_.counters.calls_denied);
    return ErrorCode::PERMISSION_DENIED;
  }
  return ErrorCode::OK;
}

ErrorCode ConnectionAuth::Check(const CallScope& scope) {
  if (!required()) return ErrorCode::OK;
  const bool escalates = scope.all_tenants || scope.force;
  const bool outside_tenant =
      !tenant_.empty() && (scope.all_tenants || EffectiveTenant(scope.tenant) != tenant_);
  if ((escalates && (roles_ & auth::kRoleAdmin) == 0) || outside_tenant) {
    Count(policy_.counters.calls_denied);
    return ErrorCode::PERMISSION_DENIED;
  }
  return ErrorCode::OK;
}

}  // namespace shelfmark
