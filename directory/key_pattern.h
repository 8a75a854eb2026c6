// KeyPattern: a client's regular expression over keys (RemoveByRegex),
// compiled so that no pattern can make the master hang, exhaust its memory
// or overflow its stack.
//
// Syntax: POSIX extended regular expressions (glibc regcomp, REG_EXTENDED),
// not ECMAScript: no \d \w \s, no lazy quantifiers, no look-around; use
// [0-9], [[:alnum:]_], [[:space:]]. Matching is a search, like
// std::regex_search: the pattern may match anywhere in the key (anchor it
// with ^ and $). In the C locale a key is bytes; `.` matches every byte but
// NUL.
//
// Why glibc and these bounds (docs/limits.md): std::regex (libstdc++)
// backtracks exponentially and recurses once per input character. glibc
// simulates the automaton instead, linear in the key for a fixed pattern,
// except for back-references (refused) and two costs bounded here:
//  - an unanchored search restarts at every position (quadratic in the key):
//    the pattern is compiled as ^(.|[^.])*(PATTERN), one pass over the key;
//  - a counted repetition {m,n} copies its operand n times: each bound is at
//    most 255 and the pattern with every repetition expanded at most 512
//    atoms, which keeps both regcomp's memory and the work per key byte
//    small (about a millisecond per 4096-byte key at the bound).
//
// Thread safety: Matches() is const and may be called from any thread (glibc
// serializes on the compiled pattern's own lock).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "common/result.h"

namespace shelfmark {

class KeyPattern {
 public:
  static constexpr size_t kMaxPatternBytes = 256;
  static constexpr unsigned kMaxRepeat = 255;
  static constexpr size_t kMaxExpandedAtoms = 512;

  // INVALID_PARAMS for an empty pattern, one longer than kMaxPatternBytes,
  // with a NUL byte, one ExpandedAtoms refuses or finds over
  // kMaxExpandedAtoms, or one regcomp rejects.
  static Result<KeyPattern> Compile(std::string_view pattern);

  // Whether the pattern matches somewhere in `key` (any bytes, NULs too).
  bool Matches(std::string_view key) const;

 private:
  struct Compiled;
  struct Free {
    void operator()(Compiled* c) const;
  };
  explicit KeyPattern(std::unique_ptr<Compiled, Free> compiled);
  std::unique_ptr<Compiled, Free> compiled_;
};

// The number of atoms `pattern` (POSIX ERE) has once every counted
// repetition is expanded (an upper bound of what regcomp builds), saturated
// at kMaxExpandedAtoms + 1. INVALID_PARAMS for a back-reference, a bound over
// kMaxRepeat, or a ")" without its "(" (it would close the group the pattern
// is wrapped in; write "\)" for a literal one). Exposed for its test.
Result<size_t> ExpandedAtoms(std::string_view pattern);

}  // namespace shelfmark
