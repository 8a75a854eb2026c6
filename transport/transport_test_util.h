// Test helpers shared by the tests that run real UCX engines on loopback
// (transport, ssdstore and control tests). Header-only; tests only.
#pragma once

#include <cstddef>
#include <string>

#include "common/uuid.h"
#include "transport/transport.h"

namespace shelfmark::testing {

// Options for a UCX engine on 127.0.0.1: listening (a node) or not (a
// client); a fresh client id and the cluster token "token".
inline TransportOptions UcxTestOptions(bool listen) {
  TransportOptions options;
  options.client_id = UUID::Generate();
  options.cluster_token = "token";
  if (listen) options.listen_ip = "127.0.0.1";
  options.connect_timeout_ms = 3000;
  return options;
}

// `size` bytes that differ with `seed` and do not repeat every 256 bytes.
inline std::string TestPattern(size_t size, char seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(seed + (i * 7 + i / 251) % 61);
  return s;
}

}  // namespace shelfmark::testing
