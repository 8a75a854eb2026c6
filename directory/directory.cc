#include "directory/directory.h"

#include "directory/directory_impl.h"

namespace shelfmark {

Directory::Directory(DirectoryOptions options)
    : impl_(std::make_unique<DirectoryImpl>(options)) {}
Directory::~Directory() = default;

ErrorCode Directory::MountSegment(const UUID& client, const Segment& segment) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->MountSegment(client, segment);
}
ErrorCode Directory::UnmountSegment(const UUID& client, const UUID& segment_id) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->UnmountSegment(client, segment_id);
}
ErrorCode Directory::DrainSegment(const UUID& client, const UUID& segment_id) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->DrainSegment(client, segment_id);
}
PingResponse Directory::Ping(const UUID& client) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->Ping(client);
}
ErrorCode Directory::MountLocalDisk(const UUID& client, bool enable_offloading,
                                    std::string_view endpoint) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->MountLocalDisk(client, enable_offloading, endpoint);
}

Result<std::vector<ReplicaDescriptor>> Directory::PutStart(const UUID& client,
                                                           std::string_view tenant,
                                                           std::string_view key, uint64_t size,
                                                           const PutConfig& config) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->PutStart(client, tenant, key, size, config);
}
ErrorCode Directory::PutEnd(const UUID& client, std::string_view tenant, std::string_view key,
                            ReplicaType type, std::optional<uint64_t> checksum) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->PutEnd(client, tenant, key, type, checksum);
}
ErrorCode Directory::PutRevoke(const UUID& client, std::string_view tenant, std::string_view key,
                               ReplicaType type) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->PutRevoke(client, tenant, key, type);
}
Result<PutReservationGrant> Directory::ReservePut(const UUID& client, uint64_t size,
                                                  const PutConfig& config) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->ReservePut(client, size, config);
}
CommitPutResult Directory::CommitPut(const UUID& client, std::string_view tenant,
                                     std::string_view key, uint64_t id, const PutConfig& config,
                                     bool renew) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->CommitPut(client, tenant, key, id, config, renew);
}
Result<std::vector<PutReservationGrant>> Directory::BatchReservePut(
    const UUID& client, const std::vector<uint64_t>& sizes, const PutConfig& config) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchReservePut(client, sizes, config);
}
std::vector<CommitPutResult> Directory::BatchCommitPut(const UUID& client, std::string_view tenant,
                                                       std::span<const std::string_view> keys,
                                                       const std::vector<uint64_t>& ids,
                                                       const std::vector<uint64_t>& checksums,
                                                       const PutConfig& config, bool renew) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchCommitPut(client, tenant, keys, ids, checksums, config, renew);
}
Result<GetReplicaListResponse> Directory::GetReplicaList(std::string_view tenant,
                                                         std::string_view key) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->GetReplicaList(tenant, key);
}
ErrorCode Directory::GetReplicaListInto(std::string_view tenant, std::string_view key,
                                        GetReplicaListResponse* out) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->GetReplicaListInto(tenant, key, out);
}
Result<bool> Directory::ExistKey(std::string_view tenant, std::string_view key) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->ExistKey(tenant, key);
}
Result<ObjectInfo> Directory::Stat(std::string_view tenant, std::string_view key) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->Stat(tenant, key);
}
std::vector<std::string> Directory::ListKeys(std::string_view tenant, std::string_view prefix,
                                             size_t limit) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->ListKeys(tenant, prefix, limit);
}
uint64_t Directory::CountKeys(std::string_view tenant, bool all_tenants) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->CountKeys(tenant, all_tenants);
}
Result<std::vector<std::string>> Directory::GroupMembers(std::string_view tenant,
                                                         std::string_view group_id) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->GroupMembers(tenant, group_id);
}
ErrorCode Directory::Remove(std::string_view tenant, std::string_view key, bool force) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->Remove(tenant, key, force);
}
uint64_t Directory::RemoveAll(std::string_view tenant, bool all_tenants, bool force) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->RemoveAll(tenant, all_tenants, force);
}
Result<uint64_t> Directory::RemoveByRegex(std::string_view tenant, std::string_view pattern,
                                          bool force) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->RemoveByRegex(tenant, pattern, force);
}

namespace {

// A batch's keys as views (the batch calls run on views).
std::vector<std::string_view> Views(const std::vector<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

}  // namespace

// Batches take the snapshot lock once for the whole batch.
std::vector<Result<std::vector<ReplicaDescriptor>>> Directory::BatchPutStart(
    const UUID& client, std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const PutConfig& config,
    const std::vector<uint64_t>& checksums) {
  return BatchPutStart(client, tenant, Views(keys), sizes, config, checksums);
}
std::vector<Result<std::vector<ReplicaDescriptor>>> Directory::BatchPutStart(
    const UUID& client, std::string_view tenant, KeyViews keys, const std::vector<uint64_t>& sizes,
    const PutConfig& config, const std::vector<uint64_t>& checksums) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchPutStart(client, tenant, keys, sizes, config, checksums);
}

std::vector<ErrorCode> Directory::BatchPutEnd(const UUID& client, std::string_view tenant,
                                              const std::vector<std::string>& keys,
                                              const std::vector<uint64_t>& checksums) {
  return BatchPutEnd(client, tenant, Views(keys), checksums);
}
std::vector<ErrorCode> Directory::BatchPutEnd(const UUID& client, std::string_view tenant,
                                              KeyViews keys,
                                              const std::vector<uint64_t>& checksums) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchPutEnd(client, tenant, keys, ReplicaType::MEMORY, checksums);
}

std::vector<ErrorCode> Directory::BatchPutRevoke(const UUID& client, std::string_view tenant,
                                                 const std::vector<std::string>& keys) {
  return BatchPutRevoke(client, tenant, Views(keys));
}
std::vector<ErrorCode> Directory::BatchPutRevoke(const UUID& client, std::string_view tenant,
                                                 KeyViews keys) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchPutRevoke(client, tenant, keys, ReplicaType::MEMORY);
}

std::vector<Result<GetReplicaListResponse>> Directory::BatchGetReplicaList(
    std::string_view tenant, const std::vector<std::string>& keys) {
  std::vector<Result<GetReplicaListResponse>> out;
  out.reserve(keys.size());
  GetReplicaListResponse scratch;
  BatchGetReplicaList(tenant, Views(keys), &scratch,
                      [&out](size_t, ErrorCode code, const GetReplicaListResponse& response) {
                        if (code == ErrorCode::OK) {
                          out.emplace_back(response);
                        } else {
                          out.emplace_back(code);
                        }
                      });
  return out;
}
void Directory::BatchGetReplicaList(std::string_view tenant, KeyViews keys,
                                    GetReplicaListResponse* scratch,
                                    const BatchReplicaListVisitor& visit) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  impl_->BatchGetReplicaList(tenant, keys, scratch, visit);
}

std::vector<Result<bool>> Directory::BatchExistKey(std::string_view tenant,
                                                   const std::vector<std::string>& keys) {
  return BatchExistKey(tenant, Views(keys));
}
std::vector<Result<bool>> Directory::BatchExistKey(std::string_view tenant, KeyViews keys) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchExistKey(tenant, keys);
}

std::vector<ErrorCode> Directory::BatchRemove(std::string_view tenant,
                                              const std::vector<std::string>& keys, bool force) {
  return BatchRemove(tenant, Views(keys), force);
}
std::vector<ErrorCode> Directory::BatchRemove(std::string_view tenant, KeyViews keys, bool force) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->BatchRemove(tenant, keys, force);
}

Result<std::vector<OffloadTask>> Directory::OffloadHeartbeat(const UUID& client,
                                                             size_t max_tasks) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->OffloadHeartbeat(client, max_tasks);
}
Result<std::vector<ErrorCode>> Directory::NotifyOffloadSuccess(
    const UUID& client, const std::vector<OffloadedObject>& items) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->NotifyOffloadSuccess(client, items);
}
Result<std::vector<ErrorCode>> Directory::NotifyOffloadFailure(
    const UUID& client, const std::vector<OffloadFailure>& items) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->NotifyOffloadFailure(client, items);
}

ErrorCode Directory::EvictDiskReplica(const UUID& client, std::string_view tenant,
                                      std::string_view key) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->EvictDiskReplica(client, tenant, key);
}

Result<std::vector<PromoteGrant>> Directory::PromoteStart(
    const UUID& client, const std::vector<PromoteRequest>& items) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->PromoteStart(client, items);
}
Result<std::vector<ErrorCode>> Directory::PromoteEnd(const UUID& client,
                                                     const std::vector<PromoteResult>& items) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->PromoteEnd(client, items);
}

Result<UUID> Directory::CreateTask(const UUID& client, std::string_view tenant,
                                   const TaskSpec& spec) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->CreateTask(client, tenant, spec);
}
Result<TaskInfo> Directory::QueryTask(std::string_view tenant, const UUID& id) {
  return impl_->QueryTask(tenant, id);
}
Result<TaskGrant> Directory::TaskStart(const UUID& client, std::string_view tenant,
                                       const UUID& id) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->TaskStart(client, tenant, id);
}
ErrorCode Directory::TaskEnd(const UUID& client, std::string_view tenant, const UUID& id,
                             ErrorCode copied) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->TaskEnd(client, tenant, id, copied);
}

void Directory::StartBackgroundThread() { impl_->StartBackgroundThread(); }

void Directory::SetServing(bool serving) { impl_->SetServing(serving); }

void Directory::RunBackgroundOnce() {
  SnapshotReader hold(&impl_->snapshot_lock_);
  impl_->RunBackgroundOnce();
}
DirectoryStats Directory::Stats() const { return impl_->Stats(); }
const DirectoryOptions& Directory::options() const { return impl_->options(); }

void Directory::RunPaused(const std::function<void()>& f) {
  SnapshotPause pause(&impl_->snapshot_lock_);
  f();
}

// Export* run while the caller keeps every operation out (see directory.h):
// no snapshot lock here.
ShardState Directory::ExportShard(uint32_t index) const { return impl_->ExportShard(index); }
void Directory::EnableChangeTracking() { impl_->EnableChangeTracking(); }
uint64_t Directory::ChangeSeq() const { return impl_->ChangeSeq(); }
ChangeSet Directory::TakeChanges() {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->TakeChanges();
}
ShardState Directory::ExportShardLive(uint32_t index) const {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->ExportShard(index);
}
std::vector<HeldRangeState> Directory::ExportHeldRanges() const {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->ExportHeldRanges();
}
SegmentsState Directory::ExportSegmentTable() const {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->ExportSegmentTable();
}
SegmentsState Directory::ExportSegments() const { return impl_->ExportSegments(); }
TasksState Directory::ExportTasks() const { return impl_->ExportTasks(); }

ErrorCode Directory::RestoreSegments(const SegmentsState& segments) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->RestoreSegments(segments);
}
ErrorCode Directory::RestoreShard(const ShardState& shard, UnfinishedPuts unfinished) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->RestoreShard(shard, unfinished);
}
ErrorCode Directory::RestoreTasks(const TasksState& tasks) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->RestoreTasks(tasks);
}
ErrorCode Directory::RestoreHeldRanges(const std::vector<HeldRangeState>& held) {
  SnapshotReader hold(&impl_->snapshot_lock_);
  return impl_->RestoreHeldRanges(held);
}
void Directory::Clear() {
  SnapshotPause pause(&impl_->snapshot_lock_);
  impl_->Clear();
}

}  // namespace shelfmark
