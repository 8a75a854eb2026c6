// RunPhase: drives one timed (or run-to-completion) phase of a benchmark on
// N worker threads, each with its own connection, and collects per-call
// latencies and counts. Used by every `shelfmark-perf` subcommand.
//
// Protocol: each worker thread first calls the factory (so per-thread state
// such as a MasterClient, which belongs to the thread that created it, is
// built on the right thread), then waits at a common start gate; the clock
// starts when every worker is ready. Workers then call their step until the
// deadline passes, `stop` becomes true (when honored) or a step answers
// done. The calling thread prints a progress line per second on stderr when
// the phase runs longer than 2 s.
//
// Thread safety: RunPhase may be called from one thread at a time per
// phase; the factory and steps run on worker threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace shelfmark {

// The answer of one call (an RPC or a batch RPC pair).
struct Step {
  uint64_t ok = 0;      // keys answered OK
  uint64_t errors = 0;  // keys answered non-OK
  bool done = false;    // nothing was called: the worker has no work left
};

using StepFn = std::function<Step()>;
// Builds worker `index`'s step on the worker thread; an error aborts the phase.
using WorkerFactory = std::function<Result<StepFn>(size_t index)>;

struct PhaseSpec {
  std::string label;  // for progress lines, e.g. "put batch=128 conns=16"
  size_t workers = 1;
  double seconds = 0;  // 0: run until every worker is done
  // When non-null and honored, workers stop as soon as it is true.
  const std::atomic<bool>* stop = nullptr;
  bool progress = true;  // progress lines on stderr for phases longer than 2 s
};

struct PhaseOutcome {
  ErrorCode setup_error = ErrorCode::OK;  // first factory failure, if any
  double seconds = 0;                     // start gate to the last worker's end
  uint64_t calls = 0;
  uint64_t ok = 0;
  uint64_t errors = 0;
  bool stopped = false;  // `stop` was seen before the phase completed
  std::vector<int64_t> latencies_ns;  // one per call, all workers
};

PhaseOutcome RunPhase(const PhaseSpec& spec, const WorkerFactory& factory);

}  // namespace shelfmark
