#include "ha/json_reader.h"

#include <charconv>
#include <cstdio>

#include "common/utf8.h"

namespace shelfmark::ha {
namespace {

// A recursive-descent parser over `text_`; every read checks the bounds and
// the depth is capped, so any input ends in a value or DATA_CORRUPTED.
class Parser {
 public:
  Parser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  bool ParseDocument(JsonValue* out) {
    SkipSpace();
    if (!ParseValue(out, 0)) return false;
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (AtEnd() || Peek() != c) return false;
    ++pos_;
    return true;
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool ParseValue(JsonValue* out, int depth) {
    if (AtEnd() || ++values_ > limits_.max_values) return false;
    switch (Peek()) {
      case '{':
        return depth < limits_.max_depth && ParseObject(out, depth + 1);
      case '[':
        return depth < limits_.max_depth && ParseArray(out, depth + 1);
      case '"':
        out->type = JsonValue::Type::kString;
        return ParseString(&out->text);
      case 't':
        out->type = JsonValue::Type::kBool;
        out->boolean = true;
        return Literal("true");
      case 'f':
        out->type = JsonValue::Type::kBool;
        return Literal("false");
      case 'n':
        out->type = JsonValue::Type::kNull;
        return Literal("null");
      default:
        out->type = JsonValue::Type::kNumber;
        return ParseNumber(&out->text);
    }
  }

  bool ParseObject(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (Consume('}')) return true;
    while (true) {
      SkipSpace();
      std::string name;
      if (AtEnd() || Peek() != '"' || !ParseString(&name)) return false;
      SkipSpace();
      if (!Consume(':')) return false;
      SkipSpace();
      JsonValue value;
      if (!ParseValue(&value, depth)) return false;
      out->members.push_back(JsonMember{std::move(name), std::move(value)});
      SkipSpace();
      if (Consume('}')) return true;
      if (!Consume(',')) return false;
    }
  }

  bool ParseArray(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (Consume(']')) return true;
    while (true) {
      SkipSpace();
      JsonValue value;
      if (!ParseValue(&value, depth)) return false;
      out->items.push_back(std::move(value));
      SkipSpace();
      if (Consume(']')) return true;
      if (!Consume(',')) return false;
    }
  }

  // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool ParseNumber(std::string* out) {
    const size_t start = pos_;
    Consume('-');
    if (Consume('0')) {
    } else if (!Digits()) {
      return false;
    }
    if (Consume('.') && !Digits()) return false;
    if (Consume('e') || Consume('E')) {
      if (!Consume('+')) Consume('-');
      if (!Digits()) return false;
    }
    out->assign(text_.substr(start, pos_ - start));
    return true;
  }

  bool Digits() {
    const size_t start = pos_;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') ++pos_;
    return pos_ > start;
  }

  bool ParseString(std::string* out) {
    ++pos_;  // '"'
    while (!AtEnd()) {
      const char c = text_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
      } else if (!ParseEscape(out)) {
        return false;
      }
    }
    return false;
  }

  bool ParseEscape(std::string* out) {
    if (AtEnd()) return false;
    const char c = text_[pos_++];
    switch (c) {
      case '"': case '\\': case '/': out->push_back(c); return true;
      case 'b': out->push_back('\b'); return true;
      case 'f': out->push_back('\f'); return true;
      case 'n': out->push_back('\n'); return true;
      case 'r': out->push_back('\r'); return true;
      case 't': out->push_back('\t'); return true;
      case 'u': return ParseUnicode(out);
      default: return false;
    }
  }

  bool Hex4(uint32_t* v) {
    if (text_.size() - pos_ < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) return false;
      *v = *v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  // \uXXXX (a surrogate pair as two escapes) to UTF-8; lone surrogates refused.
  bool ParseUnicode(std::string* out) {
    uint32_t cp = 0;
    if (!Hex4(&cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t low = 0;
      if (!Literal("\\u") || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(cp, out);
    return true;
  }

  const std::string_view text_;
  const JsonLimits limits_;
  size_t pos_ = 0;
  size_t values_ = 0;
};

// `s` quoted, escaping only what JSON requires (quote, backslash, control
// bytes); other bytes pass through, so ParseJson gives back exactly `s`.
void Quote(const std::string& s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      *out += buf;
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void Write(const JsonValue& v, std::string* out) {
  switch (v.type) {
    case JsonValue::Type::kNull: *out += "null"; return;
    case JsonValue::Type::kBool: *out += v.boolean ? "true" : "false"; return;
    case JsonValue::Type::kNumber: *out += v.text; return;
    case JsonValue::Type::kString: Quote(v.text, out); return;
    case JsonValue::Type::kArray:
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out->push_back(',');
        Write(v.items[i], out);
      }
      out->push_back(']');
      return;
    case JsonValue::Type::kObject:
      out->push_back('{');
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out->push_back(',');
        Quote(v.members[i].name, out);
        out->push_back(':');
        Write(v.members[i].value, out);
      }
      out->push_back('}');
      return;
  }
}

}  // namespace

const JsonValue* JsonValue::Find(std::string_view name) const {
  if (type != Type::kObject) return nullptr;
  for (const JsonMember& m : members) {
    if (m.name == name) return &m.value;
  }
  return nullptr;
}

Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) return ErrorCode::DATA_CORRUPTED;
  JsonValue value;
  Parser parser(text, limits);
  if (!parser.ParseDocument(&value)) return ErrorCode::DATA_CORRUPTED;
  return value;
}

std::string WriteJson(const JsonValue& value) {
  std::string out;
  Write(value, &out);
  return out;
}

Result<int64_t> JsonInt64(const JsonValue* value) {
  if (value == nullptr) return int64_t{0};
  if (value->type != JsonValue::Type::kNumber && value->type != JsonValue::Type::kString) {
    return ErrorCode::DATA_CORRUPTED;
  }
  const std::string& t = value->text;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
    return ErrorCode::DATA_CORRUPTED;
  }
  return out;
}

Result<bool> JsonBool(const JsonValue* value) {
  if (value == nullptr) return false;
  if (value->type != JsonValue::Type::kBool) return ErrorCode::DATA_CORRUPTED;
  return value->boolean;
}

}  // namespace shelfmark::ha
