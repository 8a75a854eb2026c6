// The plumbing every shelfmark-perf subcommand shares: flag parsing with a
// consistency check, the exit code for --help and bad usage, and Ctrl-C.
//
// Thread safety: ParseBenchFlags and ExitCodeFor are reentrant;
// InterruptFlag() may be read from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/flags.h"

namespace shelfmark {

enum class FlagOutcome { kOk, kHelp, kBadUsage };

// Parses argv[1..argc) with the flags `add` registers, then runs `check`
// ("" when the values are consistent, else what is wrong). kHelp: the usage
// text is in *message. kBadUsage: *message names the flag (and ends with the
// usage text when the flag itself did not parse).
FlagOutcome ParseBenchFlags(int argc, const char* const* argv,
                            const std::function<void(FlagSet*)>& add,
                            const std::function<std::string(const FlagSet&)>& check,
                            std::string* message);

// After ParseBenchFlags: -1 for kOk (go on); else prints *message (usage to
// stdout, errors to stderr) and returns the exit code (0 help, 2 bad usage).
int ExitCodeFor(FlagOutcome outcome, const std::string& message);

// Set by SIGINT (Ctrl-C); the handler is installed on the first call (a
// second Ctrl-C kills at once; SIGPIPE is ignored from then on).
std::atomic<bool>& InterruptFlag();

}  // namespace shelfmark
