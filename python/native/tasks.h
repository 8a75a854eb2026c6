// Mooncake's copy and move tasks of MooncakeDistributedStore
// (create_copy_task, create_move_task, query_task) over a Store's client
// (client.h, "copy and move tasks"; docs/python.md "Copy and move tasks").
// Task ids travel as their canonical UUID text; codes are ErrorCode ints
// (INVALID_PARAMS when the store is closed or an id does not parse).
//
// Thread safety: any function from any thread (each holds the client like
// a call in flight).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/task_types.h"
#include "python/native/store.h"

namespace shelfmark::python {

// Records a task with the store's client as its executor; 0 and *id, or
// the code.
int CreateTask(const Store& store, const TaskSpec& spec, std::string* id);
// Runs a recorded task to its end (Client::RunTask); 0 or the code.
int RunTask(const Store& store, const std::string& id);
// The task as the master holds it; 0 and *out, or the code.
int QueryTask(const Store& store, const std::string& id, TaskInfo* out);

}  // namespace shelfmark::python
