#include "transport/ucx_log_filter.h"

#include <ucs/debug/log_def.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace shelfmark {
namespace {

// Where UCX 1.13 writes the three warnings (uct/base/uct_iface.c and
// ucs/debug/log.c): the function names are what ucs_log passes as __func__.
constexpr const char kStubHandler[] = "uct_iface_stub_am_handler";
constexpr const char kBacktrace[] = "ucs_log_print_backtrace";
constexpr const char kFirstLine[] = "got active message id";

std::atomic<uint64_t> dropped{0};

// True from a stub handler's first warning until a line of any other
// function than the handler or its backtrace (the three warnings run in a
// row on one thread, inside one progress call).
thread_local bool in_stray_report = false;

ucs_log_func_rc_t Filter(const char* /*file*/, unsigned /*line*/, const char* function,
                         ucs_log_level_t /*level*/, const ucs_log_component_config_t* /*comp*/,
                         const char* message, va_list /*ap*/) {
  if (function != nullptr && std::strcmp(function, kStubHandler) == 0) {
    in_stray_report = true;
    if (message != nullptr && std::strncmp(message, kFirstLine, sizeof(kFirstLine) - 1) == 0 &&
        dropped.fetch_add(1, std::memory_order_relaxed) == 0) {
      std::fprintf(stderr,
                   "shelfmark ucx: dropped a UCX message for a feature this process does not run "
                   "(UCX RMA from a peer that sent no hello?); further ones are dropped silently\n");
    }
    return UCS_LOG_FUNC_RC_STOP;
  }
  if (in_stray_report && function != nullptr && std::strcmp(function, kBacktrace) == 0) {
    return UCS_LOG_FUNC_RC_STOP;
  }
  in_stray_report = false;
  return UCS_LOG_FUNC_RC_CONTINUE;
}

}  // namespace

void InstallUcxStrayMessageFilter() {
  static std::once_flag once;
  std::call_once(once, [] { ucs_log_push_handler(&Filter); });
}

uint64_t UcxStrayMessagesDropped() { return dropped.load(std::memory_order_relaxed); }

}  // namespace shelfmark
