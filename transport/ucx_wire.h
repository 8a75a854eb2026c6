// The UCX engine's own messages (hello, active-message framing); the byte
// packing itself is common/wire_bytes.h.
//
// Hello (client -> node, on a new connection): magic, version, the client's
// connection id, client id, cluster token. Hello reply (node -> client):
// magic, version, accepted (0/1), the connection id echoed.
//
// Contracts: Decode* never read out of bounds and accept exactly what the
// matching Encode* produces (wrong magic, version, length or trailing bytes
// give nullopt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/uuid.h"
#include "common/wire_bytes.h"

namespace shelfmark::ucx_wire {

inline constexpr uint32_t kMagicHello = 0x4c484d53;  // "SMHL"
inline constexpr uint32_t kMagicAm = 0x4d414d53;     // "SMAM"
inline constexpr uint8_t kVersion = 1;

using wire::Reader;
using wire::Writer;

struct Hello {
  uint64_t conn_id = 0;
  UUID client_id;
  std::string cluster_token;
};

struct HelloReply {
  bool accepted = false;
  uint64_t conn_id = 0;
};

std::string EncodeHello(const Hello& hello);
std::optional<Hello> DecodeHello(const void* bytes, size_t size);
std::string EncodeHelloReply(const HelloReply& reply);
std::optional<HelloReply> DecodeHelloReply(const void* bytes, size_t size);

}  // namespace shelfmark::ucx_wire
