#include "perf/phase_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "common/mutex.h"

namespace shelfmark {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Per-worker results; the progress counters are read by the main thread.
struct alignas(64) WorkerState {
  std::vector<int64_t> latencies_ns;
  uint64_t calls = 0;
  int64_t end_ns = 0;  // read after join
  std::atomic<uint64_t> ok{0};
  std::atomic<uint64_t> errors{0};
};

struct Gate {
  Mutex mu;
  std::atomic<size_t> ready{0};
  std::atomic<size_t> finished{0};
  std::atomic<bool> open{false};
  std::atomic<int64_t> start_ns{0};
  ErrorCode first_error GUARDED_BY(mu) = ErrorCode::OK;
};

bool StopRequested(const PhaseSpec& spec) {
  return spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed);
}

void RunWorker(const PhaseSpec& spec, const WorkerFactory& factory, size_t index, Gate* gate,
               WorkerState* state) {
  Result<StepFn> step = factory(index);
  if (!step.ok()) {
    MutexLock lock(&gate->mu);
    if (gate->first_error == ErrorCode::OK) gate->first_error = step.error();
  }
  gate->ready.fetch_add(1);
  while (!gate->open.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  if (!step.ok()) return;
  {
    MutexLock lock(&gate->mu);
    if (gate->first_error != ErrorCode::OK) return;
  }
  const int64_t start = gate->start_ns.load();
  const int64_t deadline =
      spec.seconds > 0 ? start + static_cast<int64_t>(spec.seconds * 1e9) : INT64_MAX;
  state->latencies_ns.reserve(1 << 16);
  int64_t now = NowNs();
  while (now < deadline && !StopRequested(spec)) {
    Step s = (*step)();
    int64_t after = NowNs();
    if (s.done) break;
    state->latencies_ns.push_back(after - now);
    ++state->calls;
    state->ok.fetch_add(s.ok, std::memory_order_relaxed);
    state->errors.fetch_add(s.errors, std::memory_order_relaxed);
    now = after;
  }
  state->end_ns = NowNs();
}

void Work(const PhaseSpec& spec, const WorkerFactory& factory, size_t index, Gate* gate,
          WorkerState* state) {
  RunWorker(spec, factory, index, gate, state);
  gate->finished.fetch_add(1);
}

void PrintProgress(const PhaseSpec& spec, double elapsed, uint64_t ok, uint64_t errors) {
  char total[32] = "";
  if (spec.seconds > 0) std::snprintf(total, sizeof(total), "/%.0f", spec.seconds);
  std::fprintf(stderr, "[%s] %.0f%s s: %llu keys, %.0f keys/s, %llu errors\n",
               spec.label.c_str(), elapsed, total, static_cast<unsigned long long>(ok),
               elapsed > 0 ? static_cast<double>(ok) / elapsed : 0.0,
               static_cast<unsigned long long>(errors));
}

}  // namespace

PhaseOutcome RunPhase(const PhaseSpec& spec, const WorkerFactory& factory) {
  Gate gate;
  std::vector<std::unique_ptr<WorkerState>> states;
  std::vector<std::thread> threads;
  for (size_t i = 0; i < spec.workers; ++i) {
    states.push_back(std::make_unique<WorkerState>());
    threads.emplace_back(Work, std::cref(spec), std::cref(factory), i, &gate, states.back().get());
  }
  while (gate.ready.load() < spec.workers) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int64_t start = NowNs();
  gate.start_ns.store(start);
  gate.open.store(true);

  // Progress while the workers run: a line per second for phases planned
  // longer than 2 s, or (run-to-completion phases) once they pass 2 s.
  const bool report = spec.progress && (spec.seconds == 0 || spec.seconds > 2);
  const int64_t first_report = start + (spec.seconds > 0 ? 1'000'000'000 : 2'000'000'000);
  int64_t next_report = first_report;
  auto sum = [&](std::atomic<uint64_t> WorkerState::*member) {
    uint64_t n = 0;
    for (auto& s : states) n += ((*s).*member).load(std::memory_order_relaxed);
    return n;
  };
  while (gate.finished.load() < spec.workers) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int64_t now = NowNs();
    if (now < next_report) continue;
    if (report && gate.finished.load() < spec.workers) {
      PrintProgress(spec, static_cast<double>(now - start) / 1e9, sum(&WorkerState::ok),
                    sum(&WorkerState::errors));
    }
    while (next_report <= now) next_report += 1'000'000'000;
  }
  for (auto& t : threads) t.join();

  PhaseOutcome out;
  {
    MutexLock lock(&gate.mu);  // the workers have been joined; the lock states the rule
    out.setup_error = gate.first_error;
  }
  int64_t end = start;
  for (auto& s : states) {
    if (s->calls == 0 && s->end_ns == 0) continue;  // failed setup
    out.calls += s->calls;
    out.ok += s->ok.load();
    out.errors += s->errors.load();
    end = std::max(end, s->end_ns);
    out.latencies_ns.insert(out.latencies_ns.end(), s->latencies_ns.begin(),
                            s->latencies_ns.end());
  }
  out.seconds = static_cast<double>(end - start) / 1e9;
  out.stopped = StopRequested(spec);
  return out;
}

}  // namespace shelfmark
