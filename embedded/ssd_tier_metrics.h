// The /metrics of an embedded client's SSD tier (embedded/ssd_tier.h), for
// the processes that host one: mooncake.store's client HTTP server
// (shelfmark_store_*) and shelfmark-store-service
// (shelfmark_store_service_*). Each family's suffix:
//   _disk_objects, _disk_used_bytes, _disk_capacity_bytes (gauges: the
//   store's contents and byte limit, 0 = none); _disk_requests_total,
//   _disk_served_bytes_total, _disk_errors_total (LOCAL_DISK reads the
//   segment's node answered: all, their bytes, those answered with an
//   error); _disk_corrupt_records_total; _offloaded_objects_total (copied to
//   the tier and reported) and _disk_reported_objects_total (re-reported
//   after a (re)mount, e.g. at a restart). docs/metrics.md.
// Read at render time; zeros once the client is closed.
//
// Thread safety: as MetricsRegistry's; `embedded` must outlive the registry's
// use.
#pragma once

#include "embedded/embedded_client.h"
#include "service/metrics.h"

namespace shelfmark {

enum class SsdTierMetricsOf { kStore, kStoreService };

void AddSsdTierMetrics(MetricsRegistry& metrics, SsdTierMetricsOf process,
                       const EmbeddedClient& embedded);

}  // namespace shelfmark
