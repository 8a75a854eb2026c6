// Tenant-scoped object keys. Every directory operation names a tenant; the
// empty tenant on the wire means kDefaultTenant.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/error_code.h"

namespace shelfmark {

inline constexpr std::string_view kDefaultTenant = "default";
inline constexpr size_t kMaxKeyLength = 4096;
inline constexpr size_t kMaxTenantLength = 256;

// OK for a key of 1..kMaxKeyLength bytes; INVALID_KEY otherwise.
ErrorCode ValidateKey(std::string_view key);
// OK for a tenant of 1..kMaxTenantLength bytes; INVALID_PARAMS otherwise.
ErrorCode ValidateTenant(std::string_view tenant);
// The tenant a request means: kDefaultTenant for an empty one.
std::string_view EffectiveTenant(std::string_view tenant);

}  // namespace shelfmark
