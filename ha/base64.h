// Standard base64 (RFC 4648, "+/" alphabet, "=" padding): how etcd's JSON
// gateway carries keys and values (protobuf `bytes` fields).
//
// Thread safety: reentrant, no state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace shelfmark::ha {

std::string Base64Encode(std::string_view bytes);

// The bytes of canonical padded base64 text; nullopt for a wrong length, a
// byte outside the alphabet, misplaced padding or non-zero spare bits.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace shelfmark::ha
