// UTF-8 encoding of one code point, for the text decoders that turn escapes
// into bytes (the etcd JSON reader's \u escapes, S3's XML character
// references).
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>

namespace shelfmark {

// Appends the UTF-8 bytes of `cp` (at most U+10FFFF; callers check the
// range and surrogates) to *out.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace shelfmark
