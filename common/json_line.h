// JSON output helpers shared by the tools (shelfmark-perf, shelfmark-cli):
// string escaping and a builder for one flat JSON object on one line.
//
// Thread safety: JsonObject is a plain value; use one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace shelfmark {

// `text` as a quoted JSON string. Valid UTF-8 passes through; quotes,
// backslashes and control characters are escaped; a byte that is not part of
// valid UTF-8 becomes \u00XX (its Latin-1 reading), so the output is always
// valid JSON whatever the key bytes are.
std::string JsonQuote(std::string_view text);

// Builds `{"a":1,"b":"x"}` field by field, in insertion order. Field names are
// escaped too. Non-finite doubles are written as null.
class JsonObject {
 public:
  JsonObject& Str(std::string_view name, std::string_view value);
  JsonObject& Int(std::string_view name, int64_t value);
  JsonObject& Uint(std::string_view name, uint64_t value);
  // `decimals` digits after the point (fixed notation).
  JsonObject& Num(std::string_view name, double value, int decimals = 1);
  JsonObject& Bool(std::string_view name, bool value);
  JsonObject& Null(std::string_view name);
  // `json` must already be valid JSON (a nested object or array).
  JsonObject& Raw(std::string_view name, std::string_view json);

  // The object text, without a trailing newline.
  std::string str() const { return body_ + "}"; }

 private:
  void Name(std::string_view name);
  std::string body_ = "{";
};

// `[elem,elem]` from already-encoded JSON elements.
std::string JsonArray(const auto& encoded_elements) {
  std::string out = "[";
  for (const auto& e : encoded_elements) {
    if (out.size() > 1) out += ',';
    out += e;
  }
  return out + "]";
}

}  // namespace shelfmark
