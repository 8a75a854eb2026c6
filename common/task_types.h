// Copy and move tasks (Mooncake's create_copy_task / create_move_task /
// query_task; docs/directory.md "Copy and move tasks"): the public value
// types the directory, the RPC layer and the client share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error_code.h"
#include "common/types.h"
#include "common/uuid.h"

namespace shelfmark {

// Mooncake's numbers.
enum class TaskType : uint8_t { REPLICA_COPY = 0, REPLICA_MOVE = 1 };
enum class TaskStatus : uint8_t { PENDING = 0, PROCESSING = 1, SUCCESS = 2, FAILED = 3 };

// What a creator asks for. A copy names `targets` (one or more segment
// names) and no source; a move names one source and exactly one target.
struct TaskSpec {
  TaskType type = TaskType::REPLICA_COPY;
  std::string key;
  std::string source;
  std::vector<std::string> targets;
};

// A task as query_task answers it.
struct TaskInfo {
  UUID id;
  TaskType type = TaskType::REPLICA_COPY;
  TaskStatus status = TaskStatus::PENDING;
  std::string key;
  std::string source;
  std::vector<std::string> targets;
  int64_t created_at_ms_epoch = 0;       // wall clock, milliseconds
  int64_t last_updated_at_ms_epoch = 0;  // the last change of status
  UUID assigned_client;                  // the client that runs it
  ErrorCode error = ErrorCode::OK;       // FAILED: why
  std::string message;                   // FAILED: the error's name; else ""
};

// What the executor of a task is granted by TaskStart: the object's size
// and one PROCESSING MEMORY range per target, in the order of the targets,
// to write the object's bytes into before TaskEnd.
struct TaskGrant {
  std::string key;
  uint64_t size = 0;
  std::vector<ReplicaDescriptor> targets;
};

}  // namespace shelfmark
