// Copy and move tasks (docs/directory.md "Copy and move tasks"): CreateTask
// checks and records a task for its creator to run; TaskStart reserves one
// range per target (a TaskTable entry, not yet a replica); the executor
// copies the object's bytes there; TaskEnd attaches the ranges as COMPLETE
// MEMORY replicas (a move then retires its source replica) or gives them
// back.
#include <algorithm>
#include <chrono>

#include "common/object_key.h"
#include "directory/directory_impl.h"

namespace shelfmark {
namespace {

// How long a task may wait for its executor to start it, and then to
// report it, before it fails and its ranges are given back.
constexpr int64_t kTaskPendingTimeoutMs = 60'000;
constexpr int64_t kTaskProcessingTimeoutMs = 60'000;

int64_t EpochMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool OnSegmentNamed(const Replica& r, std::string_view name) {
  return r.is_memory() && r.segment()->segment.name == name;
}

// The COMPLETE MEMORY replica on a segment named `name` ("": any); null if none.
const Replica* CompleteMemoryOn(const ObjectMetadata& meta, std::string_view name) {
  for (const Replica& r : meta.replicas) {
    if (r.is_memory() && r.is_complete() && (name.empty() || OnSegmentNamed(r, name))) return &r;
  }
  return nullptr;
}

bool HasReplicaOn(const ObjectMetadata& meta, std::string_view name) {
  for (const Replica& r : meta.replicas) {
    if (OnSegmentNamed(r, name)) return true;
  }
  return false;
}

const Replica* ReplicaWithId(const ObjectMetadata& meta, uint64_t id) {
  for (const Replica& r : meta.replicas) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

// The checks of a spec that need no object: a copy names 1..kMaxReplicas
// distinct targets and no source; a move one source and one other target.
ErrorCode CheckShape(const TaskSpec& spec) {
  const auto& t = spec.targets;
  if (t.empty() || t.size() > kMaxReplicas) return ErrorCode::INVALID_PARAMS;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].empty() || std::find(t.begin(), t.begin() + i, t[i]) != t.begin() + i) {
      return ErrorCode::INVALID_PARAMS;
    }
  }
  if (spec.type == TaskType::REPLICA_COPY) {
    return spec.source.empty() ? ErrorCode::OK : ErrorCode::INVALID_PARAMS;
  }
  return t.size() == 1 && !spec.source.empty() && spec.source != t[0] ? ErrorCode::OK
                                                                       : ErrorCode::INVALID_PARAMS;
}

}  // namespace

ErrorCode DirectoryImpl::CheckTask(const ObjectMetadata* meta, const TaskSpec& spec) const {
  for (const std::string& name : spec.targets) {
    if (!segments_.HasNamed(name)) return ErrorCode::SEGMENT_NOT_FOUND;
  }
  if (spec.type == TaskType::REPLICA_MOVE && !segments_.HasNamed(spec.source)) {
    return ErrorCode::SEGMENT_NOT_FOUND;
  }
  if (meta == nullptr) return ErrorCode::OBJECT_NOT_FOUND;
  if (CompleteMemoryOn(*meta, spec.source) == nullptr) {
    // A move's source holds no readable replica; a copy has nothing to read.
    return spec.type == TaskType::REPLICA_MOVE ? ErrorCode::OBJECT_NOT_FOUND
                                               : ErrorCode::REPLICA_IS_NOT_READY;
  }
  for (const std::string& name : spec.targets) {
    if (HasReplicaOn(*meta, name)) return ErrorCode::OBJECT_ALREADY_EXISTS;
  }
  if (meta->replicas.size() + spec.targets.size() > kMaxReplicas) {
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  return ErrorCode::OK;
}

Result<UUID> DirectoryImpl::CreateTask(const UUID& client, std::string_view tenant_in,
                                       const TaskSpec& spec) {
  std::string_view tenant = EffectiveTenant(tenant_in);
  ErrorCode rc = ValidateTenantKey(tenant, spec.key);
  if (rc == ErrorCode::OK) rc = CheckShape(spec);
  if (rc != ErrorCode::OK) return rc;
  MetadataShard& shard = ShardOf(tenant, spec.key);
  ReaderLock lock(&shard.mu);
  rc = CheckTask(Find(shard, tenant, spec.key), spec);
  if (rc != ErrorCode::OK) return rc;
  TaskEntry entry;
  entry.info.id = UUID::Generate();
  entry.info.type = spec.type;
  entry.info.key = spec.key;
  entry.info.source = spec.source;
  entry.info.targets = spec.targets;
  entry.info.created_at_ms_epoch = entry.info.last_updated_at_ms_epoch = EpochMs();
  entry.info.assigned_client = client;
  entry.tenant = tenant;
  entry.deadline_ms = Now() + kTaskPendingTimeoutMs;
  const UUID id = entry.info.id;
  rc = tasks_.Add(std::move(entry));
  if (rc != ErrorCode::OK) return rc;
  return id;
}

Result<TaskInfo> DirectoryImpl::QueryTask(std::string_view tenant, const UUID& id) {
  return tasks_.Query(EffectiveTenant(tenant), id);
}

void DirectoryImpl::GiveBack(const TaskReservation& r) {
  ReleaseHeld(r.held_id);
  FreeRange(r.segment, r.offset, r.size);
}

// Reserves one range of the object's size on each target; all or none.
ErrorCode DirectoryImpl::ReserveTargets(const TaskSpec& spec, uint64_t size,
                                        std::vector<TaskReservation>* out) {
  for (const std::string& name : spec.targets) {
    auto placed = segments_.AllocateNamed(name, size);
    if (!placed.ok()) {
      for (const TaskReservation& r : *out) GiveBack(r);
      out->clear();
      return placed.error();
    }
    const uint64_t held_id = NextHeldId();
    HoldRange(held_id, placed->segment, placed->offset, size, Now() + kTaskProcessingTimeoutMs,
              kTaskProcessingTimeoutMs);
    out->push_back({placed->segment, placed->offset, size, held_id});
  }
  return ErrorCode::OK;
}

Result<TaskGrant> DirectoryImpl::TaskStart(const UUID& client, std::string_view tenant_in,
                                           const UUID& id) {
  std::string_view tenant = EffectiveTenant(tenant_in);
  auto pending = tasks_.Pending(tenant, id, client);
  if (!pending.ok()) return pending.error();
  const TaskInfo& info = pending->info;
  const TaskSpec spec{info.type, info.key, info.source, info.targets};
  MetadataShard& shard = ShardOf(tenant, info.key);
  ReaderLock lock(&shard.mu);
  const ObjectMetadata* meta = Find(shard, tenant, info.key);
  std::vector<TaskReservation> reserved;
  ErrorCode rc = CheckTask(meta, spec);
  if (rc == ErrorCode::OK) rc = ReserveTargets(spec, meta->size, &reserved);
  if (rc != ErrorCode::OK) {
    tasks_.Finish(id, rc, EpochMs());
    return rc;
  }
  const uint64_t source = CompleteMemoryOn(*meta, spec.source)->id;
  TaskGrant grant{info.key, meta->size, {}};
  for (const TaskReservation& r : reserved) {
    const Replica target =
        MakeReplica(0, ReplicaStatus::PROCESSING, ReplicaType::MEMORY, r.segment, r.offset);
    DescribeInto(*meta, target, &grant.targets.emplace_back());
  }
  // Recorded before the unmount check: an unmount that began meanwhile may
  // have dropped the segments' reservations before ours were added (the
  // shard lock we hold keeps the segment from being erased until we are
  // done), so ours are then taken back.
  const std::vector<TaskReservation> mine = reserved;
  if (!tasks_.Start(id, EpochMs(), Now() + kTaskProcessingTimeoutMs, source,
                    std::move(reserved))) {
    for (const TaskReservation& r : mine) GiveBack(r);
    return ErrorCode::TASK_NOT_FOUND;  // expired meanwhile
  }
  if (std::any_of(mine.begin(), mine.end(),
                  [](const TaskReservation& r) { return r.segment->unmounting.load(); })) {
    auto taken = tasks_.TakeProcessing(tenant, id, client);
    if (taken.ok()) {
      for (const TaskReservation& r : taken->reserved) GiveBack(r);
    }
    tasks_.Finish(id, ErrorCode::SEGMENT_NOT_FOUND, EpochMs());
    return ErrorCode::SEGMENT_NOT_FOUND;
  }
  return grant;
}

// Whether a finished copy may become replicas: the object is still the one
// granted (same size, the replica seen at TaskStart still there), every
// target's range is still mounted and no target got a replica meanwhile.
bool DirectoryImpl::TaskAttachable(const ObjectMetadata* meta, const TaskEntry& task) const {
  if (meta == nullptr || task.lost_target || ReplicaWithId(*meta, task.source_replica_id) == nullptr ||
      meta->replicas.size() + task.reserved.size() > kMaxReplicas) {
    return false;
  }
  for (const TaskReservation& r : task.reserved) {
    if (r.size != meta->size || r.segment->unmounting.load() ||
        HasReplicaOn(*meta, r.segment->segment.name)) {
      return false;
    }
  }
  return true;
}

ErrorCode DirectoryImpl::TaskEnd(const UUID& client, std::string_view tenant_in, const UUID& id,
                                 ErrorCode copied) {
  std::string_view tenant = EffectiveTenant(tenant_in);
  auto info = tasks_.Query(tenant, id);
  if (!info.ok()) return info.error();
  MetadataShard& shard = ShardOf(tenant, info->key);
  WriterLock lock(&shard.mu);
  // Taken under the shard lock: an unmount of a target cannot erase it
  // before this call is done (it sweeps every shard first).
  auto task = tasks_.TakeProcessing(tenant, id, client);
  if (!task.ok()) return task.error();
  ObjectMetadata* meta = Find(shard, tenant, info->key);
  ErrorCode result = copied;
  if (result == ErrorCode::OK && !TaskAttachable(meta, *task)) {
    result = task->lost_target ? ErrorCode::SEGMENT_NOT_FOUND : ErrorCode::OBJECT_NOT_FOUND;
  }
  if (result != ErrorCode::OK) {
    for (const TaskReservation& r : task->reserved) GiveBack(r);
    tasks_.Finish(id, result, EpochMs());
    return result;
  }
  for (const TaskReservation& r : task->reserved) {
    uint64_t replica_id = next_replica_id_.fetch_add(1, std::memory_order_relaxed);
    meta->replicas.push_back(
        MakeReplica(replica_id, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, r.segment, r.offset));
  }
  const bool move = task->info.type == TaskType::REPLICA_MOVE;
  const Replica source = *ReplicaWithId(*meta, task->source_replica_id);
  if (move) meta->replicas.erase_if([&](const Replica& r) { return r.id == source.id; });
  Touch(shard, tenant, info->key);  // before the source's free (change_feed.h, "Frees")
  for (const TaskReservation& r : task->reserved) ReleaseHeld(r.held_id);  // replicas now
  if (move) RetireReplica(*meta, source, Now());
  tasks_.Finish(id, ErrorCode::OK, EpochMs());
  return ErrorCode::OK;
}

void DirectoryImpl::ExpireTasks() {
  tasks_.ExpireUnfinished(Now(), EpochMs(), [this](const TaskReservation& r) { GiveBack(r); });
}

}  // namespace shelfmark
