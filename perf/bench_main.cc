#include "perf/bench_main.h"

#include <signal.h>

#include <cstdio>

namespace shelfmark {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void OnSigint(int) { g_interrupted.store(true); }

}  // namespace

FlagOutcome ParseBenchFlags(int argc, const char* const* argv,
                            const std::function<void(FlagSet*)>& add,
                            const std::function<std::string(const FlagSet&)>& check,
                            std::string* message) {
  FlagSet flags(argv[0]);
  add(&flags);
  std::string error;
  if (!flags.Parse(argc, argv, &error)) {
    *message = error + "\n" + flags.Usage();
    return FlagOutcome::kBadUsage;
  }
  if (flags.help_requested()) {
    *message = flags.Usage();
    return FlagOutcome::kHelp;
  }
  const std::string problem = check(flags);
  if (!problem.empty()) {
    *message = std::string(argv[0]) + ": " + problem + "\n";
    return FlagOutcome::kBadUsage;
  }
  return FlagOutcome::kOk;
}

int ExitCodeFor(FlagOutcome outcome, const std::string& message) {
  switch (outcome) {
    case FlagOutcome::kHelp:
      std::printf("%s", message.c_str());
      return 0;
    case FlagOutcome::kBadUsage:
      std::fprintf(stderr, "%s", message.c_str());
      return 2;
    case FlagOutcome::kOk:
      break;
  }
  return -1;
}

std::atomic<bool>& InterruptFlag() {
  static const bool installed = [] {
    struct sigaction sa {};
    sa.sa_handler = OnSigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_RESETHAND;  // a second ^C kills at once
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)installed;
  return g_interrupted;
}

}  // namespace shelfmark
