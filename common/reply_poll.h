// ReplyWait: a thread that has just sent a request and expects the answer
// within microseconds checks for it in a loop for a short while before it
// blocks. On virtual machines a blocked thread's wake-up (an idle vCPU's
// halt, then an IPI) costs more than the master's whole answer: measured on
// a 2-vCPU VM, one ExistKey round trip from a client on another CPU took
// 51-68 us p50 blocking and 21-27 us polling.
//
// Contracts:
// - A ReplyWait lives for one wait for a reply (the poll and the blocking
//   read after it); the process counts them (Waiting()).
// - Poll(budget, ready) calls `ready` until it returns true (kReady),
//   `budget` has passed (kTimedOut), or the process has more waits than
//   MaxPollers() (half the CPUs, at least one) (kCrowded); a budget <= 0
//   is kOff without a call. So a process with more calls in flight than
//   that, which needs its CPUs for the work, does not poll (polling there
//   cost 40% of the throughput of 16 connections on 2 CPUs); a lone call
//   does.
// - Poll never sleeps, but yields the CPU between checks (sched_yield), so
//   a thread on the same CPU (the very server it waits for, when both are
//   pinned there) runs: with a pause instead, a client pinned beside the
//   master lost half its calls per second.
// - PollReadable(fd, budget): Poll over a socket, kReady when bytes, the
//   peer's close or an error are there for the next read (nothing is read:
//   MSG_PEEK).
// - DefaultReplyPollMicros(): $SHELFMARK_REPLY_POLL_US when it is set and
//   a number in [0, 10000], else 200 (0 turns polling off): long enough
//   for an answer that includes another round trip (a store service's, which
//   asks the master), while misses stop the polls that would not pay.
//
// ReplyPoller: one connection's polls, which stop paying for polls that
// miss. After kMaxMisses polls in a row ran out of budget (answers that take
// longer, such as big batches, gain nothing from a poll and would take a CPU
// from the work), it polls only one call in kProbeEvery until a poll hits.
// Thread safety: one thread at a time (as its connection).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace shelfmark {

enum class PollOutcome { kReady, kTimedOut, kCrowded, kOff };

class ReplyWait {
 public:
  ReplyWait() { waits_.fetch_add(1, std::memory_order_relaxed); }
  ~ReplyWait() { waits_.fetch_sub(1, std::memory_order_relaxed); }
  ReplyWait(const ReplyWait&) = delete;
  ReplyWait& operator=(const ReplyWait&) = delete;

  template <typename Ready>
  PollOutcome Poll(std::chrono::microseconds budget, Ready&& ready) {
    if (budget.count() <= 0) return PollOutcome::kOff;
    const auto until = std::chrono::steady_clock::now() + budget;
    while (Waiting() <= MaxPollers()) {
      if (ready()) return PollOutcome::kReady;
      if (std::chrono::steady_clock::now() >= until) return PollOutcome::kTimedOut;
      Pause();
    }
    return PollOutcome::kCrowded;
  }
  PollOutcome PollReadable(int fd, std::chrono::microseconds budget);

  static int MaxPollers();
  static int Waiting() { return waits_.load(std::memory_order_relaxed); }

 private:
  static void Pause();

  static std::atomic<int> waits_;
};

class ReplyPoller {
 public:
  static constexpr int kMaxMisses = 3;
  static constexpr uint32_t kProbeEvery = 16;

  explicit ReplyPoller(int64_t budget_us) : budget_(budget_us) {}
  // Polls `fd` for the answer to the request just sent, unless the misses
  // say not to; `wait` spans the caller's whole wait for that answer. True
  // when the poll found it there (no blocking read needs to wait).
  bool Await(ReplyWait& wait, int fd);
  uint64_t polls() const { return polls_; }  // polls made (for tests)

 private:
  std::chrono::microseconds budget_;
  int misses_ = 0;
  uint32_t skipped_ = 0;
  uint64_t polls_ = 0;
};

int64_t DefaultReplyPollMicros();

}  // namespace shelfmark
