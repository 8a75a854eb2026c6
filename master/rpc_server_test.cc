// RpcServer + MasterClient over real Cap'n Proto on loopback TCP, against a
// real Directory (no background thread, ManualClock).
#include "master/rpc_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <capnp/any.h>
#include <capnp/ez-rpc.h>

#include "common/clock.h"
#include "rpc/master_client.h"
#include "service/metrics.h"
#include "rpc/rpc_convert.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "schemas/master.capnp.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"
#include "master/rpc_server_test_util.h"

namespace shelfmark {
namespace {

using Clock = std::chrono::steady_clock;
using testing::MetricValue;

int64_t ElapsedMs(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Connects a plain TCP socket to 127.0.0.1:port; -1 on failure.
int ConnectRaw(uint16_t port) { return testing::ConnectLoopback(port); }

class RpcServerTest : public RpcServerFixture {};

TEST_F(RpcServerTest, SegmentPutGetRoundTrip) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.Connect(), ErrorCode::OK);
  Segment seg = MakeSegment("seg-a");
  ASSERT_EQ(client.MountSegment(seg), ErrorCode::OK);

  PutConfig config;
  config.checksum = 0xabcdef;
  config.data_type = DataType::KVCACHE;
  auto started = client.PutStart("", "key-1", 4096, config);
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  ASSERT_EQ(started->size(), 1u);
  const ReplicaDescriptor& r = (*started)[0];
  EXPECT_EQ(r.type, ReplicaType::MEMORY);
  EXPECT_EQ(r.status, ReplicaStatus::PROCESSING);
  EXPECT_EQ(r.memory.endpoint, seg.endpoint);
  EXPECT_EQ(r.memory.protocol, seg.protocol);
  EXPECT_EQ(r.memory.rkey, seg.rkey);
  EXPECT_EQ(r.memory.segment_id, seg.id);
  EXPECT_EQ(r.memory.size, 4096u);
  EXPECT_GE(r.memory.buffer_address, seg.base);
  EXPECT_LE(r.memory.buffer_address + 4096, seg.base + seg.size);

  // Not readable before PutEnd.
  auto early = client.GetReplicaList("", "key-1");
  EXPECT_EQ(early.error(), ErrorCode::REPLICA_IS_NOT_READY);
  ASSERT_EQ(client.PutEnd("", "key-1"), ErrorCode::OK);

  auto got = client.GetReplicaList("", "key-1");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  ASSERT_EQ(got->replicas.size(), 1u);
  EXPECT_EQ(got->replicas[0].status, ReplicaStatus::COMPLETE);
  EXPECT_EQ(got->replicas[0].id, r.id);
  EXPECT_EQ(got->replicas[0].memory.endpoint, seg.endpoint);
  EXPECT_EQ(got->replicas[0].memory.rkey, seg.rkey);
  EXPECT_EQ(got->replicas[0].memory.buffer_address, r.memory.buffer_address);
  EXPECT_EQ(got->size, 4096u);
  EXPECT_EQ(got->checksum, std::optional<uint64_t>(0xabcdef));
  EXPECT_EQ(got->data_type, DataType::KVCACHE);
  EXPECT_GT(got->lease_ttl_ms, 0);

  EXPECT_EQ(client.GetReplicaList("", "missing").error(), ErrorCode::OBJECT_NOT_FOUND);
  auto exists = client.ExistKey("", "key-1");
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(*exists);
  auto absent = client.ExistKey("", "missing");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(*absent);

  auto info = client.Stat("", "key-1");
  ASSERT_TRUE(info.ok()) << ErrorCodeName(info.error());
  EXPECT_EQ(info->key, "key-1");
  EXPECT_EQ(info->size, 4096u);
  EXPECT_EQ(info->writer, client.client_id());
  EXPECT_EQ(info->checksum, std::optional<uint64_t>(0xabcdef));
  EXPECT_EQ(info->replicas.size(), 1u);
  EXPECT_GT(info->lease_remaining_ms, 0);  // the reads above granted a lease
  EXPECT_EQ(client.Stat("", "missing").error(), ErrorCode::OBJECT_NOT_FOUND);

  // Revoke path.
  ASSERT_TRUE(client.PutStart("", "key-2", 100, {}).ok());
  EXPECT_EQ(client.PutRevoke("", "key-2"), ErrorCode::OK);
  EXPECT_EQ(client.GetReplicaList("", "key-2").error(), ErrorCode::OBJECT_NOT_FOUND);

  // Another client may not finish someone else's put.
  MasterClient other(ClientOptions());
  ASSERT_TRUE(client.PutStart("", "key-3", 100, {}).ok());
  EXPECT_EQ(other.PutEnd("", "key-3"), ErrorCode::ILLEGAL_CLIENT);

  // Draining: refused for others' segments, the object still read.
  EXPECT_EQ(client.DrainSegment(UUID::Generate()), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(other.DrainSegment(seg.id), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(client.DrainSegment(seg.id), ErrorCode::OK);
  EXPECT_TRUE(client.GetReplicaList("", "key-1").ok());
  EXPECT_EQ(client.PutStart("", "key-4", 100, {}).error(), ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(client.UnmountSegment(UUID::Generate()), ErrorCode::SEGMENT_NOT_FOUND);
  EXPECT_EQ(other.UnmountSegment(seg.id), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(client.UnmountSegment(seg.id), ErrorCode::OK);
  EXPECT_EQ(client.GetReplicaList("", "key-1").error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(RpcServerTest, ListCountRemoveGroupsTenants) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  for (int i = 0; i < 5; ++i) Put(client, "list/" + std::to_string(i));
  Put(client, "other");
  Put(client, "t-key", 64, "tenant-b");
  PutConfig grouped;
  grouped.group_id = "grp";
  Put(client, "member-1", 64, "", grouped);
  Put(client, "member-2", 64, "", grouped);

  auto keys = client.ListKeys("", "list/", 100);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<std::string>{"list/0", "list/1", "list/2", "list/3", "list/4"}));
  auto limited = client.ListKeys("", "list/", 2);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->size(), 2u);
  auto tenant_keys = client.ListKeys("tenant-b", "", 100);
  ASSERT_TRUE(tenant_keys.ok());
  EXPECT_EQ(*tenant_keys, std::vector<std::string>{"t-key"});

  auto count = client.CountKeys("", false);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 8u);
  auto count_default = client.CountKeys("default", false);
  ASSERT_TRUE(count_default.ok());
  EXPECT_EQ(*count_default, 8u);
  auto count_all = client.CountKeys("", true);
  ASSERT_TRUE(count_all.ok());
  EXPECT_EQ(*count_all, 9u);

  auto members = client.GroupMembers("", "grp");
  ASSERT_TRUE(members.ok()) << ErrorCodeName(members.error());
  EXPECT_EQ(*members, (std::vector<std::string>{"member-1", "member-2"}));
  EXPECT_EQ(client.GroupMembers("", "no-such-group").error(), ErrorCode::OBJECT_NOT_FOUND);

  // A read grants a lease: remove without force is refused, force works.
  ASSERT_TRUE(client.GetReplicaList("", "other").ok());
  EXPECT_EQ(client.Remove("", "other"), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(client.Remove("", "other", /*force=*/true), ErrorCode::OK);
  EXPECT_EQ(client.Remove("", "other", true), ErrorCode::OBJECT_NOT_FOUND);

  // Once leases expired, plain removal works.
  clock_.AdvanceMs(60'000);
  EXPECT_EQ(client.Remove("", "list/0"), ErrorCode::OK);
  auto removed = client.RemoveAll("tenant-b", false);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  auto removed_all = client.RemoveAll("", true, true);
  ASSERT_TRUE(removed_all.ok());
  EXPECT_EQ(*removed_all, 6u);
  EXPECT_EQ(*client.CountKeys("", true), 0u);
}

TEST_F(RpcServerTest, RemoveByRegexOverRpc) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  for (const char* key : {"run1/a", "run1/b", "run2/a"}) Put(client, key);
  Put(client, "run1/a", 64, "tenant-b");
  ASSERT_TRUE(client.GetReplicaList("", "run1/b").ok());  // leased
  auto removed = client.RemoveByRegex("", "^run1/");
  ASSERT_TRUE(removed.ok()) << ErrorCodeName(removed.error());
  EXPECT_EQ(*removed, 1u) << "the leased key stays unless forced";
  removed = client.RemoveByRegex("", "^run1/", /*force=*/true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  EXPECT_EQ(*client.ListKeys("", "", 10), std::vector<std::string>{"run2/a"});
  EXPECT_EQ(*client.CountKeys("tenant-b", false), 1u);
  EXPECT_EQ(client.RemoveByRegex("", "(a)\\1").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.RemoveByRegex("", "").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.RemoveByRegex("", std::string(300, 'a')).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(RpcServerTest, UpsertOverRpc) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  Put(client, "k", 1000);
  PutConfig replace;
  replace.replace = true;
  auto started = client.PutStart("", "k", 3000, replace);
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  EXPECT_EQ(client.GetReplicaList("", "k")->size, 1000u) << "the old version until PutEnd";
  ASSERT_EQ(client.PutEnd("", "k"), ErrorCode::OK);
  EXPECT_EQ(client.GetReplicaList("", "k")->size, 3000u);
  EXPECT_EQ(client.PutStart("", "k", 10, PutConfig{}).error(), ErrorCode::OBJECT_ALREADY_EXISTS)
      << "without replace a key that exists is refused";
  auto batch = client.BatchPutStart("", {"k"}, {20}, replace);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE((*batch)[0].ok());
  EXPECT_EQ((*client.BatchPutEnd("", {"k"}))[0], ErrorCode::OK);
  EXPECT_EQ(client.GetReplicaList("", "k")->size, 20u);
  EXPECT_EQ(dir_->Stats().upserts, 2u);
}

TEST_F(RpcServerTest, PingMountLocalDiskAndOffload) {
  MasterClient node(ClientOptions());
  MasterClient writer(ClientOptions());

  auto unknown = node.Ping();
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, ClientStatus::NEED_REMOUNT);

  Segment seg = MakeSegment("node-seg");
  ASSERT_EQ(node.MountSegment(seg), ErrorCode::OK);
  auto known = node.Ping();
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(known->status, ClientStatus::OK);
  EXPECT_EQ(known->view_version, unknown->view_version);

  EXPECT_EQ(node.MountLocalDisk(true, ""), ErrorCode::INVALID_PARAMS);
  ASSERT_EQ(node.MountLocalDisk(true, "10.0.0.1:9000"), ErrorCode::OK);

  Put(writer, "offload-me", 2048);
  auto tasks = node.OffloadHeartbeat(16);
  ASSERT_TRUE(tasks.ok()) << ErrorCodeName(tasks.error());
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].key, "offload-me");
  EXPECT_EQ((*tasks)[0].size, 2048u);
  EXPECT_EQ(writer.OffloadHeartbeat(16).error(), ErrorCode::ILLEGAL_CLIENT);

  std::vector<OffloadedObject> done = {
      {(*tasks)[0].tenant, "offload-me", {1, 0, 10, 2048, "10.0.0.1:9000"}},
      {"", "relearned", {2, 4096, 9, 512, "10.0.0.1:9000"}},  // unknown to the master
      {"", "", {3, 0, 0, 1, "10.0.0.1:9000"}},                // bad key
  };
  auto codes = node.NotifyOffloadSuccess(done);
  ASSERT_TRUE(codes.ok()) << ErrorCodeName(codes.error());
  EXPECT_EQ(*codes, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OK, ErrorCode::INVALID_KEY}));
  EXPECT_EQ(writer.NotifyOffloadSuccess(done).error(), ErrorCode::ILLEGAL_CLIENT);

  auto info = writer.Stat("", "offload-me");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->replicas.size(), 2u);
  int disk = 0;
  for (const auto& r : info->replicas) {
    if (r.type == ReplicaType::LOCAL_DISK) {
      ++disk;
      EXPECT_EQ(r.disk.client_id, node.client_id());
      EXPECT_EQ(r.disk.endpoint, "10.0.0.1:9000");
    }
  }
  EXPECT_EQ(disk, 1);
  auto relearned = writer.GetReplicaList("", "relearned");
  ASSERT_TRUE(relearned.ok()) << ErrorCodeName(relearned.error());
  ASSERT_EQ(relearned->replicas.size(), 1u);
  EXPECT_EQ(relearned->replicas[0].type, ReplicaType::LOCAL_DISK);

  EXPECT_EQ(node.EvictDiskReplica("", "offload-me"), ErrorCode::OK);
  EXPECT_EQ(node.EvictDiskReplica("", "offload-me"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(writer.EvictDiskReplica("", "relearned"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(writer.Stat("", "offload-me")->replicas.size(), 1u);
}

TEST_F(RpcServerTest, PromoteStartAndEndOverRpc) {
  MasterClient node(ClientOptions());
  MasterClient writer(ClientOptions());
  Segment seg = MakeSegment("node-seg");
  ASSERT_EQ(node.MountSegment(seg), ErrorCode::OK);
  ASSERT_EQ(node.MountLocalDisk(true, "10.0.0.1:9000"), ErrorCode::OK);
  auto reported = node.NotifyOffloadSuccess({{"", "on-ssd", {2, 4096, 6, 512, "10.0.0.1:9000"}}});
  ASSERT_TRUE(reported.ok());

  EXPECT_EQ(writer.PromoteStart({{"", "on-ssd", 512}}).error(), ErrorCode::ILLEGAL_CLIENT);
  auto grants = node.PromoteStart({{"", "on-ssd", 512}, {"", "nope", 512}, {"", "", 1}});
  ASSERT_TRUE(grants.ok()) << ErrorCodeName(grants.error());
  ASSERT_EQ(grants->size(), 3u);
  EXPECT_EQ((*grants)[0].code, ErrorCode::OK);
  EXPECT_GE((*grants)[0].buffer_address, seg.base);
  EXPECT_LE((*grants)[0].buffer_address + 512, seg.base + seg.size);
  EXPECT_EQ((*grants)[1].code, ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ((*grants)[2].code, ErrorCode::INVALID_KEY);

  auto ended = node.PromoteEnd({{"", "on-ssd", true}, {"", "nope", true}});
  ASSERT_TRUE(ended.ok()) << ErrorCodeName(ended.error());
  EXPECT_EQ(*ended, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND}));
  auto list = writer.GetReplicaList("", "on-ssd");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->replicas.size(), 2u);
  bool memory = false;
  for (const auto& r : list->replicas) {
    if (r.type == ReplicaType::MEMORY) {
      memory = true;
      EXPECT_EQ(r.memory.buffer_address, (*grants)[0].buffer_address);
    }
  }
  EXPECT_TRUE(memory);
}

TEST_F(RpcServerTest, BatchesAnswerPerItemInOrder) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);

  std::vector<std::string> keys = {"b0", "b1", "", "b3", std::string(5000, 'x'), "b5"};
  std::vector<uint64_t> sizes = {100, 200, 100, 0, 100, 600};
  auto started = client.BatchPutStart("", keys, sizes, {});
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  ASSERT_EQ(started->size(), keys.size());
  EXPECT_TRUE((*started)[0].ok());
  EXPECT_TRUE((*started)[1].ok());
  EXPECT_EQ((*started)[2].error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ((*started)[3].error(), ErrorCode::INVALID_PARAMS);  // zero size
  EXPECT_EQ((*started)[4].error(), ErrorCode::INVALID_KEY);
  ASSERT_TRUE((*started)[5].ok());
  EXPECT_EQ((*(*started)[1])[0].memory.size, 200u);
  EXPECT_EQ((*(*started)[5])[0].memory.size, 600u);

  auto ended = client.BatchPutEnd("", {"b0", "missing", "b1"});
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(*ended, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND,
                                            ErrorCode::OK}));
  auto revoked = client.BatchPutRevoke("", {"b5", "b0"});
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ((*revoked)[0], ErrorCode::OK);
  EXPECT_NE((*revoked)[1], ErrorCode::OK);  // b0 is complete: nothing to revoke

  std::vector<std::string> mixed = {"missing-0", "b1", "b5", "b0", "missing-1", ""};
  auto lists = client.BatchGetReplicaList("", mixed);
  ASSERT_TRUE(lists.ok());
  ASSERT_EQ(lists->size(), mixed.size());
  EXPECT_EQ((*lists)[0].error(), ErrorCode::OBJECT_NOT_FOUND);
  ASSERT_TRUE((*lists)[1].ok());
  EXPECT_EQ((*lists)[1]->size, 200u);
  EXPECT_EQ((*lists)[2].error(), ErrorCode::OBJECT_NOT_FOUND);  // revoked
  ASSERT_TRUE((*lists)[3].ok());
  EXPECT_EQ((*lists)[3]->size, 100u);
  EXPECT_EQ((*lists)[4].error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ((*lists)[5].error(), ErrorCode::INVALID_KEY);

  auto exist = client.BatchExistKey("", mixed);
  ASSERT_TRUE(exist.ok());
  ASSERT_EQ(exist->size(), mixed.size());
  EXPECT_FALSE(*(*exist)[0]);
  EXPECT_TRUE(*(*exist)[1]);
  EXPECT_FALSE(*(*exist)[2]);
  EXPECT_TRUE(*(*exist)[3]);
  EXPECT_FALSE(*(*exist)[4]);
  EXPECT_EQ((*exist)[5].error(), ErrorCode::INVALID_KEY);

  auto removed = client.BatchRemove("", {"b1", "missing", "b0"}, /*force=*/true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND,
                                              ErrorCode::OK}));

  // Empty batches are fine.
  auto empty = client.BatchGetReplicaList("", {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST_F(RpcServerTest, BadInputGetsTypedErrors) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  EXPECT_EQ(client.PutStart("", "", 100, {}).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(client.PutStart("", std::string(5000, 'k'), 100, {}).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(client.GetReplicaList("", std::string(5000, 'k')).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(client.PutStart("", "zero", 0, {}).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.PutStart(std::string(300, 't'), "k", 10, {}).error(),
            ErrorCode::INVALID_PARAMS);
  PutConfig too_many;
  too_many.replica_num = 0;
  EXPECT_EQ(client.PutStart("", "k", 10, too_many).error(), ErrorCode::INVALID_PARAMS);

  // Mismatched batch lengths: the whole call fails.
  EXPECT_EQ(client.BatchPutStart("", {"a", "b"}, {1}, {}).error(), ErrorCode::INVALID_PARAMS);
  // Longer than max_batch.
  std::vector<std::string> huge(kMaxBatch + 1, "k");
  EXPECT_EQ(client.BatchGetReplicaList("", huge).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.BatchExistKey("", huge).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.BatchRemove("", huge).error(), ErrorCode::INVALID_PARAMS);
  huge.resize(kMaxBatch);
  EXPECT_TRUE(client.BatchExistKey("", huge).ok());

  Segment bad = MakeSegment("bad");
  bad.size = 0;
  EXPECT_EQ(client.MountSegment(bad), ErrorCode::INVALID_PARAMS);
  Segment big_rkey = MakeSegment("big-rkey", 0x80000000);
  big_rkey.rkey.assign(rpcconv::kMaxBlobBytes + 1, 'r');
  EXPECT_EQ(client.MountSegment(big_rkey), ErrorCode::INVALID_PARAMS);

  // Out-of-range enums, sent by a raw capnp client (MasterClient cannot).
  std::thread raw([this]() {
    capnp::EzRpcClient ez("127.0.0.1", port_);
    auto master = ez.getMain<wire::MasterService>();
    auto& ws = ez.getWaitScope();
    {
      auto req = master.putEndRequest();
      req.setKey("k");
      req.setType(static_cast<wire::ReplicaType>(7));
      EXPECT_EQ(rpcconv::CodeFromWire(req.send().wait(ws).getCode()), ErrorCode::INVALID_PARAMS);
    }
    {
      auto req = master.putStartRequest();
      req.setKey("k");
      req.setSize(10);
      req.initConfig().setDataType(static_cast<wire::DataType>(99));
      EXPECT_EQ(rpcconv::CodeFromWire(req.send().wait(ws).getCode()), ErrorCode::INVALID_PARAMS);
    }
    {
      auto req = master.batchPutStartRequest();
      req.initKeys(3);
      req.initSizes(2);
      auto reply = req.send().wait(ws);
      EXPECT_EQ(rpcconv::CodeFromWire(reply.getCode()), ErrorCode::INVALID_PARAMS);
      EXPECT_EQ(reply.getResults().size(), 0u);
    }
    {
      auto req = master.notifyOffloadSuccessRequest();
      req.initItems(static_cast<unsigned>(kMaxBatch + 1));
      EXPECT_EQ(rpcconv::CodeFromWire(req.send().wait(ws).getCode()), ErrorCode::INVALID_PARAMS);
    }
    // Schema-violating payloads: the capnp reader throws while the server
    // decodes; the answer is INVALID_PARAMS and the connection lives on.
    {
      auto req = master.existKeyRequest();
      wire::MasterService::ExistKeyParams::Builder params = req;
      capnp::AnyStruct::Builder any(kj::mv(params));
      any.getPointerSection()[1].initAs<wire::Uuid>();  // `key` holds a struct, not text
      EXPECT_EQ(rpcconv::CodeFromWire(req.send().wait(ws).getCode()), ErrorCode::INVALID_PARAMS);
    }
    {
      auto req = master.batchGetReplicaListRequest();
      wire::MasterService::BatchGetReplicaListParams::Builder params = req;
      capnp::AnyStruct::Builder any(kj::mv(params));
      any.getPointerSection()[1].initAs<capnp::List<uint64_t>>(3);  // not List(Text)
      auto reply = req.send().wait(ws);
      EXPECT_EQ(rpcconv::CodeFromWire(reply.getCode()), ErrorCode::INVALID_PARAMS);
      EXPECT_EQ(reply.getResults().size(), 0u);
    }
    {
      auto req = master.mountSegmentRequest();
      wire::MasterService::MountSegmentParams::Builder params = req;
      capnp::AnyStruct::Builder any(kj::mv(params));
      any.getPointerSection()[1].initAs<capnp::Text>(5);  // `segment` holds text
      EXPECT_EQ(rpcconv::CodeFromWire(req.send().wait(ws).getCode()), ErrorCode::INVALID_PARAMS);
    }
    {
      auto req = master.pingRequest();
      EXPECT_EQ(rpcconv::CodeFromWire(req.send().wait(ws).getCode()), ErrorCode::OK);
    }
  });
  raw.join();
  // The server is still fine.
  EXPECT_TRUE(client.Ping().ok());
}

TEST_F(RpcServerTest, GarbageAndAbortedClientsDoNotDisturbOthers) {
  {
    MasterClient setup(ClientOptions());
    ASSERT_EQ(setup.MountSegment(MakeSegment("seg")), ErrorCode::OK);
    Put(setup, "stable");
  }
  std::atomic<bool> stop{false};
  std::atomic<int> good_calls{0}, bad_calls{0};
  std::thread good([&]() {
    MasterClient client(ClientOptions());
    while (!stop.load()) {
      auto r = client.GetReplicaList("", "stable");
      auto e = client.BatchExistKey("", {"stable", "nope"});
      if (r.ok() && r->replicas.size() == 1 && e.ok() && *(*e)[0] && !*(*e)[1]) {
        ++good_calls;
      } else {
        ++bad_calls;
      }
    }
  });

  std::mt19937 rng(1234);
  // 1) Random garbage; the server drops the connection.
  for (int i = 0; i < 20; ++i) {
    int fd = ConnectRaw(port_);
    ASSERT_GE(fd, 0);
    std::vector<char> junk(1 + rng() % 4096);
    for (char& c : junk) c = static_cast<char>(rng());
    ASSERT_GT(::write(fd, junk.data(), junk.size()), 0);
    testing::WaitPeerClosed(fd, 200);
    ::close(fd);
  }
  // 2) A frame header announcing a huge message, then silence / close.
  {
    int fd = ConnectRaw(port_);
    ASSERT_GE(fd, 0);
    uint32_t header[2] = {0, 0x7fffffff};
    ASSERT_EQ(::write(fd, header, sizeof(header)), static_cast<ssize_t>(sizeof(header)));
    EXPECT_TRUE(testing::WaitPeerClosed(fd, 2000));  // rejected: too large
    ::close(fd);
  }
  // 3) Half a plausible message, then close (disconnect mid-message).
  {
    int fd = ConnectRaw(port_);
    ASSERT_GE(fd, 0);
    uint32_t header[2] = {0, 100};
    std::vector<char> half(8 + 400, 0);
    std::memcpy(half.data(), header, 8);
    ASSERT_GT(::write(fd, half.data(), half.size()), 0);
    ::close(fd);
  }
  // 4) A capnp client that sends calls and disconnects before the answers.
  for (int i = 0; i < 5; ++i) {
    std::thread aborted([this]() {
      capnp::EzRpcClient ez("127.0.0.1", port_);
      auto master = ez.getMain<wire::MasterService>();
      auto req = master.batchGetReplicaListRequest();
      auto keys = req.initKeys(2000);
      for (unsigned k = 0; k < keys.size(); ++k) keys.set(k, "stable");
      auto pending = req.send();
      auto ping = master.pingRequest().send();
      ez.getWaitScope().poll();  // flush the writes, then drop everything
    });
    aborted.join();
  }
  // 5) Connect and close immediately.
  for (int i = 0; i < 20; ++i) {
    int fd = ConnectRaw(port_);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }

  // The good client goes on being served after all that.
  const int after_abuse = good_calls.load();
  EXPECT_TRUE(testing::WaitFor([&] { return good_calls.load() >= after_abuse + 10; }, 60'000))
      << good_calls.load() << " good calls, " << bad_calls.load() << " bad";
  stop = true;
  good.join();
  EXPECT_EQ(bad_calls.load(), 0);

  MasterClient after(ClientOptions());
  EXPECT_TRUE(after.GetReplicaList("", "stable").ok());
}

TEST_F(RpcServerTest, ClientReconnectsAfterServerRestart) {
  MasterClientOptions options = ClientOptions();
  options.call_timeout_ms = 0;  // none: see below
  MasterClient client(options);
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  Put(client, "survivor");
  ASSERT_TRUE(client.GetReplicaList("", "survivor").ok());

  server_->Stop();
  server_->Stop();  // idempotent
  // The client has no call time-out, so each RPC_FAIL is the dropped and
  // refused connection itself (a client that waited for an answer instead
  // would hang here until ctest's time-out).
  EXPECT_EQ(client.GetReplicaList("", "survivor").error(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(client.PutEnd("", "survivor"), ErrorCode::RPC_FAIL);
  EXPECT_EQ(client.Ping().error(), ErrorCode::RPC_FAIL);

  server_ = MakeServer(port_);
  auto port = server_->Start();
  ASSERT_TRUE(port.ok()) << ErrorCodeName(port.error());
  EXPECT_EQ(*port, port_);

  auto again = client.GetReplicaList("", "survivor");
  ASSERT_TRUE(again.ok()) << ErrorCodeName(again.error());
  EXPECT_EQ(again->replicas.size(), 1u);

  // Restart while connected: the stale connection is noticed and replaced.
  server_->Stop();
  server_ = MakeServer(port_);
  ASSERT_TRUE(server_->Start().ok());
  EXPECT_TRUE(client.ExistKey("", "survivor").ok());
  EXPECT_EQ(client.Remove("", "survivor", true), ErrorCode::OK);
}

// A client whose thread did nothing for longer than its call time-out
// between its making and its first call (a node's disk reporter, made at
// start, first used at the first eviction) still waits up to the time-out
// for each answer: the call is served, not failed at once by a time-out
// counted from the clock of the thread's event loop when it last turned.
TEST_F(RpcServerTest, FirstCallAfterQuietLongerThanTheTimeoutIsServed) {
  {
    MasterClient owner(ClientOptions());
    ASSERT_EQ(owner.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  }
  MasterClientOptions options = ClientOptions();
  options.call_timeout_ms = 200;
  std::string failure;
  std::thread([&] {
    MasterClient client(options);  // the thread's event loop starts here
    // The quiet itself is what is tested: nothing to wait on but time.
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * options.call_timeout_ms));
    auto started = client.PutStart("", "after-quiet", 64, {});
    const ErrorCode ended = started.ok() ? client.PutEnd("", "after-quiet") : started.error();
    if (ended != ErrorCode::OK) failure = ErrorCodeName(ended);
  }).join();
  EXPECT_EQ(failure, "");
}

TEST_F(RpcServerTest, ConnectionsSpreadEvenlyOverLoops) {
  std::vector<std::unique_ptr<MasterClient>> clients;
  for (int i = 0; i < 9; ++i) {
    clients.push_back(std::make_unique<MasterClient>(ClientOptions()));
    ASSERT_EQ(clients.back()->Connect(), ErrorCode::OK);
    ASSERT_TRUE(clients.back()->Ping().ok());  // served, so accepted by a loop
  }
  std::vector<int> open = server_->OpenConnections();
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0] + open[1], 9);
  EXPECT_LE(std::abs(open[0] - open[1]), 1) << open[0] << " vs " << open[1];
  clients.clear();
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        open = server_->OpenConnections();
        return open[0] + open[1] == 0;
      },
      60'000))
      << "still open: " << open[0] << " + " << open[1];
}

TEST_F(RpcServerTest, StartFailsOnBadAddressOrBusyPort) {
  // A port held by a listener without SO_REUSEPORT.
  uint16_t held = 0;
  int fd = testing::ListenLoopback(1, &held);
  ASSERT_GE(fd, 0);
  auto busy = MakeServer(held);
  EXPECT_EQ(busy->Start().error(), ErrorCode::INVALID_PARAMS);
  ::close(fd);

  // A second server on the port of a running one must not share it.
  auto twin = MakeServer(port_);
  EXPECT_EQ(twin->Start().error(), ErrorCode::INVALID_PARAMS);

  RpcServerOptions options;
  options.bind_address = "not an address";
  options.port = 0;
  RpcServer bad(*dir_, nullptr, options);
  EXPECT_EQ(bad.Start().error(), ErrorCode::INVALID_PARAMS);
  bad.Stop();

  // Already started.
  EXPECT_EQ(server_->Start().error(), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);

  // A client pointed at a closed port fails promptly.
  MasterClientOptions copts = ClientOptions();
  copts.address = "127.0.0.1:1";
  MasterClient nowhere(copts);
  EXPECT_EQ(nowhere.Connect(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(nowhere.CountKeys("", true).error(), ErrorCode::RPC_FAIL);
}

TEST_F(RpcServerTest, ConcurrentClients) {
  {
    MasterClient setup(ClientOptions());
    ASSERT_EQ(setup.MountSegment(MakeSegment("seg", 0x10000000, 256 << 20)), ErrorCode::OK);
  }
  constexpr int kThreads = 4;
  constexpr int kOps = 150;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t]() {
      MasterClient client(ClientOptions());
      std::vector<std::string> mine;
      for (int i = 0; i < kOps; ++i) {
        std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
        if (!client.PutStart("", key, 256, {}).ok()) ++failures;
        if (client.PutEnd("", key) != ErrorCode::OK) ++failures;
        auto got = client.GetReplicaList("", key);
        if (!got.ok() || got->size != 256) ++failures;
        mine.push_back(key);
        if (i % 10 == 9) {
          auto batch = client.BatchGetReplicaList("", mine);
          if (!batch.ok() || batch->size() != mine.size()) {
            ++failures;
          } else {
            for (const auto& r : *batch) failures += r.ok() ? 0 : 1;
          }
        }
      }
      auto listed = client.ListKeys("", "t" + std::to_string(t) + "/", 1000);
      if (!listed.ok() || listed->size() != static_cast<size_t>(kOps)) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  MasterClient check(ClientOptions());
  EXPECT_EQ(*check.CountKeys("", false), static_cast<uint64_t>(kThreads * kOps));
}

TEST_F(RpcServerTest, MetricsCountRequestsAndFailures) {
  // Every method is registered up front.
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "EvictDiskReplica"), 0);
  EXPECT_EQ(Metric("shelfmark_master_rpc_failures_total", "BatchPutStart"), 0);
  EXPECT_EQ(Metric("shelfmark_master_rpc_latency_seconds_count", "NotifyOffloadSuccess"), 0);

  // Cap'n Proto alone: the framed channel cannot carry a batch whose sizes
  // do not match its keys (its client refuses it unsent); its calls are
  // counted under the same methods (lookup_channel_test,
  // mutation_channel_test).
  MasterClientOptions capnp_only = ClientOptions();
  capnp_only.lookup_channel = false;
  MasterClient client(capnp_only);
  ASSERT_TRUE(client.Ping().ok());
  ASSERT_TRUE(client.Ping().ok());
  EXPECT_EQ(client.GetReplicaList("", "missing").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client.BatchPutStart("", {"a"}, {}, {}).error(), ErrorCode::INVALID_PARAMS);

  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "Ping"), 2);
  EXPECT_EQ(Metric("shelfmark_master_rpc_failures_total", "Ping"), 0);
  EXPECT_EQ(Metric("shelfmark_master_rpc_latency_seconds_count", "Ping"), 2);
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "GetReplicaList"), 1);
  EXPECT_EQ(Metric("shelfmark_master_rpc_failures_total", "GetReplicaList"), 1);
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "BatchPutStart"), 1);
  EXPECT_EQ(Metric("shelfmark_master_rpc_failures_total", "BatchPutStart"), 1);
  EXPECT_GT(Metric("shelfmark_master_rpc_latency_seconds_sum", "Ping"), 0);
  EXPECT_LT(Metric("shelfmark_master_rpc_latency_seconds_sum", "Ping"), 1);  // seconds, not us
}

// Not a pass/fail benchmark: prints what loopback latency and batch
// throughput look like on this machine (see perf/ for the real numbers).
TEST_F(RpcServerTest, ReportsLatencyAndBatchThroughput) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg", 0x10000000, 1ull << 30)), ErrorCode::OK);
  std::vector<std::string> keys;
  for (int i = 0; i < 128; ++i) keys.push_back("perf/key-" + std::to_string(i));
  std::vector<uint64_t> sizes(keys.size(), 4096);
  auto started = client.BatchPutStart("", keys, sizes, {});
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(client.BatchPutEnd("", keys).ok());

  std::vector<double> us;
  for (int i = 0; i < 2000; ++i) {
    auto t0 = Clock::now();
    auto r = client.GetReplicaList("", keys[i % keys.size()]);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    ASSERT_TRUE(r.ok());
  }
  std::sort(us.begin(), us.end());
  const auto t0 = Clock::now();
  int batches = 0;
  while (ElapsedMs(t0) < 500) {
    auto r = client.BatchGetReplicaList("", keys);
    ASSERT_TRUE(r.ok());
    ++batches;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("GetReplicaList over loopback: p50 %.1f us, p99 %.1f us; "
              "BatchGetReplicaList(128), one client: %.0f keys/s\n",
              us[us.size() / 2], us[us.size() * 99 / 100], batches * 128 / secs);
}

}  // namespace
}  // namespace shelfmark
