// Cap'n Proto conversions of the copy/move task types (common/task_types.h,
// schemas/master.capnp "Copy and move tasks"), beside rpc_convert.h's.
#pragma once

#include "common/error_code.h"
#include "common/task_types.h"
#include "schemas/master.capnp.h"

namespace shelfmark::rpcconv {

wire::TaskType EncodeEnum(TaskType v);
// INVALID_PARAMS for a value this build does not know.
ErrorCode DecodeEnum(wire::TaskType v, TaskType* out);

void Encode(const TaskInfo& v, wire::TaskInfo::Builder b);
// INVALID_PARAMS for an unknown type or status, or a text past the limits
// of rpc_convert.h.
ErrorCode Decode(wire::TaskInfo::Reader r, TaskInfo* out);

}  // namespace shelfmark::rpcconv
