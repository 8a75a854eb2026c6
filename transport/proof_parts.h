// Fixed-width byte strings of integers and ids, for the parts of the data
// plane's proofs (auth::Prove): every handshake binds its proof to the same
// encoding of the same values on both sides.
#pragma once

#include <cstdint>
#include <string>

#include "common/uuid.h"

namespace shelfmark {

inline std::string Le64Part(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

inline std::string UuidPart(const UUID& id) { return Le64Part(id.hi) + Le64Part(id.lo); }

}  // namespace shelfmark
