// The executor side of copy and move tasks (client.h, "copy and move
// tasks"; docs/directory.md "Copy and move tasks"): the creating client
// reads the object and writes it into the ranges the master reserved on
// each target, then reports to the master, which attaches them.
#include "client/client.h"
#include "client/client_impl.h"
#include "client/transfer_plan.h"

namespace shelfmark {

Result<UUID> Client::CreateTask(std::string_view tenant, const TaskSpec& spec) {
  return impl_->master().CreateTask(tenant, spec);
}

Result<TaskInfo> Client::QueryTask(std::string_view tenant, const UUID& id) {
  return impl_->master().QueryTask(tenant, id);
}

ErrorCode Client::RunTask(std::string_view tenant, const UUID& id) {
  auto grant = impl_->master().TaskStart(tenant, id);
  if (!grant.ok()) return grant.error();
  // The object's bytes into every target through one staging block: a
  // fresh lookup (a move's source may be what the cache holds), a whole
  // read (its checksum verified), one write per target.
  auto copy = [&]() -> ErrorCode {
    StagingBlock block(impl_.get(), grant->size);
    if (block.data() == nullptr) return block.error();
    GetOptions fresh;
    fresh.use_location_cache = false;
    auto found = impl_->Locate(tenant, grant->key, fresh);
    if (!found.ok()) return found.error();
    if (found->location->info.size != grant->size) return ErrorCode::OBJECT_NOT_FOUND;  // replaced
    const MutableBuffer into{block.data(), grant->size};
    auto read = impl_->ReadInto(*found->location, {&into, 1});
    if (!read.ok()) return read.error();
    TransferPlan plan;
    plan.pieces.push_back({0, grant->size, block.data()});
    plan.whole = true;
    return impl_->WriteReplicas(grant->targets, plan);
  };
  const ErrorCode copied = copy();
  const ErrorCode ended = impl_->master().TaskEnd(tenant, id, copied);
  // New replicas (and a move's source gone): the cached location is stale.
  impl_->cache->Invalidate(tenant, grant->key);
  return copied != ErrorCode::OK ? copied : ended;
}

}  // namespace shelfmark
