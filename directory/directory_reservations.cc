// One-round-trip puts (docs/directory.md, "One-round-trip puts"): the
// master reserves ranges for a client's next put of a size ahead of it
// (ReservePut, then every OK CommitPut renews), the client writes the value
// there, and CommitPut names the key: the object appears COMPLETE in one
// step, so a put is one master round trip plus its transfer. Until the
// commit the ranges belong to PutReservations, not to any object: nothing
// is visible, and nothing frees them while their client may write there
// (only their deadline, their client's expiry, or the unmount of a segment
// they lie in gives them back).
#include <algorithm>

#include "directory/directory_impl.h"

namespace shelfmark {

Result<PutReservationGrant> DirectoryImpl::ReservePut(const UUID& client, uint64_t size,
                                                      const PutConfig& config) {
  if (client.is_nil() || config.replace || BadPlacement(size, config)) {
    return ErrorCode::INVALID_PARAMS;
  }
  PutReservation model = ReservationModel(client, config);
  model.size = size;
  // Any shard's lock keeps an unmount from erasing a segment we placed in
  // (GrantReservation); the client's own spreads the clients.
  ReaderLock lock(&shards_[UUIDHash{}(client) % kShardCount].mu);
  return GrantReservation(model, Now());
}

Result<std::vector<PutReservationGrant>> DirectoryImpl::BatchReservePut(
    const UUID& client, const std::vector<uint64_t>& sizes, const PutConfig& config) {
  if (client.is_nil() || config.replace || sizes.size() > kMaxPutReservations ||
      std::any_of(sizes.begin(), sizes.end(),
                  [&](uint64_t size) { return BadPlacement(size, config); })) {
    return ErrorCode::INVALID_PARAMS;
  }
  PutReservation model = ReservationModel(client, config);
  ReaderLock lock(&shards_[UUIDHash{}(client) % kShardCount].mu);  // as ReservePut's
  const int64_t now = Now();
  std::vector<PutReservationGrant> grants;
  grants.reserve(sizes.size());
  for (uint64_t size : sizes) {
    model.size = size;
    auto grant = GrantReservation(model, now);
    if (grant.ok()) {
      grants.push_back(std::move(*grant));
      continue;
    }
    // All or none: a client that cannot put the whole batch in one round
    // trip puts it in two steps, and ranges it would not use stay free.
    for (const PutReservationGrant& g : grants) {
      if (auto mine = reservations_.Take(client, g.id)) ReleaseReservation(*mine);
    }
    return grant.error();
  }
  return grants;
}

PutReservation DirectoryImpl::ReservationModel(const UUID& client, const PutConfig& config) {
  PutReservation model;
  model.client = client;
  model.placement.replica_num = config.replica_num;
  model.placement.preferred_segments = config.preferred_segments;
  model.placement.prefer_host = config.prefer_host;
  return model;
}

Result<PutReservationGrant> DirectoryImpl::GrantReservation(const PutReservation& model,
                                                            int64_t now) {
  if (reservations_.held_by(model.client) >= kMaxPutReservations) {
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  // Reserved ranges are memory nobody else may use until their deadline:
  // all of them together stay under a small share of the capacity, so they
  // never crowd out the puts, copies and promotions of a full cluster (it
  // puts in two steps instead).
  const double share =
      options_.put_reservation_share * static_cast<double>(segments_.capacity_bytes());
  if (static_cast<double>(reservations_.bytes() + model.size * model.placement.replica_num) >
      share) {
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  // Placed as PutStart places, without its side effects: a reservation
  // that finds no room is no put (not counted unplaceable) and runs no
  // eviction; the client's put in two steps that follows does both.
  const PutConfig& want = model.placement;
  auto placed =
      segments_.Allocate(want.replica_num, model.size, want.preferred_segments, want.prefer_host);
  if (!placed.ok()) return placed.error();
  // A placement preference is honoured at the grant or the reservation is
  // not made (the preferred segments were full): the client then puts in
  // two steps, placed at the put's own time as a preference asks.
  if (!HonoursPreference(*placed->front().segment, want.preferred_segments, want.prefer_host)) {
    for (const Placement& p : *placed) FreeRange(p.segment, p.offset, model.size);
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  PutReservation r = model;  // its size, client and placement (a renewal's model is the old one)
  r.id = next_replica_id_.fetch_add(1, std::memory_order_relaxed);
  r.placed = std::move(*placed);
  r.held_ids.clear();
  r.deadline_ms = now + options_.put_reservation_ttl_ms;
  // Held before the client learns of them (hot standbys hold them too: a
  // new leader gives them back only after the deadline, while the client
  // may still write there).
  for (const Placement& p : r.placed) {
    r.held_ids.push_back(NextHeldId());
    HoldRange(r.held_ids.back(), p.segment, p.offset, r.size, r.deadline_ms);
  }
  PutReservationGrant grant;
  grant.id = r.id;
  grant.ttl_ms = options_.put_reservation_ttl_ms;
  for (const Placement& p : r.placed) {
    ReplicaDescriptor& d = grant.replicas.emplace_back();
    d.id = r.id;
    d.status = ReplicaStatus::PROCESSING;
    d.type = ReplicaType::MEMORY;
    DescribeMemory(*p.segment, p.offset, r.size, &d.memory);
  }
  const std::vector<Placement> ranges = r.placed;
  if (ErrorCode rc = reservations_.Add(std::move(r), kMaxPutReservations); rc != ErrorCode::OK) {
    GiveBackRanges(r);  // (Add leaves a refused reservation as it was)
    return rc;
  }
  // An unmount that began meanwhile may have dropped its segment's entries
  // before ours was added: take ours back (if the drop took it, it was
  // given back there). The caller's shard lock keeps the segment alive.
  for (const Placement& p : ranges) {
    if (!p.segment->unmounting.load()) continue;
    if (auto mine = reservations_.Take(model.client, grant.id)) ReleaseReservation(*mine);
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  reservations_granted_.fetch_add(1, std::memory_order_relaxed);
  return grant;
}

CommitPutResult DirectoryImpl::CommitPut(const UUID& client, std::string_view tenant,
                                         std::string_view key, uint64_t id,
                                         const PutConfig& config, bool renew) {
  if (ErrorCode rc = ValidateTenantKey(tenant, key); rc != ErrorCode::OK) return {rc, {}};
  if (config.replace || BadVersionConfig(config)) return {ErrorCode::INVALID_PARAMS, {}};
  tenant = EffectiveTenant(tenant);
  return CommitPutAt(client, tenant, Locate(tenant, key), id, config, renew, Now());
}

CommitPutResult DirectoryImpl::CommitPutAt(const UUID& client, std::string_view tenant,
                                           const KeyRef& k, uint64_t id, const PutConfig& config,
                                           bool renew, int64_t now) {
  const std::string_view key = k.key;
  MetadataShard& shard = *k.shard;
  GroupDrops drops;
  CommitPutResult out;
  {
    WriterLock lock(&shard.mu);
    std::optional<PutReservation> r = reservations_.Take(client, id);
    if (!r) return {ErrorCode::LEASE_EXPIRED, {}};
    // A segment that began draining (or unmounting) after the grant takes
    // no new object: given back, and the client puts elsewhere in two steps.
    if (std::any_of(r->placed.begin(), r->placed.end(), [](const Placement& p) {
          return p.segment->draining.load() || p.segment->unmounting.load();
        })) {
      ReleaseReservation(*r);
      return {ErrorCode::LEASE_EXPIRED, {}};
    }
    if (ObjectMetadata* old = Find(shard, tenant, key, k.hash)) {
      if (ErrorCode rc = ClaimKey(shard, tenant, key, *old, now, &drops); rc != ErrorCode::OK) {
        (void)reservations_.Add(std::move(*r), SIZE_MAX);  // kept, for its next key
        return {rc, {}};
      }
    }
    TenantState& state = *shard.tenants.TryEmplace(tenant).first;
    ObjectMetadata& meta = *state.objects.TryEmplace(key, k.hash).first;
    FillVersion(meta, client, r->size, config, now, r->placed, ReplicaStatus::COMPLETE);
    meta.StartUses(NextUseTick(), FirstUses(shard, tenant, key));
    Touch(shard, tenant, key);
    // The ranges pass from the held list to the object, under the lock.
    for (uint64_t held : r->held_ids) ReleaseHeld(held);
    key_count_.fetch_add(1, std::memory_order_relaxed);
    if (!options_.offload_on_evict) QueueOffloadFor(tenant, key, meta);
    reservations_committed_.fetch_add(1, std::memory_order_relaxed);
    if (renew) {
      auto next = GrantReservation(*r, now);
      if (next.ok()) out.next = std::move(*next);
    }
  }
  DropGroupMembers(tenant, drops);
  if (!config.group_id.empty()) AddGroupMember(tenant, config.group_id, key);
  return out;
}

void DirectoryImpl::ReleaseReservation(const PutReservation& r) {
  GiveBackRanges(r);
  reservations_released_.fetch_add(1, std::memory_order_relaxed);
}

void DirectoryImpl::GiveBackRanges(const PutReservation& r) {
  for (uint64_t held : r.held_ids) ReleaseHeld(held);  // before the frees
  for (const Placement& p : r.placed) FreeRange(p.segment, p.offset, r.size);
}

void DirectoryImpl::ExpireReservations() {
  reservations_.TakeExpired(Now(), [this](const PutReservation& r) { ReleaseReservation(r); });
}

void DirectoryImpl::DropClientReservations(const std::vector<UUID>& clients) {
  if (clients.empty()) return;
  reservations_.TakeClients(clients, [this](const PutReservation& r) { ReleaseReservation(r); });
}

}  // namespace shelfmark
