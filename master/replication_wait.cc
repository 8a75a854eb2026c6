#include "master/replication_wait.h"

#include <memory>

#include "directory/directory.h"
#include "replication/replication_leader.h"

namespace shelfmark::master_internal {

std::optional<uint64_t> ReplicationSeq(const SharedState& s, CallKind kind) {
  if (!Mutates(kind) || s.replication == nullptr) return std::nullopt;
  return s.directory.ChangeSeq();
}

std::optional<kj::Promise<void>> WaitReplicated(const SharedState& s, uint64_t seq) {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  auto fulfiller = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(
      kj::mv(paf.fulfiller));
  if (s.replication->WhenReplicated(seq, [fulfiller] { (*fulfiller)->fulfill(); })) {
    return std::nullopt;
  }
  return kj::mv(paf.promise);
}

ErrorCode AfterReplicated(SharedState& s, uint64_t seq) {
  return s.replication->Replicated(seq) ? s.gate.Admit(CallKind::kMutation)
                                        : ErrorCode::NOT_LEADER;
}

}  // namespace shelfmark::master_internal
