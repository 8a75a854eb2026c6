#include "storeservice/task_wire.h"

#include "rpc/lookup_wire.h"

namespace shelfmark::storeservice {
namespace {

using lookup_wire_internal::GetEnum;
using lookup_wire_internal::GetUuid;
using lookup_wire_internal::PutUuid;

void PutStrings(wire::Appender& a, const std::vector<std::string>& strings) {
  a.Put(static_cast<uint32_t>(strings.size()));
  for (const std::string& s : strings) a.Bytes(s);
}

bool GetStrings(wire::Reader& r, std::vector<std::string>* strings) {
  const uint32_t n = r.Get<uint32_t>();
  if (n > r.left() / 4) return false;  // a string takes >= 4 bytes
  strings->resize(n);
  for (std::string& s : *strings) s = r.Bytes();
  return true;  // short bytes: the caller's r.done() is false
}

}  // namespace

void PutTaskSpec(wire::Appender& a, const TaskSpec& spec) {
  a.Put(static_cast<uint8_t>(spec.type)).Bytes(spec.key).Bytes(spec.source);
  PutStrings(a, spec.targets);
}

bool GetTaskSpec(wire::Reader& r, TaskSpec* spec) {
  if (!GetEnum(r, static_cast<uint8_t>(TaskType::REPLICA_MOVE), &spec->type)) return false;
  spec->key = r.Bytes();
  spec->source = r.Bytes();
  return GetStrings(r, &spec->targets);
}

void PutTaskInfo(wire::Appender& a, const TaskInfo& info) {
  PutUuid(a, info.id);
  a.Put(static_cast<uint8_t>(info.type)).Put(static_cast<uint8_t>(info.status));
  a.Bytes(info.key).Bytes(info.source);
  PutStrings(a, info.targets);
  a.Put(info.created_at_ms_epoch).Put(info.last_updated_at_ms_epoch);
  PutUuid(a, info.assigned_client);
  a.Put(static_cast<int32_t>(info.error)).Bytes(info.message);
}

bool GetTaskInfo(wire::Reader& r, TaskInfo* info) {
  info->id = GetUuid(r);
  if (!GetEnum(r, static_cast<uint8_t>(TaskType::REPLICA_MOVE), &info->type) ||
      !GetEnum(r, static_cast<uint8_t>(TaskStatus::FAILED), &info->status)) {
    return false;
  }
  info->key = r.Bytes();
  info->source = r.Bytes();
  if (!GetStrings(r, &info->targets)) return false;
  info->created_at_ms_epoch = r.Get<int64_t>();
  info->last_updated_at_ms_epoch = r.Get<int64_t>();
  info->assigned_client = GetUuid(r);
  info->error = ErrorCodeFromInt(r.Get<int32_t>());
  info->message = r.Bytes();
  return true;  // short bytes: the caller's r.done() is false
}

}  // namespace shelfmark::storeservice
