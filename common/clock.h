// Clock: the directory's notion of time, in milliseconds of a monotonic clock.
// Injected so tests can move time by hand (ManualClock).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace shelfmark {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since an arbitrary fixed epoch; never decreases. Thread-safe.
  virtual int64_t NowMs() const = 0;
};

class SteadyClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'000'000) : now_(start_ms) {}
  int64_t NowMs() const override { return now_.load(); }
  void AdvanceMs(int64_t ms) { now_.fetch_add(ms); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace shelfmark
