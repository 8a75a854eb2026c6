// Process statistics from /proc/self, exported as the standard Prometheus
// process_* metrics. Linux only; each reader returns 0 when /proc is unreadable.
#pragma once

#include <cstdint>

#include "service/metrics.h"

namespace shelfmark {

// Resident set size: /proc/self/statm resident pages x page size.
uint64_t ProcessResidentMemoryBytes();

// User + system CPU time: /proc/self/stat utime + stime over sysconf(_SC_CLK_TCK).
double ProcessCpuSeconds();

// The process's start as Unix time: /proc/self/stat starttime over
// sysconf(_SC_CLK_TCK), plus /proc/stat btime.
double ProcessStartTimeSeconds();

// Registers the gauges process_resident_memory_bytes and
// process_start_time_seconds and the counter process_cpu_seconds_total.
void AddProcessMetrics(MetricsRegistry& registry);

}  // namespace shelfmark
