#include "testing/wait_for.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace shelfmark::testing {

bool WaitFor(const std::function<bool()>& condition, int64_t deadline_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(deadline_ms);
  auto pause = std::chrono::microseconds(1000);
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
    pause = std::min(pause * 2, std::chrono::microseconds(20'000));
  }
  return condition();
}

}  // namespace shelfmark::testing
