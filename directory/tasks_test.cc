// Copy and move tasks (docs/directory.md "Copy and move tasks"): the task
// states, the typed refusals, and that a task's ranges are never lost or
// owned twice when the object, the target or the executor goes away.
#include "directory/directory_test_util.h"
#include "directory/task_table.h"

namespace shelfmark {
namespace {

class TasksTest : public DirectoryFixture {
 protected:
  void SetUp() override {
    Mount(node_, "a");
    Mount(other_, "b");
    Mount(third_, "c");
    PutConfig on_a;
    on_a.preferred_segments = {"a"};
    ASSERT_EQ(Put("k", 100, on_a), ErrorCode::OK);
  }

  static TaskSpec Copy(std::vector<std::string> targets, std::string key = "k") {
    return {TaskType::REPLICA_COPY, std::move(key), "", std::move(targets)};
  }
  static TaskSpec Move(std::string source, std::string target, std::string key = "k") {
    return {TaskType::REPLICA_MOVE, std::move(key), std::move(source), {std::move(target)}};
  }
  TaskStatus Status(const UUID& id) {
    auto info = dir_->QueryTask("", id);
    EXPECT_TRUE(info.ok());
    return info.ok() ? info->status : TaskStatus::FAILED;
  }
  // The segment names of the key's replicas, in the list's order.
  std::vector<std::string> SegmentsOf(const std::string& key) {
    std::vector<std::string> out;
    auto list = dir_->GetReplicaList("", key);
    if (!list.ok()) return out;
    for (const ReplicaDescriptor& r : list->replicas) {
      out.push_back(r.memory.endpoint.substr(0, r.memory.endpoint.find(':')));
    }
    return out;
  }
  uint64_t Allocated() { return dir_->Stats().allocated_bytes; }

  UUID other_ = UUID::Generate();
  UUID third_ = UUID::Generate();
};

TEST_F(TasksTest, CopyGoesPendingProcessingSuccessAndAddsCompleteReplicas) {
  auto id = dir_->CreateTask(writer_, "", Copy({"b", "c"}));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(Status(*id), TaskStatus::PENDING);
  auto info = dir_->QueryTask("", *id);
  EXPECT_EQ(info->assigned_client, writer_);
  EXPECT_EQ(info->type, TaskType::REPLICA_COPY);
  EXPECT_EQ(info->targets, (std::vector<std::string>{"b", "c"}));
  EXPECT_GT(info->created_at_ms_epoch, 0);

  auto grant = dir_->TaskStart(writer_, "", *id);
  ASSERT_TRUE(grant.ok());
  EXPECT_EQ(Status(*id), TaskStatus::PROCESSING);
  EXPECT_EQ(grant->size, 100u);
  ASSERT_EQ(grant->targets.size(), 2u);
  EXPECT_EQ(grant->targets[0].memory.endpoint, "b:1234");
  EXPECT_EQ(grant->targets[1].memory.endpoint, "c:1234");
  EXPECT_EQ(grant->targets[0].status, ReplicaStatus::PROCESSING);
  // Reserved, not yet replicas: readers see the source only.
  EXPECT_EQ(SegmentsOf("k"), std::vector<std::string>{"a"});
  EXPECT_EQ(Allocated(), 3 * 128u);

  EXPECT_EQ(dir_->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::OK);
  EXPECT_EQ(Status(*id), TaskStatus::SUCCESS);
  EXPECT_EQ(SegmentsOf("k"), (std::vector<std::string>{"a", "b", "c"}));
  auto list = dir_->GetReplicaList("", "k");
  for (const ReplicaDescriptor& r : list->replicas) EXPECT_EQ(r.status, ReplicaStatus::COMPLETE);
  EXPECT_EQ(list->replicas[1].memory.buffer_address, grant->targets[0].memory.buffer_address);
  // Ended: a second TaskEnd or TaskStart finds nothing to do.
  EXPECT_EQ(dir_->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->TaskStart(writer_, "", *id).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(TasksTest, MoveLeavesTheObjectOnTheTargetOnly) {
  auto id = dir_->CreateTask(writer_, "", Move("a", "b"));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(dir_->TaskStart(writer_, "", *id).ok());
  EXPECT_EQ(dir_->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::OK);
  EXPECT_EQ(Status(*id), TaskStatus::SUCCESS);
  EXPECT_EQ(dir_->QueryTask("", *id)->type, TaskType::REPLICA_MOVE);
  EXPECT_EQ(SegmentsOf("k"), std::vector<std::string>{"b"});
  // No read holds a lease on the source: its range is given back at once.
  EXPECT_EQ(Allocated(), 128u);
}

TEST_F(TasksTest, RefusalsAreTypedAndCreateNoTask) {
  EXPECT_EQ(dir_->CreateTask(writer_, "", Copy({"b"}, "missing")).error(),
            ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Copy({"nowhere"})).error(),
            ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Move("nowhere", "b")).error(),
            ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Copy({"a"})).error(),
            ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Move("b", "c")).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Copy({})).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Copy({"b", "b"})).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Move("a", "a")).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->CreateTask(writer_, "", Copy({"b"}, "")).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(dir_->QueryTask("", UUID::Generate()).error(), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(Allocated(), 128u);
}

TEST_F(TasksTest, TasksBelongToTheirTenantAndCreator) {
  auto id = dir_->CreateTask(writer_, "", Copy({"b"}));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(dir_->QueryTask("other", *id).error(), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(dir_->TaskStart(writer_, "other", *id).error(), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(dir_->TaskStart(other_, "", *id).error(), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(Status(*id), TaskStatus::PENDING);
}

TEST_F(TasksTest, ObjectRemovedDuringTheCopyFailsTheTaskAndFreesTheRange) {
  auto id = dir_->CreateTask(writer_, "", Copy({"b"}));
  ASSERT_TRUE(dir_->TaskStart(writer_, "", *id).ok());
  ASSERT_EQ(dir_->Remove("", "k", false), ErrorCode::OK);
  // The reserved range is the task's, not the object's: still held.
  EXPECT_EQ(Allocated(), 128u);
  EXPECT_EQ(dir_->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::OBJECT_NOT_FOUND);
  auto info = dir_->QueryTask("", *id);
  EXPECT_EQ(info->status, TaskStatus::FAILED);
  EXPECT_EQ(info->error, ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(info->message, "OBJECT_NOT_FOUND");
  EXPECT_EQ(Allocated(), 0u);
  EXPECT_FALSE(dir_->ExistKey("", "k").value());
}

TEST_F(TasksTest, ExecutorFailureOrSilenceGivesTheRangesBack) {
  auto failed = dir_->CreateTask(writer_, "", Copy({"b"}));
  ASSERT_TRUE(dir_->TaskStart(writer_, "", *failed).ok());
  EXPECT_EQ(dir_->TaskEnd(writer_, "", *failed, ErrorCode::TRANSFER_FAIL),
            ErrorCode::TRANSFER_FAIL);
  EXPECT_EQ(dir_->QueryTask("", *failed)->error, ErrorCode::TRANSFER_FAIL);
  EXPECT_EQ(Allocated(), 128u);

  auto silent = dir_->CreateTask(writer_, "", Copy({"b"}));
  auto never_started = dir_->CreateTask(writer_, "", Copy({"c"}));
  ASSERT_TRUE(dir_->TaskStart(writer_, "", *silent).ok());
  EXPECT_EQ(Allocated(), 256u);
  clock_.AdvanceMs(60'001);
  for (const UUID& owner : {node_, other_, third_}) dir_->Ping(owner);  // the segments stay
  dir_->RunBackgroundOnce();
  EXPECT_EQ(Status(*silent), TaskStatus::FAILED);
  EXPECT_EQ(Status(*never_started), TaskStatus::FAILED);
  EXPECT_EQ(Allocated(), 128u);
  EXPECT_EQ(dir_->TaskEnd(writer_, "", *silent, ErrorCode::OK), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(SegmentsOf("k"), std::vector<std::string>{"a"});
}

TEST_F(TasksTest, TargetUnmountedDuringTheCopyFailsTheTask) {
  auto id = dir_->CreateTask(writer_, "", Copy({"b"}));
  auto grant = dir_->TaskStart(writer_, "", *id);
  ASSERT_TRUE(grant.ok());
  ASSERT_EQ(dir_->UnmountSegment(other_, grant->targets[0].memory.segment_id), ErrorCode::OK);
  EXPECT_EQ(dir_->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(Status(*id), TaskStatus::FAILED);
  EXPECT_EQ(SegmentsOf("k"), std::vector<std::string>{"a"});
  EXPECT_EQ(Allocated(), 128u);
}

TEST_F(TasksTest, MoveOfAReadObjectRetiresTheSourceUntilTheLeaseEnds) {
  ASSERT_TRUE(dir_->GetReplicaList("", "k").ok());  // a reader's lease
  auto id = dir_->CreateTask(writer_, "", Move("a", "b"));
  ASSERT_TRUE(dir_->TaskStart(writer_, "", *id).ok());
  ASSERT_EQ(dir_->TaskEnd(writer_, "", *id, ErrorCode::OK), ErrorCode::OK);
  EXPECT_EQ(SegmentsOf("k"), std::vector<std::string>{"b"});
  EXPECT_EQ(Allocated(), 256u);  // the reader may still read the source
  clock_.AdvanceMs(DirectoryOptions{}.default_kv_lease_ttl_ms + 1);
  for (const UUID& owner : {node_, other_, third_}) dir_->Ping(owner);
  dir_->RunBackgroundOnce();
  EXPECT_EQ(Allocated(), 128u);
}

TEST_F(TasksTest, TargetFullFailsTheTaskAtStart) {
  PutConfig on_b;
  on_b.preferred_segments = {"b"};
  ASSERT_EQ(Put("big", (1 << 20) - 64, on_b), ErrorCode::OK);
  auto id = dir_->CreateTask(writer_, "", Copy({"b"}));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(dir_->TaskStart(writer_, "", *id).error(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(dir_->QueryTask("", *id)->error, ErrorCode::NO_AVAILABLE_HANDLE);
}

TEST(TaskTableTest, BoundsUnfinishedAndKeepsTheNewestFinished) {
  TaskTable table(/*max_unfinished=*/2, /*max_finished=*/1);
  std::vector<UUID> ids;
  for (int i = 0; i < 3; ++i) {
    TaskEntry e;
    e.info.id = UUID::Generate();
    ids.push_back(e.info.id);
    EXPECT_EQ(table.Add(e), i < 2 ? ErrorCode::OK : ErrorCode::TASK_PENDING_LIMIT_EXCEEDED);
  }
  table.Finish(ids[0], ErrorCode::OK, 1);
  table.Finish(ids[1], ErrorCode::TRANSFER_FAIL, 2);
  EXPECT_EQ(table.unfinished(), 0u);
  // Only the newest finished task is kept.
  EXPECT_EQ(table.Query("", ids[0]).error(), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(table.Query("", ids[1])->status, TaskStatus::FAILED);
  EXPECT_EQ(table.size(), 1u);
}

}  // namespace
}  // namespace shelfmark
