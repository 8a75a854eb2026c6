// FlagSet: `--name=value` command-line flags, the style of every Shelfmark
// binary. Each flag writes into a caller-owned variable that already holds its
// default. An unknown flag, a missing or malformed value or a value out of its
// range is an error whose message names the flag.
//
// Thread safety: build and parse on one thread, before other threads start.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace shelfmark {

class FlagSet {
 public:
  explicit FlagSet(std::string program) : program_(std::move(program)) {}

  void AddInt64(std::string name, int64_t* target, std::string help,
                int64_t min_value, int64_t max_value);
  void AddDouble(std::string name, double* target, std::string help,
                 double min_value, double max_value);
  // Accepts --name, --name=true|false|1|0.
  void AddBool(std::string name, bool* target, std::string help);
  // An empty `allowed` accepts any value, including the empty string.
  void AddString(std::string name, std::string* target, std::string help,
                 std::vector<std::string> allowed = {});

  // Parses argv[1..argc). Arguments not starting with "--" are positional;
  // "--" ends flag parsing. Returns false and sets *error (naming the flag) on
  // the first bad argument. "--help" sets help_requested() and returns true.
  bool Parse(int argc, const char* const* argv, std::string* error);

  // Parse() for a program's main: on a bad argument prints the error and the
  // usage to stderr and exits 2; on --help prints the usage and exits 0.
  void ParseOrExit(int argc, const char* const* argv);

  const std::vector<std::string>& positional() const { return positional_; }
  bool help_requested() const { return help_requested_; }
  // One line per flag: name, default, help.
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_bool = false;
    // Parses the text into the target; returns an error message or "".
    std::function<std::string(std::string_view)> set;
  };
  const Flag* Find(std::string_view name) const;

  std::string program_;
  std::vector<Flag> flags_;
  std::vector<std::string> positional_;
  bool help_requested_ = false;
};

}  // namespace shelfmark
