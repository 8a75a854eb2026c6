#include "common/uuid.h"

#include <cstdio>
#include <random>

namespace shelfmark {

UUID UUID::Generate() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  UUID id{rng(), rng()};
  id.hi = (id.hi & ~0xF000ULL) | 0x4000ULL;                      // version 4
  id.lo = (id.lo & ~(3ULL << 62)) | (2ULL << 62);                // variant 1
  return id;
}

std::string UUID::ToString() const {
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF),
                static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

std::optional<UUID> UUID::Parse(std::string_view text) {
  if (text.size() != 36) return std::nullopt;
  UUID id;
  int nibbles = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return std::nullopt;
      continue;
    }
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else return std::nullopt;
    uint64_t& word = nibbles < 16 ? id.hi : id.lo;
    word = (word << 4) | static_cast<uint64_t>(v);
    ++nibbles;
  }
  return id;
}

}  // namespace shelfmark
