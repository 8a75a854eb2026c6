// A small, bounded JSON reader for the replies of etcd's JSON gateway
// (ha/etcd_client.h): untrusted bytes in, a tree of values or DATA_CORRUPTED
// out. It never reads outside the input, never recurses deeper than
// `max_depth`, and refuses inputs, strings and value counts over their
// limits, so a hostile or broken server costs at most the limits' memory.
//
// Numbers are kept as their text (etcd writes int64s as strings anyway;
// JsonInt64 reads either form). \u escapes are decoded to UTF-8; a lone
// surrogate is refused. Duplicate object names are kept in order (Find
// answers the first).
//
// Thread safety: ParseJson is reentrant; a JsonValue is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shelfmark::ha {

struct JsonMember;

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded string; kNumber: the number's text
  std::vector<JsonValue> items;                              // kArray
  std::vector<JsonMember> members;  // kObject, in order

  // The first member called `name` of an object; null when absent or when
  // this is not an object.
  const JsonValue* Find(std::string_view name) const;
};

struct JsonMember {
  std::string name;
  JsonValue value;
};

struct JsonLimits {
  size_t max_bytes = 1 << 20;   // whole input
  int max_depth = 32;           // nested arrays/objects
  size_t max_values = 100'000;  // values of every kind, in total
};

// The one JSON value of `text` (surrounding whitespace allowed);
// DATA_CORRUPTED for anything else or anything over `limits`.
Result<JsonValue> ParseJson(std::string_view text, const JsonLimits& limits = {});

// Compact JSON text of `value`, escaping in strings only what JSON requires
// (other bytes pass through as they are), so ParseJson(WriteJson(v)) gives
// back v for every parsed v (the fuzz target checks it).
std::string WriteJson(const JsonValue& value);

// An int64 written as a JSON number or a string of decimal digits (how
// protobuf's JSON mapping writes int64). Absent (null pointer) reads as 0:
// proto3 JSON leaves out fields holding their default. DATA_CORRUPTED for
// anything else (fractions, exponents, out of range, other types).
Result<int64_t> JsonInt64(const JsonValue* value);

// A bool member; absent reads as false (proto3 default); DATA_CORRUPTED for
// another type.
Result<bool> JsonBool(const JsonValue* value);

}  // namespace shelfmark::ha
