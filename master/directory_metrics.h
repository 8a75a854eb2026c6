// Gauges over the directory's counters for /metrics.
#pragma once

#include "service/metrics.h"
#include "directory/directory.h"

namespace shelfmark {

// Registers shelfmark_master_{key_count, allocated_bytes,
// total_capacity_bytes, segment_count, client_count, evicted_objects,
// evicted_bytes, eviction_runs}. `directory` must outlive the registry's use.
void AddDirectoryMetrics(MetricsRegistry& registry, const Directory& directory);

}  // namespace shelfmark
