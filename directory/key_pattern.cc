#include "directory/key_pattern.h"

#include <regex.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shelfmark {
namespace {

constexpr size_t kSaturated = KeyPattern::kMaxExpandedAtoms + 1;

size_t Sat(size_t n) { return std::min(n, kSaturated); }

// Index just past the bracket expression that starts at s[i] == '['
// (s.size() when it is unterminated: regcomp rejects it then).
size_t BracketEnd(std::string_view s, size_t i) {
  size_t j = i + 1;
  if (j < s.size() && s[j] == '^') ++j;
  if (j < s.size() && s[j] == ']') ++j;  // a leading ']' is a member
  while (j < s.size() && s[j] != ']') {
    const bool open_class = s[j] == '[' && j + 1 < s.size() &&
                            (s[j + 1] == ':' || s[j + 1] == '=' || s[j + 1] == '.');
    if (!open_class) {
      ++j;
      continue;
    }
    const char close[] = {s[j + 1], ']'};
    const size_t end = s.find(std::string_view(close, 2), j + 2);
    j = end == std::string_view::npos ? s.size() : end + 2;
  }
  return std::min(j + 1, s.size());
}

struct ParsedBound {
  size_t end;      // index past the '}'
  size_t largest;  // the largest number written
  size_t copies;   // copies of the operand regcomp makes
};

// A bound "{m}", "{m,}" or "{m,n}" at s[i] == '{'. nullopt: not a bound
// (regcomp decides what the brace is).
std::optional<ParsedBound> Bound(std::string_view s, size_t i) {
  size_t j = i + 1;
  auto number = [&]() -> std::optional<size_t> {
    size_t start = j, v = 0;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
      v = std::min<size_t>(v * 10 + static_cast<size_t>(s[j] - '0'), 1'000'000);
      ++j;
    }
    return j == start ? std::nullopt : std::optional<size_t>(v);
  };
  std::optional<size_t> lo = number();
  if (!lo) return std::nullopt;
  size_t largest = *lo, copies = *lo;
  if (j < s.size() && s[j] == ',') {
    ++j;
    std::optional<size_t> hi = number();
    largest = hi ? std::max(*lo, *hi) : *lo;
    copies = hi ? largest : *lo + 1;  // {m,}: m copies and a star
  }
  if (j >= s.size() || s[j] != '}') return std::nullopt;
  return ParsedBound{j + 1, largest, copies};
}

// Atoms of one parenthesized level: all of it, and the last operand (what a
// following repetition copies).
struct Level {
  size_t total = 0;
  size_t last = 0;
  void Atom(size_t n) {
    last = Sat(n);
    total = Sat(total + last);
  }
  // total - last + last * copies never drops below total (copies >= 1), so
  // saturated values stay saturated.
  void Repeat(size_t copies) {
    const size_t grown = Sat(last * std::max<size_t>(copies, 1));
    total = Sat(total - std::min(last, total) + grown);
    last = grown;
  }
};

}  // namespace

Result<size_t> ExpandedAtoms(std::string_view s) {
  std::vector<Level> levels(1);
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 < s.size() && s[i + 1] >= '1' && s[i + 1] <= '9') return ErrorCode::INVALID_PARAMS;
      levels.back().Atom(1);
      i += 2;
    } else if (c == '[') {
      levels.back().Atom(1);
      i = BracketEnd(s, i);
    } else if (c == '(') {
      levels.emplace_back();
      ++i;
    } else if (c == ')') {
      if (levels.size() == 1) return ErrorCode::INVALID_PARAMS;
      const size_t group = levels.back().total + 1;
      levels.pop_back();
      levels.back().Atom(group);
      ++i;
    } else if (c == '{' && Bound(s, i)) {
      const ParsedBound bound = *Bound(s, i);
      if (bound.largest > KeyPattern::kMaxRepeat) return ErrorCode::INVALID_PARAMS;
      levels.back().Repeat(bound.copies);
      i = bound.end;
    } else if (c == '+') {
      levels.back().Repeat(2);  // a+ is compiled as aa*
      ++i;
    } else if (c == '*' || c == '?' || c == '|') {
      ++i;
    } else {
      levels.back().Atom(1);
      ++i;
    }
  }
  size_t atoms = 0;
  for (const Level& level : levels) atoms = Sat(atoms + level.total);
  return atoms;
}

struct KeyPattern::Compiled {
  regex_t re;
};

void KeyPattern::Free::operator()(Compiled* c) const {
  regfree(&c->re);
  delete c;
}

KeyPattern::KeyPattern(std::unique_ptr<Compiled, Free> compiled)
    : compiled_(std::move(compiled)) {}

Result<KeyPattern> KeyPattern::Compile(std::string_view pattern) {
  if (pattern.empty() || pattern.size() > kMaxPatternBytes ||
      pattern.find('\0') != std::string_view::npos) {
    return ErrorCode::INVALID_PARAMS;
  }
  Result<size_t> atoms = ExpandedAtoms(pattern);
  if (!atoms.ok() || *atoms > kMaxExpandedAtoms) return ErrorCode::INVALID_PARAMS;
  // (.|[^.]) is any byte: '.' is every byte but NUL, [^.] every byte but '.'.
  // The pattern's own '^' still anchors at the key's start (the prefix may
  // match nothing), and its parentheses are balanced (ExpandedAtoms).
  const std::string anchored = "^(.|[^.])*(" + std::string(pattern) + ")";
  auto compiled = std::make_unique<Compiled>();
  if (regcomp(&compiled->re, anchored.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
    return ErrorCode::INVALID_PARAMS;  // nothing to regfree
  }
  return KeyPattern(std::unique_ptr<Compiled, Free>(compiled.release()));
}

bool KeyPattern::Matches(std::string_view key) const {
  // A NUL-terminated copy: glibc reads only [rm_so, rm_eo) under
  // REG_STARTEND, but sanitizers' regexec interceptors strlen() the string
  // first, and a key in the KeyMap has no terminator after it.
  thread_local std::string text;
  text.assign(key);
  regmatch_t range[1];
  range[0].rm_so = 0;
  range[0].rm_eo = static_cast<regoff_t>(key.size());
  // REG_STARTEND: the key is the bytes [rm_so, rm_eo), NULs included.
  return regexec(&compiled_->re, text.c_str(), 1, range, REG_STARTEND) == 0;
}

}  // namespace shelfmark
