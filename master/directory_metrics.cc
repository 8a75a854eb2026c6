#include "master/directory_metrics.h"

namespace shelfmark {

void AddDirectoryMetrics(MetricsRegistry& registry, const Directory& directory) {
  const Directory* d = &directory;
  auto gauge = [&](const char* name, const char* help, uint64_t DirectoryStats::*field) {
    registry.AddGauge(name, help,
                      [d, field] { return static_cast<double>(d->Stats().*field); });
  };
  gauge("shelfmark_master_key_count", "objects in the directory", &DirectoryStats::key_count);
  gauge("shelfmark_master_allocated_bytes", "bytes of segments allocated to replicas",
        &DirectoryStats::allocated_bytes);
  gauge("shelfmark_master_total_capacity_bytes", "bytes of mounted segments",
        &DirectoryStats::total_capacity_bytes);
  gauge("shelfmark_master_segment_count", "mounted segments", &DirectoryStats::segment_count);
  gauge("shelfmark_master_client_count", "registered nodes", &DirectoryStats::client_count);
  gauge("shelfmark_master_evicted_objects", "objects evicted since start",
        &DirectoryStats::evicted_objects);
  gauge("shelfmark_master_evicted_bytes", "bytes evicted since start",
        &DirectoryStats::evicted_bytes);
  gauge("shelfmark_master_eviction_runs", "eviction runs since start",
        &DirectoryStats::eviction_runs);
}

}  // namespace shelfmark
