// The store service's copy and move tasks on its socket (service_wire.h,
// kCreateTask / kQueryTask): a TaskSpec and a TaskInfo (common/task_types.h)
// as bytes. Enums travel as u8, ids as their 16 bytes.
//
// Thread safety: free functions; reentrant.
#pragma once

#include "common/task_types.h"
#include "common/wire_bytes.h"

namespace shelfmark::storeservice {

void PutTaskSpec(wire::Appender& a, const TaskSpec& spec);
// False on an unknown enum value; short bytes leave r.done() false (the
// caller checks it). Nothing else is promised of a refused message.
bool GetTaskSpec(wire::Reader& r, TaskSpec* spec);

void PutTaskInfo(wire::Appender& a, const TaskInfo& info);
bool GetTaskInfo(wire::Reader& r, TaskInfo* info);

}  // namespace shelfmark::storeservice
