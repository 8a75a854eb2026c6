// Segments and clients: mounting, liveness and what a vanished node takes
// with it.
#include <algorithm>
#include <memory>
#include <unordered_set>
#include <vector>

#include "directory/directory_impl.h"

namespace shelfmark {

ErrorCode DirectoryImpl::MountSegment(const UUID& client, const Segment& segment) {
  // A node restarted on its endpoint mounts with a new id: its previous
  // process's segment goes now, not at client_ttl (its descriptors would
  // only be refused by the new process). So does that process's SSD store:
  // its LOCAL_DISK replicas would send reads to a dead process (the new one
  // registers its store and re-reports what the store holds).
  std::vector<SegmentEntry*> superseded = segments_.BeginUnmountSuperseded(client, segment);
  if (!superseded.empty()) {
    std::vector<const void*> owners(superseded.begin(), superseded.end());
    size_t disks = 0;
    for (SegmentEntry* s : superseded) {
      if (const DiskNode* disk = clients_.TakeDisk(s->owner)) {
        owners.push_back(disk);
        ++disks;
      }
    }
    DropReservationsOn(superseded);
    PurgeOwners(owners);
    DropRetiredOn(superseded);
    for (SegmentEntry* s : superseded) segments_.Erase(s);
    superseded_segments_.fetch_add(superseded.size(), std::memory_order_relaxed);
    superseded_disks_.fetch_add(disks, std::memory_order_relaxed);
  }
  ErrorCode rc = segments_.Mount(client, segment);
  if (rc == ErrorCode::OK) clients_.Touch(client, Now());
  if (rc == ErrorCode::OK || !superseded.empty()) TouchSegments();
  return rc;
}

ErrorCode DirectoryImpl::UnmountSegment(const UUID& client, const UUID& segment_id) {
  auto entry = segments_.BeginUnmount(client, segment_id);
  if (!entry.ok()) return entry.error();
  DropReservationsOn({*entry});
  PurgeOwners({*entry});
  DropRetiredOn({*entry});
  segments_.Erase(*entry);
  TouchSegments();
  return ErrorCode::OK;
}

ErrorCode DirectoryImpl::DrainSegment(const UUID& client, const UUID& segment_id) {
  // No TouchSegments: a standby need not learn of it (SegmentState::draining).
  return segments_.BeginDrain(client, segment_id);
}

PingResponse DirectoryImpl::Ping(const UUID& client) {
  PingResponse resp;
  resp.view_version = view_version_.load(std::memory_order_relaxed);
  resp.status = clients_.Ping(client, Now()) ? ClientStatus::OK : ClientStatus::NEED_REMOUNT;
  return resp;
}

ErrorCode DirectoryImpl::MountLocalDisk(const UUID& client, bool enable_offloading,
                                        std::string_view endpoint) {
  if (client.is_nil() || endpoint.empty() || endpoint.size() > 1024) {
    return ErrorCode::INVALID_PARAMS;
  }
  // A node restarted on its endpoint registers its store under a new id:
  // the previous process's store there goes now, not at client_ttl (its
  // LOCAL_DISK replicas would send reads to a dead process).
  std::vector<const DiskNode*> superseded;
  std::unique_ptr<DiskNode> replaced =
      clients_.MountDisk(client, endpoint, enable_offloading, Now(), &superseded);
  superseded_disks_.fetch_add(superseded.size(), std::memory_order_relaxed);
  std::vector<const void*> owners(superseded.begin(), superseded.end());
  if (replaced) owners.push_back(replaced.get());
  PurgeOwners(owners);
  TouchSegments();
  return ErrorCode::OK;
}

void DirectoryImpl::SetServing(bool serving) {
  if (serving) {
    clients_.ReleaseExpiry(Now());
  } else {
    clients_.HoldExpiry();
  }
}

void DirectoryImpl::ExpireClients() {
  std::vector<ExpiredClient> expired = clients_.TakeExpired(Now(), options_.client_ttl_ms);
  if (expired.empty()) return;
  std::vector<const void*> owners;
  std::vector<SegmentEntry*> segments;
  for (const ExpiredClient& c : expired) {
    if (c.disk) owners.push_back(c.disk.get());
    for (SegmentEntry* s : segments_.BeginUnmountAll(c.id)) {
      owners.push_back(s);
      segments.push_back(s);
    }
  }
  DropReservationsOn(segments);
  std::vector<UUID> ids;
  for (const ExpiredClient& c : expired) ids.push_back(c.id);
  DropClientReservations(ids);  // a put it never committed
  PurgeOwners(owners);
  DropRetiredOn(segments);
  for (SegmentEntry* s : segments) segments_.Erase(s);
  TouchSegments();
}

void DirectoryImpl::DropReservationsOn(const std::vector<SegmentEntry*>& segments) {
  if (segments.empty()) return;
  // Promotions', tasks' and put reservations' ranges go with their
  // segment (a reservation's ranges in other segments are given back).
  promotions_.DropSegments({segments.begin(), segments.end()});
  tasks_.DropSegments({segments.begin(), segments.end()});
  reservations_.DropSegments({segments.begin(), segments.end()},
                             [this](const PutReservation& r) { ReleaseReservation(r); });
}

void DirectoryImpl::DropRetiredOn(const std::vector<SegmentEntry*>& segments) {
  if (segments.empty()) return;
  retired_.DropSegments({segments.begin(), segments.end()});
  // Every held range of the segments (retired, reserved, a pending
  // version's) goes with them; the purge before sweeps every shard, so no
  // range of theirs is held afterwards.
  const bool track = feed_.enabled();
  if (held_.DropSegments({segments.begin(), segments.end()}, track) > 0 && track) {
    feed_.MarkHeld();
  }
}

void DirectoryImpl::PurgeOwners(const std::vector<const void*>& owners) {
  if (owners.empty()) return;
  std::unordered_set<const void*> gone(owners.begin(), owners.end());
  auto owned = [&gone](const Replica& r) { return gone.count(r.owner) != 0; };
  for (MetadataShard& shard : shards_) {
    // Pending versions first: a PutEnd between the two steps then swaps in
    // a version without replicas in `owners`, and the sweep sees the old one.
    // (The other order could swap a pending replica in `owners` into an
    // object the sweep already passed.)
    PurgePendingReplicas(shard, owned);
    SweepShard(shard, [&](const TenantMap& tenants) {
      Victims hit;
      tenants.ForEach([&](std::string_view name, const TenantState& state) {
        state.objects.ForEach([&](std::string_view key, const ObjectMetadata& meta) {
          if (std::any_of(meta.replicas.begin(), meta.replicas.end(), owned)) {
            hit.emplace_back(name, key);
          }
        });
      });
      return hit;
    }, owned);
  }
}

}  // namespace shelfmark
