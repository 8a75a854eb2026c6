#include "rpc/task_convert.h"

#include <string>

#include "rpc/rpc_convert.h"

namespace shelfmark::rpcconv {
namespace {

// The wire's enums carry Mooncake's numbers, as common/task_types.h does.
constexpr uint16_t kTaskTypes = 2;
constexpr uint16_t kTaskStatuses = 4;

}  // namespace

wire::TaskType EncodeEnum(TaskType v) { return static_cast<wire::TaskType>(v); }

ErrorCode DecodeEnum(wire::TaskType v, TaskType* out) {
  if (static_cast<uint16_t>(v) >= kTaskTypes) return ErrorCode::INVALID_PARAMS;
  *out = static_cast<TaskType>(v);
  return ErrorCode::OK;
}

void Encode(const TaskInfo& v, wire::TaskInfo::Builder b) {
  Encode(v.id, b.initId());
  b.setType(EncodeEnum(v.type));
  b.setStatus(static_cast<wire::TaskStatus>(v.status));
  b.setKey(AsText(v.key));
  b.setSource(AsText(v.source));
  EncodeTexts(v.targets, b.initTargets(v.targets.size()));
  b.setCreatedAtMsEpoch(v.created_at_ms_epoch);
  b.setLastUpdatedAtMsEpoch(v.last_updated_at_ms_epoch);
  Encode(v.assigned_client, b.initAssignedClient());
  b.setError(static_cast<int32_t>(v.error));
  b.setMessage(AsText(v.message));
}

ErrorCode Decode(wire::TaskInfo::Reader r, TaskInfo* out) {
  if (DecodeEnum(r.getType(), &out->type) != ErrorCode::OK ||
      static_cast<uint16_t>(r.getStatus()) >= kTaskStatuses ||
      r.getSource().size() > kMaxBlobBytes || r.getMessage().size() > kMaxBlobBytes) {
    return ErrorCode::INVALID_PARAMS;
  }
  if (ErrorCode rc = DecodeTexts(r.getTargets(), kMaxPreferredSegments, &out->targets);
      rc != ErrorCode::OK) {
    return rc;
  }
  out->id = Decode(r.getId());
  out->status = static_cast<TaskStatus>(r.getStatus());
  out->key.assign(r.getKey().cStr(), r.getKey().size());
  out->source.assign(r.getSource().cStr(), r.getSource().size());
  out->created_at_ms_epoch = r.getCreatedAtMsEpoch();
  out->last_updated_at_ms_epoch = r.getLastUpdatedAtMsEpoch();
  out->assigned_client = Decode(r.getAssignedClient());
  out->error = ErrorCodeFromInt(r.getError());
  out->message.assign(r.getMessage().cStr(), r.getMessage().size());
  return ErrorCode::OK;
}

}  // namespace shelfmark::rpcconv
