#include "perf/phase_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

namespace shelfmark {
namespace {

TEST(RunPhase, RunsToCompletionAcrossWorkers) {
  std::atomic<int> next{0};
  PhaseSpec spec{.label = "test", .workers = 4, .seconds = 0, .stop = nullptr, .progress = false};
  PhaseOutcome out = RunPhase(spec, [&](size_t) -> Result<StepFn> {
    return StepFn([&]() -> Step {
      int id = next.fetch_add(1);
      if (id >= 1000) return Step{.done = true};
      return id % 100 == 0 ? Step{.errors = 1} : Step{.ok = 2};
    });
  });
  EXPECT_EQ(out.setup_error, ErrorCode::OK);
  EXPECT_EQ(out.calls, 1000u);
  EXPECT_EQ(out.latencies_ns.size(), 1000u);
  EXPECT_EQ(out.errors, 10u);
  EXPECT_EQ(out.ok, 990u * 2);
  EXPECT_FALSE(out.stopped);
}

TEST(RunPhase, TimedPhaseEndsAtDeadline) {
  PhaseSpec spec{.label = "test", .workers = 2, .seconds = 0.2, .stop = nullptr,
                 .progress = false};
  PhaseOutcome out =
      RunPhase(spec, [](size_t) -> Result<StepFn> { return StepFn([] { return Step{.ok = 1}; }); });
  EXPECT_GE(out.seconds, 0.2);
  EXPECT_LT(out.seconds, 5.0);
  EXPECT_GT(out.calls, 0u);
  EXPECT_EQ(out.ok, out.calls);
}

TEST(RunPhase, StopFlagEndsEarly) {
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0};
  PhaseSpec spec{.label = "test", .workers = 3, .seconds = 60, .stop = &stop, .progress = false};
  PhaseOutcome out = RunPhase(spec, [&](size_t) -> Result<StepFn> {
    return StepFn([&] {
      if (calls.fetch_add(1) == 500) stop.store(true);
      return Step{.ok = 1};
    });
  });
  EXPECT_TRUE(out.stopped);
  EXPECT_LT(out.seconds, 30.0);
}

TEST(RunPhase, SetupFailureIsReportedAndNothingRuns) {
  std::atomic<int> calls{0};
  PhaseSpec spec{.label = "test", .workers = 3, .seconds = 0, .stop = nullptr, .progress = false};
  PhaseOutcome out = RunPhase(spec, [&](size_t index) -> Result<StepFn> {
    if (index == 1) return ErrorCode::RPC_FAIL;
    return StepFn([&] {
      calls.fetch_add(1);
      return Step{.done = true};
    });
  });
  EXPECT_EQ(out.setup_error, ErrorCode::RPC_FAIL);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(out.calls, 0u);
}

}  // namespace
}  // namespace shelfmark
