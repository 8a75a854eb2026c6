#include "master/directory_metrics.h"

namespace shelfmark {

void AddDirectoryMetrics(MetricsRegistry& registry, const Directory& directory) {
  const Directory* d = &directory;
  auto read = [d](uint64_t DirectoryStats::*field) {
    return [d, field] { return static_cast<double>(d->Stats().*field); };
  };
  registry.AddGauge("shelfmark_master_keys", "Objects in the directory.",
                    read(&DirectoryStats::key_count));
  registry.AddGauge("shelfmark_master_allocated_bytes", "Bytes of segments allocated to replicas.",
                    read(&DirectoryStats::allocated_bytes));
  registry.AddGauge("shelfmark_master_total_capacity_bytes", "Bytes of mounted segments.",
                    read(&DirectoryStats::total_capacity_bytes));
  registry.AddGauge("shelfmark_master_segments", "Mounted segments.",
                    read(&DirectoryStats::segment_count));
  registry.AddGauge("shelfmark_master_clients", "Registered nodes.",
                    read(&DirectoryStats::client_count));
  registry.AddCounterFunc("shelfmark_master_evicted_objects_total",
                          "Objects evicted from memory since start.",
                          read(&DirectoryStats::evicted_objects));
  registry.AddCounterFunc("shelfmark_master_evicted_bytes_total",
                          "Bytes evicted from memory since start.",
                          read(&DirectoryStats::evicted_bytes));
  registry.AddCounterFunc("shelfmark_master_eviction_runs_total", "Eviction runs since start.",
                          read(&DirectoryStats::eviction_runs));
  registry.AddCounterFunc("shelfmark_master_evicted_unread_objects_total",
                          "Evicted objects never read since their put.",
                          read(&DirectoryStats::evicted_unread));
  registry.AddCounterFunc("shelfmark_master_eviction_ghost_hits_total",
                          "Puts of keys 2q eviction took before any read, remembered: they "
                          "entered the protected queue.",
                          read(&DirectoryStats::eviction_ghost_hits));
  registry.AddCounterFunc("shelfmark_master_eviction_runs_for_puts_total",
                          "Eviction runs of puts that found no room (each retried once).",
                          read(&DirectoryStats::eviction_runs_for_puts));
  registry.AddCounterFunc("shelfmark_master_unplaceable_puts_total",
                          "Puts refused without evicting anything: more replicas than segments "
                          "able to hold them, or larger than any segment.",
                          read(&DirectoryStats::unplaceable_puts));
  registry.AddCounterFunc("shelfmark_master_segments_superseded_total",
                          "Segments dropped, with every replica on them, because a new owner "
                          "mounted at their endpoint (a node restarted there).",
                          read(&DirectoryStats::superseded_segments));
  registry.AddCounterFunc("shelfmark_master_disks_superseded_total",
                          "SSD stores dropped, with their LOCAL_DISK replicas, because a new "
                          "client took their endpoint (a node restarted there).",
                          read(&DirectoryStats::superseded_disks));
  registry.AddCounterFunc("shelfmark_master_stale_disk_reports_total",
                          "SSD copies nodes reported of keys the master holds, refused as not "
                          "of the live version (e.g. a key removed and put again while the "
                          "node was down).",
                          read(&DirectoryStats::stale_disk_reports));
  registry.AddCounterFunc("shelfmark_master_evicted_without_copy_total",
                          "Objects eviction erased with no SSD copy while offload was enabled.",
                          read(&DirectoryStats::evicted_without_copy));
  registry.AddGauge("shelfmark_master_offload_queued_tasks",
                    "Offload tasks queued at the master for nodes, not yet handed out.",
                    read(&DirectoryStats::offload_queued));
  registry.AddCounterFunc("shelfmark_master_offload_waits_total",
                          "Eviction candidates kept until their SSD copy exists.",
                          read(&DirectoryStats::offload_waits));
  registry.AddCounterFunc("shelfmark_master_offload_failures_total",
                          "Copies to SSD that nodes reported they could not make; their objects "
                          "are evicted without one.",
                          read(&DirectoryStats::offload_failures));
  registry.AddCounterFunc("shelfmark_master_promotions_granted_total",
                          "Promotions on hit granted: DRAM reserved for a node's copy from SSD.",
                          read(&DirectoryStats::promotions_granted));
  registry.AddCounterFunc("shelfmark_master_promoted_total",
                          "Objects promoted from SSD: a MEMORY replica attached again.",
                          read(&DirectoryStats::promoted));
  registry.AddCounterFunc("shelfmark_master_promotions_refused_total",
                          "Promotions refused for want of room (DRAM at the eviction watermark "
                          "or the node's segments full).",
                          read(&DirectoryStats::promotions_refused));
  registry.AddCounterFunc("shelfmark_master_promotions_abandoned_total",
                          "Promotion ranges given back: abandoned, timed out, or the object "
                          "changed meanwhile.",
                          read(&DirectoryStats::promotions_abandoned));
  registry.AddGauge("shelfmark_master_promotions_inflight",
                    "Promotions granted and not yet reported.",
                    read(&DirectoryStats::promotions_inflight));
  registry.AddGauge("shelfmark_master_retired_bytes",
                    "Bytes of versions replaced by upserts, held until their readers' leases end.",
                    read(&DirectoryStats::retired_bytes));
  registry.AddCounterFunc("shelfmark_master_upserts_total",
                          "Upserts whose PutEnd swapped a new version in.",
                          read(&DirectoryStats::upserts));
  registry.AddCounterFunc("shelfmark_master_put_reservations_granted_total",
                          "Ranges reserved for clients' next puts (one-round-trip puts).",
                          read(&DirectoryStats::put_reservations_granted));
  registry.AddCounterFunc("shelfmark_master_put_reservations_committed_total",
                          "Puts committed into a reservation in one round trip.",
                          read(&DirectoryStats::put_reservations_committed));
  registry.AddCounterFunc("shelfmark_master_put_reservations_released_total",
                          "Reservations given back unused: deadline passed, client expired, "
                          "or a segment they lay in went.",
                          read(&DirectoryStats::put_reservations_released));
  registry.AddGauge("shelfmark_master_put_reservations_held",
                    "Reservations held for clients' next puts now.",
                    read(&DirectoryStats::put_reservations_held));
  registry.AddCounterFunc("shelfmark_master_background_runs_total",
                          "Completed passes of the background work (client expiry, offload "
                          "time-outs, stale puts, eviction).",
                          read(&DirectoryStats::background_runs));
}

}  // namespace shelfmark
