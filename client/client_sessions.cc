// Client's two-phase puts and ranged reads of a located object: the steps
// mooncake.store's put and get sessions are made of. See client/client.h.
#include <utility>

#include "client/client_impl.h"

namespace shelfmark {
namespace {

template <typename T>
std::vector<T> Each(size_t n, ErrorCode rc) {
  return std::vector<T>(n, rc);
}

// A batch answer of the master, or its one error for every key.
std::vector<ErrorCode> PerKey(const Result<std::vector<ErrorCode>>& answer, size_t keys) {
  if (!answer.ok()) return Each<ErrorCode>(keys, answer.error());
  return *answer;
}

}  // namespace

std::vector<Result<std::vector<ReplicaDescriptor>>> Client::StartPuts(
    std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<uint64_t>& sizes, const PutConfig& config) {
  using Started = Result<std::vector<ReplicaDescriptor>>;
  if (sizes.size() != keys.size()) return Each<Started>(keys.size(), ErrorCode::INVALID_PARAMS);
  PutConfig unchecked = config;
  unchecked.checksum.reset();  // unknown until every piece is written (client.h)
  auto started = impl_->master().BatchPutStart(tenant, keys, sizes, unchecked);
  if (!started.ok()) return Each<Started>(keys.size(), started.error());
  return std::move(started).value();
}

ErrorCode Client::WriteAt(const std::vector<ReplicaDescriptor>& replicas, uint64_t object_size,
                          const std::vector<ConstBuffer>& parts,
                          const std::vector<uint64_t>& offsets) {
  if (parts.size() != offsets.size()) return ErrorCode::INVALID_PARAMS;
  if (ErrorCode rc = impl_->CheckRegistered(parts); rc != ErrorCode::OK) return rc;
  TransferPlan plan;
  for (size_t i = 0; i < parts.size(); ++i) {
    const uint64_t size = parts[i].size;
    if (offsets[i] > object_size || size > object_size - offsets[i]) {
      return ErrorCode::INVALID_PARAMS;
    }
    if (size == 0) continue;  // plans hold no empty piece
    if (parts[i].data == nullptr) return ErrorCode::INVALID_PARAMS;
    plan.pieces.push_back(
        {offsets[i], size, static_cast<uint8_t*>(const_cast<void*>(parts[i].data))});
  }
  if (plan.pieces.empty()) return ErrorCode::OK;
  return impl_->WriteReplicas(replicas, plan);
}

std::vector<ErrorCode> Client::EndPuts(std::string_view tenant,
                                       const std::vector<std::string>& keys) {
  std::vector<ErrorCode> out = PerKey(impl_->master().BatchPutEnd(tenant, keys), keys.size());
  // New objects: a cached location of one of these keys was of a removed one.
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out[i] == ErrorCode::OK) impl_->cache->Invalidate(tenant, keys[i]);
  }
  return out;
}

std::vector<ErrorCode> Client::RevokePuts(std::string_view tenant,
                                          const std::vector<std::string>& keys) {
  return PerKey(impl_->master().BatchPutRevoke(tenant, keys), keys.size());
}

ErrorCode Client::ReadRanges(const ObjectLocation& location,
                             const std::vector<ReadRange>& ranges) {
  for (const ReadRange& r : ranges) {
    if (!impl_->Registered(r.dst, r.length)) return ErrorCode::INVALID_PARAMS;
  }
  auto plan = RangePlan(ranges, location.info.size);
  if (!plan.ok()) return plan.error();
  // Before the transfer too: past its lease the replica's memory may
  // already hold another object (Read checks again after it).
  if (impl_->clock->NowMs() >= location.lease_deadline_ms) return ErrorCode::LEASE_EXPIRED;
  if (plan->pieces.empty()) return ErrorCode::OK;
  return impl_->Read(location, *plan);
}

}  // namespace shelfmark
