// Copy and move tasks through the real master service (Cap'n Proto over
// TCP) between real Nodes: the executing client really moves the bytes,
// and the new replica is read back byte-exact from its own segment.
#include <cstring>

#include "client/client_test_util.h"

namespace shelfmark {
namespace {

class ClientTasksTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    a_ = &StartNode("seg-a");
    b_ = &StartNode("seg-b");
    c_ = &StartNode("seg-c");
    value_ = Pattern(300'000, 5);
    PutOptions on_a;
    on_a.config.preferred_segments = {"seg-a"};
    ASSERT_EQ(MakeClient().Put("", "obj", value_, on_a), ErrorCode::OK);
  }

  // The replica of "obj" on `node`'s segment (nullopt if none).
  std::optional<MemoryDescriptor> ReplicaOn(const TestNode& node) {
    auto info = dir_->Stat("", "obj");
    if (!info.ok()) return std::nullopt;
    for (const ReplicaDescriptor& r : info->replicas) {
      if (r.memory.segment_id == node.node->segment().id) return r.memory;
    }
    return std::nullopt;
  }
  // The bytes a node's segment holds for a replica.
  std::string BytesOf(const TestNode& node, const MemoryDescriptor& replica) {
    return std::string(reinterpret_cast<const char*>(node.At(replica.buffer_address)),
                       replica.size);
  }
  TaskSpec Copy(std::vector<std::string> targets) {
    return {TaskType::REPLICA_COPY, "obj", "", std::move(targets)};
  }

  TestNode* a_ = nullptr;
  TestNode* b_ = nullptr;
  TestNode* c_ = nullptr;
  std::string value_;
};

TEST_F(ClientTasksTest, CopyWritesTheBytesIntoEachTargetsSegment) {
  auto id = client_->CreateTask("", Copy({"seg-b", "seg-c"}));
  ASSERT_TRUE(id.ok()) << ErrorCodeName(id.error());
  EXPECT_EQ(client_->QueryTask("", *id)->status, TaskStatus::PENDING);
  ASSERT_EQ(client_->RunTask("", *id), ErrorCode::OK);
  auto info = client_->QueryTask("", *id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->status, TaskStatus::SUCCESS);
  EXPECT_EQ(info->targets, (std::vector<std::string>{"seg-b", "seg-c"}));
  for (TestNode* node : {a_, b_, c_}) {
    auto replica = ReplicaOn(*node);
    ASSERT_TRUE(replica.has_value()) << node->node->segment().name;
    EXPECT_EQ(BytesOf(*node, *replica), value_) << node->node->segment().name;
  }
}

TEST_F(ClientTasksTest, MoveReadsBackFromTheTargetAlone) {
  auto source = ReplicaOn(*a_);
  ASSERT_TRUE(source.has_value());
  auto id = client_->CreateTask("", {TaskType::REPLICA_MOVE, "obj", "seg-a", {"seg-c"}});
  ASSERT_TRUE(id.ok());
  ASSERT_EQ(client_->RunTask("", *id), ErrorCode::OK);
  EXPECT_EQ(client_->QueryTask("", *id)->status, TaskStatus::SUCCESS);
  EXPECT_FALSE(ReplicaOn(*a_).has_value());
  auto moved = ReplicaOn(*c_);
  ASSERT_TRUE(moved.has_value());
  // The source's bytes are no longer the object's: wiping them proves the
  // read below is served by the target.
  std::memset(a_->At(source->buffer_address), 0, source->size);
  auto got = client_->Get("", "obj");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, value_);
  EXPECT_EQ(BytesOf(*c_, *moved), value_);
}

TEST_F(ClientTasksTest, RefusalsTravelTypedOverTheWire) {
  EXPECT_EQ(client_->CreateTask("", Copy({"seg-x"})).error(), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(client_->CreateTask("", Copy({"seg-a"})).error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(client_->CreateTask("", {TaskType::REPLICA_COPY, "nope", "", {"seg-b"}}).error(),
            ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client_->QueryTask("", UUID::Generate()).error(), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(client_->RunTask("", UUID::Generate()), ErrorCode::TASK_NOT_FOUND);
}

TEST_F(ClientTasksTest, UnreachableTargetFailsTheTaskAndKeepsTheObject) {
  b_->engine->UnregisterMemory(b_->node->region());
  auto id = client_->CreateTask("", Copy({"seg-b"}));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(client_->RunTask("", *id), ErrorCode::TRANSFER_FAIL);
  auto info = client_->QueryTask("", *id);
  EXPECT_EQ(info->status, TaskStatus::FAILED);
  EXPECT_EQ(info->error, ErrorCode::TRANSFER_FAIL);
  EXPECT_EQ(info->message, "TRANSFER_FAIL");
  EXPECT_FALSE(ReplicaOn(*b_).has_value());
  EXPECT_EQ(*client_->Get("", "obj"), value_);
}

}  // namespace
}  // namespace shelfmark
