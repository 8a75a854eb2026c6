// UUID: 128-bit client identity (random version-4 ids), printable in the
// canonical 8-4-4-4-12 hex form.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace shelfmark {

struct UUID {
  uint64_t hi = 0;
  uint64_t lo = 0;

  bool is_nil() const { return hi == 0 && lo == 0; }
  friend bool operator==(const UUID&, const UUID&) = default;
  friend auto operator<=>(const UUID&, const UUID&) = default;

  // A fresh random (version 4, variant 1) UUID. Thread-safe.
  static UUID Generate();
  // Parses the canonical form; nullopt on anything else.
  static std::optional<UUID> Parse(std::string_view text);
  std::string ToString() const;
};

struct UUIDHash {
  size_t operator()(const UUID& id) const {
    return std::hash<uint64_t>()(id.hi ^ (id.lo * 0x9e3779b97f4a7c15ULL));
  }
};

}  // namespace shelfmark
