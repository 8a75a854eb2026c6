// WaitFor: how a test waits. It polls `condition` (every millisecond at
// first, backing off to every 20 ms) until it holds or `deadline_ms` has
// passed, and checks it once more at the deadline. Tests never sleep to let
// something happen: they wait for the state that proves it happened, with a
// deadline generous enough for the slowest machine (the sanitizer builds).
//
// Thread safety: reentrant; `condition` runs on the calling thread.
#pragma once

#include <cstdint>
#include <functional>

namespace shelfmark::testing {

// True as soon as `condition()` is true; false when it still is not at the
// deadline.
bool WaitFor(const std::function<bool()>& condition, int64_t deadline_ms);

}  // namespace shelfmark::testing
