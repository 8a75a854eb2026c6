// The UCX engine's own message constants (hello, active-message framing);
// the byte packing itself is common/wire_bytes.h.
#pragma once

#include <cstdint>

#include "common/wire_bytes.h"

namespace shelfmark::ucx_wire {

inline constexpr uint32_t kMagicHello = 0x4c484d53;  // "SMHL"
inline constexpr uint32_t kMagicAm = 0x4d414d53;     // "SMAM"
inline constexpr uint8_t kVersion = 1;

using wire::Reader;
using wire::Writer;

}  // namespace shelfmark::ucx_wire
