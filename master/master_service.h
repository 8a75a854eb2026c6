// MasterServiceFactory: the Cap'n Proto MasterService (schemas/master.capnp)
// implemented over a Directory. Each event-loop thread gets its own service
// object (it keeps per-thread scratch buffers); all of them share the
// directory and the per-method metrics registered once at construction:
//   shelfmark_master_rpc_requests_total{method="M"},
//   shelfmark_master_rpc_failures_total{method="M"} (whole-call answer not OK),
//   shelfmark_master_rpc_latency_seconds{method="M"} (server-side handling time).
//
// Robustness: a request that fails to decode (bad enum, oversized list, a
// kj exception from the reader) is answered INVALID_PARAMS; batches longer
// than `max_batch` are refused whole.
//
// Thread safety: NewService() may be called from any thread; each returned
// service is used by one event loop. The Directory and the registry must
// outlive the factory and its services.
#pragma once

#include <cstddef>
#include <memory>

#include <capnp/capability.h>

namespace shelfmark {

class Directory;
class MetricsRegistry;

class MasterServiceFactory {
 public:
  MasterServiceFactory(Directory& directory, MetricsRegistry* metrics /*nullable*/,
                       size_t max_batch);
  ~MasterServiceFactory();
  MasterServiceFactory(const MasterServiceFactory&) = delete;
  MasterServiceFactory& operator=(const MasterServiceFactory&) = delete;

  capnp::Capability::Client NewService() const;

 private:
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

}  // namespace shelfmark
