#include "directory/task_table.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace shelfmark {
namespace {

bool Unfinished(TaskStatus s) { return s == TaskStatus::PENDING || s == TaskStatus::PROCESSING; }

}  // namespace

ErrorCode TaskTable::Add(TaskEntry entry) {
  MutexLock lock(&mu_);
  if (unfinished_ >= max_unfinished_) return ErrorCode::TASK_PENDING_LIMIT_EXCEEDED;
  const UUID id = entry.info.id;
  entry.info.status = TaskStatus::PENDING;
  if (!tasks_.emplace(id, std::move(entry)).second) return ErrorCode::INTERNAL_ERROR;
  ++unfinished_;
  return ErrorCode::OK;
}

Result<TaskInfo> TaskTable::Query(std::string_view tenant, const UUID& id) const {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.tenant != tenant) return ErrorCode::TASK_NOT_FOUND;
  return it->second.info;
}

Result<TaskEntry> TaskTable::Pending(std::string_view tenant, const UUID& id,
                                     const UUID& client) const {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.tenant != tenant ||
      it->second.info.assigned_client != client) {
    return ErrorCode::TASK_NOT_FOUND;
  }
  if (it->second.info.status != TaskStatus::PENDING) return ErrorCode::INVALID_PARAMS;
  return it->second;
}

bool TaskTable::Start(const UUID& id, int64_t now_epoch_ms, int64_t deadline_ms,
                      uint64_t source_replica_id, std::vector<TaskReservation> reserved) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.info.status != TaskStatus::PENDING) return false;
  TaskEntry& e = it->second;
  e.info.status = TaskStatus::PROCESSING;
  e.info.last_updated_at_ms_epoch = now_epoch_ms;
  e.deadline_ms = deadline_ms;
  e.source_replica_id = source_replica_id;
  e.reserved = std::move(reserved);
  return true;
}

Result<TaskEntry> TaskTable::TakeProcessing(std::string_view tenant, const UUID& id,
                                            const UUID& client) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.tenant != tenant ||
      it->second.info.assigned_client != client) {
    return ErrorCode::TASK_NOT_FOUND;
  }
  TaskEntry& e = it->second;
  if (e.info.status != TaskStatus::PROCESSING || e.deadline_ms == 0) {
    return ErrorCode::INVALID_PARAMS;
  }
  TaskEntry out = e;
  e.reserved.clear();
  e.deadline_ms = 0;  // taken: no longer expires (Finish follows)
  return out;
}

void TaskTable::MarkFinished(TaskEntry& e, ErrorCode error, int64_t now_epoch_ms) {
  e.info.status = error == ErrorCode::OK ? TaskStatus::SUCCESS : TaskStatus::FAILED;
  e.info.error = error;
  e.info.message = error == ErrorCode::OK ? "" : std::string(ErrorCodeName(error));
  e.info.last_updated_at_ms_epoch = now_epoch_ms;
  e.reserved.clear();
  --unfinished_;
  finished_.push_back(e.info.id);
}

void TaskTable::Finish(const UUID& id, ErrorCode error, int64_t now_epoch_ms) {
  MutexLock lock(&mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || !Unfinished(it->second.info.status)) return;
  MarkFinished(it->second, error, now_epoch_ms);
  TrimFinished();
}

void TaskTable::ExpireUnfinished(int64_t now_ms, int64_t now_epoch_ms,
                                 const std::function<void(const TaskReservation&)>& release) {
  MutexLock lock(&mu_);
  for (auto& [id, e] : tasks_) {
    if (!Unfinished(e.info.status) || e.deadline_ms == 0 || e.deadline_ms > now_ms) continue;
    for (const TaskReservation& r : e.reserved) release(r);
    MarkFinished(e, ErrorCode::TRANSFER_FAIL, now_epoch_ms);
  }
  TrimFinished();
}

void TaskTable::TrimFinished() {
  while (finished_.size() > max_finished_) {
    tasks_.erase(finished_.front());
    finished_.pop_front();
  }
}

size_t TaskTable::DropSegments(const std::vector<const SegmentEntry*>& segments) {
  std::unordered_set<const SegmentEntry*> gone(segments.begin(), segments.end());
  MutexLock lock(&mu_);
  size_t dropped = 0;
  for (auto& entry : tasks_) {
    auto& task = entry.second;  // a named reference: clang 14 cannot capture a structured binding
    dropped += std::erase_if(task.reserved, [&](const TaskReservation& r) {
      if (gone.count(r.segment) == 0) return false;
      task.lost_target = true;
      return true;
    });
  }
  return dropped;
}

std::vector<TaskReservation> TaskTable::Export() const {
  MutexLock lock(&mu_);
  std::vector<TaskReservation> out;
  for (const auto& [id, e] : tasks_) out.insert(out.end(), e.reserved.begin(), e.reserved.end());
  return out;
}

void TaskTable::Clear() {
  MutexLock lock(&mu_);
  tasks_.clear();
  finished_.clear();
  unfinished_ = 0;
}

size_t TaskTable::unfinished() const {
  MutexLock lock(&mu_);
  return unfinished_;
}

size_t TaskTable::size() const {
  MutexLock lock(&mu_);
  return tasks_.size();
}

}  // namespace shelfmark
