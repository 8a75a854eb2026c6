// HostPort: a "host:port" address as the tools and flags write it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shelfmark {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;
};

// "host:port", "[v6addr]:port"; port 1..65535, host non-empty. nullopt
// otherwise.
std::optional<HostPort> ParseHostPort(std::string_view text);

}  // namespace shelfmark
