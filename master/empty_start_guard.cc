#include "master/empty_start_guard.h"

#include <utility>

#include "service/metrics.h"
#include "snapshot/snapshot_catalog.h"

namespace shelfmark {

EmptyStartGuard::EmptyStartGuard(EmptyStartGuardOptions options) : options_(std::move(options)) {}

void EmptyStartGuard::SetRestored(std::string snapshot_id) {
  MutexLock lock(&mu_);
  restored_id_ = std::move(snapshot_id);
}

EmptyStartOutcome EmptyStartGuard::OnServing(uint64_t objects, bool loaded_copy) {
  std::string error;
  std::unique_ptr<ObjectStore> store = options_.open_store(&error);
  EmptyStartOutcome out;
  if (store == nullptr) {
    out.log = "snapshot store: " + error + "; cannot tell whether this start needs protection";
    return out;
  }
  if (objects > 0 || loaded_copy) {
    // Trusted; still tell the gauge whether the store keeps a protection.
    SnapshotCatalog catalog(store.get(), options_.cluster_id);
    Result<std::string> kept = catalog.Protected();
    protecting_.store(kept.ok() && !kept->empty());
    return out;
  }
  return CheckStore(*store);
}

EmptyStartOutcome EmptyStartGuard::CheckStore(ObjectStore& store) {
  SnapshotCatalog catalog(&store, options_.cluster_id);
  EmptyStartOutcome out;
  Result<std::string> latest = catalog.Latest();
  Result<std::string> kept = catalog.Protected();
  if (!latest.ok() || !kept.ok()) {
    out.log = "snapshot store " + store.Describe() + " did not answer (" +
              std::string(ErrorCodeName(!latest.ok() ? latest.error() : kept.error())) +
              "); cannot tell whether this empty start needs protection";
    return out;
  }
  protecting_.store(!kept->empty());
  std::string restored;
  {
    MutexLock lock(&mu_);
    restored = restored_id_;
  }
  if (latest->empty() || *latest == restored) return out;
  out.trusted = false;
  empty_starts_.fetch_add(1);
  const std::string what = "serving an empty directory while the snapshot store's latest, " +
                           *latest + ", is not one this master restored";
  if (options_.allow_empty_start) {
    if (!kept->empty() && catalog.ClearProtected() == ErrorCode::OK) {
      out.released_id = *kept;
      protecting_.store(false);
    }
    out.log = what + " (--snapshot_allow_empty_start" +
              (out.released_id.empty() ? std::string(")")
                                       : "; released the protection of " + out.released_id + ")");
    return out;
  }
  out.protected_id = kept->empty() ? *latest : *kept;
  if (kept->empty()) {
    ErrorCode rc = catalog.SetProtected(*latest);
    if (rc != ErrorCode::OK) {
      out.log = what + "; could not protect it (" + std::string(ErrorCodeName(rc)) +
                "): retention may delete it";
      out.protected_id.clear();
      return out;
    }
    out.newly_protected = true;
    protecting_.store(true);
  }
  out.log = what + "; snapshot " + out.protected_id +
            " is protected from retention. To restore it, restart the masters with "
            "--enable_snapshot_restore --snapshot_restore_id=" +
            out.protected_id + "; to start over without it, --snapshot_allow_empty_start";
  return out;
}

void AddEmptyStartMetrics(MetricsRegistry& registry, const EmptyStartGuard& guard) {
  const EmptyStartGuard* g = &guard;
  registry.AddCounterFunc(
      "shelfmark_master_snapshot_empty_starts_total",
      "Times this master began serving an empty directory while the snapshot store's latest "
      "snapshot was not one it restored.",
      [g] { return static_cast<double>(g->empty_starts()); });
  registry.AddGauge("shelfmark_master_snapshot_protected",
                    "1 while the snapshot store names a protected snapshot (kept from retention "
                    "after an empty start), as this master last saw it.",
                    [g] { return g->protecting() ? 1.0 : 0.0; });
}

}  // namespace shelfmark
