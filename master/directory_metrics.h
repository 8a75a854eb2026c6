// The directory's figures for /metrics (docs/metrics.md).
#pragma once

#include "service/metrics.h"
#include "directory/directory.h"

namespace shelfmark {

// Registers the gauges shelfmark_master_{keys, allocated_bytes,
// total_capacity_bytes, segments, clients} and the counters
// shelfmark_master_{evicted_objects, evicted_bytes, eviction_runs}_total.
// `directory` must outlive the registry's use.
void AddDirectoryMetrics(MetricsRegistry& registry, const Directory& directory);

}  // namespace shelfmark
