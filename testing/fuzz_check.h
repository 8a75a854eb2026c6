// For libFuzzer targets: a decoder's answer must be stable. A value that
// decodes must encode to bytes that decode again, to the same encoding;
// anything else aborts (which libFuzzer reports as a crash with its input).
#pragma once

#include <cstdlib>
#include <string>

#include "common/result.h"

namespace shelfmark::testing {

template <typename T, typename Encode, typename Decode>
void CheckStable(const Result<T>& decoded, Encode encode, Decode decode) {
  if (!decoded.ok()) return;
  std::string once = encode(*decoded);
  Result<T> again = decode(once);
  if (!again.ok() || encode(*again) != once) std::abort();
}

}  // namespace shelfmark::testing
