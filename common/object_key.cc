#include "common/object_key.h"

namespace shelfmark {

ErrorCode ValidateKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyLength) return ErrorCode::INVALID_KEY;
  return ErrorCode::OK;
}

ErrorCode ValidateTenant(std::string_view tenant) {
  if (tenant.empty() || tenant.size() > kMaxTenantLength) {
    return ErrorCode::INVALID_PARAMS;
  }
  return ErrorCode::OK;
}

std::string_view EffectiveTenant(std::string_view tenant) {
  return tenant.empty() ? kDefaultTenant : tenant;
}

}  // namespace shelfmark
