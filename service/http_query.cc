#include "service/http_query.h"

#include <optional>

namespace shelfmark {
namespace {

std::optional<int> HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

// Percent-decodes one name or value; false on an escape that is not "%XX".
bool Decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out->push_back(' ');
    } else if (in[i] != '%') {
      out->push_back(in[i]);
    } else {
      std::optional<int> hi = i + 1 < in.size() ? HexDigit(in[i + 1]) : std::nullopt;
      std::optional<int> lo = i + 2 < in.size() ? HexDigit(in[i + 2]) : std::nullopt;
      if (!hi || !lo) return false;
      out->push_back(static_cast<char>(*hi * 16 + *lo));
      i += 2;
    }
  }
  return true;
}

}  // namespace

bool ParseQuery(std::string_view query, QueryParams* out, std::string* error) {
  out->clear();
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2": an empty pair names nothing
    const size_t eq = pair.find('=');
    std::string name, value;
    if (!Decode(pair.substr(0, eq), &name) ||
        (eq != std::string_view::npos && !Decode(pair.substr(eq + 1), &value))) {
      *error = "bad percent escape in query parameter '" + std::string(pair) +
               "' (a '%' must start %XX, XX two hex digits)";
      return false;
    }
    if (name.empty()) {
      *error = "query parameter without a name: '" + std::string(pair) + "'";
      return false;
    }
    if (!out->emplace(name, std::move(value)).second) {
      *error = "query parameter '" + name + "' given more than once";
      return false;
    }
  }
  return true;
}

}  // namespace shelfmark
