#include "common/json_line.h"

#include <cmath>
#include <cstdio>

namespace shelfmark {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if invalid.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  size_t len = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  // Reject overlong forms, surrogates and code points beyond U+10FFFF.
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 0;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return len;
}

void AppendEscapedByte(std::string* out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\u%04x", c);
  *out += buf;
}

}  // namespace

std::string JsonQuote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) AppendEscapedByte(&out, c);
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      AppendEscapedByte(&out, c);
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  out += '"';
  return out;
}

void JsonObject::Name(std::string_view name) {
  if (body_.size() > 1) body_ += ',';
  body_ += JsonQuote(name);
  body_ += ':';
}

JsonObject& JsonObject::Str(std::string_view name, std::string_view value) {
  Name(name);
  body_ += JsonQuote(value);
  return *this;
}

JsonObject& JsonObject::Int(std::string_view name, int64_t value) {
  Name(name);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::Uint(std::string_view name, uint64_t value) {
  Name(name);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::Num(std::string_view name, double value, int decimals) {
  Name(name);
  if (!std::isfinite(value)) {
    body_ += "null";
    return *this;
  }
  char buf[64];
  if (std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  } else {
    std::snprintf(buf, sizeof(buf), "%.17g", value);
  }
  body_ += buf;
  return *this;
}

JsonObject& JsonObject::Bool(std::string_view name, bool value) {
  Name(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::Null(std::string_view name) {
  Name(name);
  body_ += "null";
  return *this;
}

JsonObject& JsonObject::Raw(std::string_view name, std::string_view json) {
  Name(name);
  body_ += json;
  return *this;
}

}  // namespace shelfmark
