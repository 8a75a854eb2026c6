#include "embedded/ssd_tier_metrics.h"

#include <cstdint>
#include <optional>

namespace shelfmark {
namespace {

SsdTierStats Tier(const EmbeddedClient& e) { return e.disk_stats().value_or(SsdTierStats{}); }

// Full names, so deploy/check_metric_names.py finds every family.
struct TierMetric {
  const char* store;
  const char* service;
  const char* help;
  bool counter;
  uint64_t (*read)(const EmbeddedClient&);
};

constexpr TierMetric kMetrics[] = {
    {"shelfmark_store_disk_objects", "shelfmark_store_service_disk_objects",
     "Objects in the SSD tier.", false, [](const EmbeddedClient& e) { return Tier(e).objects; }},
    {"shelfmark_store_disk_used_bytes", "shelfmark_store_service_disk_used_bytes",
     "Bytes the SSD tier's objects take.", false,
     [](const EmbeddedClient& e) { return Tier(e).used_bytes; }},
    {"shelfmark_store_disk_capacity_bytes", "shelfmark_store_service_disk_capacity_bytes",
     "The SSD tier's byte limit; 0 when it has none.", false,
     [](const EmbeddedClient& e) { return Tier(e).capacity_bytes; }},
    {"shelfmark_store_disk_requests_total", "shelfmark_store_service_disk_requests_total",
     "LOCAL_DISK read requests the SSD tier received.", true,
     [](const EmbeddedClient& e) { return Tier(e).served.requests; }},
    {"shelfmark_store_disk_served_bytes_total", "shelfmark_store_service_disk_served_bytes_total",
     "Object bytes in OK LOCAL_DISK replies.", true,
     [](const EmbeddedClient& e) { return Tier(e).served.bytes_served; }},
    {"shelfmark_store_disk_errors_total", "shelfmark_store_service_disk_errors_total",
     "LOCAL_DISK replies with an error status.", true,
     [](const EmbeddedClient& e) { return Tier(e).served.errors; }},
    {"shelfmark_store_disk_corrupt_records_total",
     "shelfmark_store_service_disk_corrupt_records_total",
     "SSD records dropped because a read found them not intact; never served.", true,
     [](const EmbeddedClient& e) { return Tier(e).corrupt_records; }},
    {"shelfmark_store_offloaded_objects_total", "shelfmark_store_service_offloaded_objects_total",
     "Objects copied to the SSD tier and reported to the master.", true,
     [](const EmbeddedClient& e) { return e.node_counters().offloaded; }},
    {"shelfmark_store_disk_reported_objects_total",
     "shelfmark_store_service_disk_reported_objects_total",
     "SSD tier objects re-reported to the master after a (re)mount.", true,
     [](const EmbeddedClient& e) { return e.node_counters().disk_reported; }},
};

}  // namespace

void AddSsdTierMetrics(MetricsRegistry& metrics, SsdTierMetricsOf process,
                       const EmbeddedClient& embedded) {
  const EmbeddedClient* e = &embedded;
  for (const TierMetric& m : kMetrics) {
    const char* name = process == SsdTierMetricsOf::kStore ? m.store : m.service;
    auto read = [e, r = m.read] { return static_cast<double>(r(*e)); };
    if (m.counter) {
      metrics.AddCounterFunc(name, m.help, read);
    } else {
      metrics.AddGauge(name, m.help, read);
    }
  }
}

}  // namespace shelfmark
