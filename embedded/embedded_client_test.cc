// EmbeddedClient against the real master service in-process (RpcServer +
// Directory on 127.0.0.1:0, Cap'n Proto) and real UCX engines on
// 127.0.0.1: two embedded clients of one process, each hosting a segment.
#include "embedded/embedded_client.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/socket_io.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "master/rpc_server_test_util.h"
#include "rpc/master_client.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"
#include "transport/transport_test_util.h"

namespace shelfmark {
namespace {

class EmbeddedClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DirectoryOptions options;
    // Reads are timed on the client's real clock against this lease: far
    // longer than any read, so no test depends on speed.
    options.default_kv_lease_ttl_ms = 600'000;
    dir_ = MakeTestDirectory(&master_clock_, options);
    StartLoopbackMaster(*dir_, &server_, &address_);
  }

  void TearDown() override { server_->Stop(); }

  EmbeddedOptions Options(const std::string& segment_name, uint64_t segment_size = 16 << 20) {
    EmbeddedOptions o;
    o.master = address_;
    o.protocol = "ucx";
    o.cluster_token = "token";
    o.segment_size = segment_size;
    o.segment_name = segment_name;
    o.staging_bytes = 4 << 20;
    o.ping_interval_ms = 1000;
    return o;
  }

  std::unique_ptr<EmbeddedClient> Make(const EmbeddedOptions& options) {
    auto made = EmbeddedClient::Create(options);
    EXPECT_TRUE(made.ok()) << ErrorCodeName(made.error());
    return made.ok() ? std::move(made).value() : nullptr;
  }

  // The master's answer, bypassing every client's cache.
  Result<GetReplicaListResponse> AtMaster(const std::string& key) {
    MasterClientOptions mo;
    mo.address = address_;
    MasterClient master(mo);
    return master.GetReplicaList("t", key);
  }

  static uint64_t RmaOps(Client& client) {
    auto c = client.TransferCounters("ucx");
    return c ? c->reads_posted + c->writes_posted + c->local_reads + c->local_writes : 0;
  }

  ManualClock master_clock_;
  std::unique_ptr<Directory> dir_;
  std::unique_ptr<RpcServer> server_;
  std::string address_;
};

TEST_F(EmbeddedClientTest, TwoProcessesWorthOfSegmentsShareObjects) {
  auto a = Make(Options("emb-a"));
  auto b = Make(Options("emb-b"));
  ASSERT_TRUE(a && b);
  Client& ca = *a->client();
  Client& cb = *b->client();
  ASSERT_TRUE(a->segment().has_value());
  EXPECT_EQ(a->node_counters().mounts, 1u);

  // replica_num = 2: one replica in each process's segment.
  const std::string value = testing::TestPattern(300'000, 'a');
  PutOptions two;
  two.config.replica_num = 2;
  two.compute_checksum = true;
  ASSERT_EQ(ca.Put("t", "both", value, two), ErrorCode::OK);
  auto both = AtMaster("both");
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->replicas.size(), 2u);
  std::vector<UUID> segments = {both->replicas[0].memory.segment_id,
                                both->replicas[1].memory.segment_id};
  EXPECT_TRUE((segments[0] == a->segment()->id && segments[1] == b->segment()->id) ||
              (segments[0] == b->segment()->id && segments[1] == a->segment()->id));
  // Each process reads its own replica by memcpy.
  for (Client* c : {&ca, &cb}) {
    const uint64_t copies = c->local_stats().copies, rma = RmaOps(*c);
    auto got = c->Get("t", "both");
    ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
    EXPECT_EQ(*got, value);
    EXPECT_EQ(c->local_stats().copies, copies + 1);
    EXPECT_EQ(RmaOps(*c), rma);
  }

  // An object in b's segment only is read by a over UCX, by b with memcpy.
  PutOptions on_b;
  on_b.config.preferred_segments = {"emb-b"};
  ASSERT_EQ(ca.Put("t", "on-b", "bytes in b", on_b), ErrorCode::OK);
  const uint64_t a_copies = ca.local_stats().copies, a_rma = RmaOps(ca);
  EXPECT_EQ(*ca.Get("t", "on-b"), "bytes in b");
  EXPECT_EQ(ca.local_stats().copies, a_copies);
  EXPECT_GT(RmaOps(ca), a_rma);
  const uint64_t b_copies = cb.local_stats().copies, b_rma = RmaOps(cb);
  EXPECT_EQ(*cb.Get("t", "on-b"), "bytes in b");
  EXPECT_EQ(cb.local_stats().copies, b_copies + 1);
  EXPECT_EQ(RmaOps(cb), b_rma);

  // b closes: the master drops b's replicas (and the object b alone held);
  // the other replica still serves the object.
  EXPECT_EQ(b->Close(), ErrorCode::OK);
  EXPECT_EQ(b->client(), nullptr);
  auto after = AtMaster("both");
  ASSERT_TRUE(after.ok()) << ErrorCodeName(after.error());
  ASSERT_EQ(after->replicas.size(), 1u);
  EXPECT_EQ(after->replicas[0].memory.segment_id, a->segment()->id);
  EXPECT_EQ(AtMaster("on-b").error(), ErrorCode::OBJECT_NOT_FOUND);
  GetOptions fresh;
  fresh.use_location_cache = false;
  auto got = ca.Get("t", "both", fresh);
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
}

// Segments added after Create share the hosted segment's engine (endpoint)
// and client id: each has its own id and memory, and none of the mounts
// supersedes a sibling (docs/directory.md, MountSegment).
TEST_F(EmbeddedClientTest, AddedSegmentsLiveBesideTheHostedOne) {
  auto e = Make(Options("emb-sib", 4 << 20));
  ASSERT_TRUE(e);
  Client& c = *e->client();
  ASSERT_EQ(c.Put("t", "in-hosted", "hosted bytes"), ErrorCode::OK);
  auto first = e->MountSegment(4 << 20, "ucx");
  auto second = e->MountSegment(4 << 20, "ucx");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->id, second->id);
  EXPECT_NE(first->id, e->segment()->id);
  EXPECT_EQ(first->name, first->id.ToString());  // named by its id
  EXPECT_EQ(first->endpoint, e->segment()->endpoint);
  EXPECT_NE(first->base, second->base);
  EXPECT_EQ(dir_->Stats().segment_count, 3u);
  EXPECT_EQ(dir_->Stats().superseded_segments, 0u);
  EXPECT_EQ(e->added_segments().size(), 2u);

  PutOptions into_second;
  into_second.config.preferred_segments = {second->name};
  ASSERT_EQ(c.Put("t", "in-second", "second's bytes", into_second), ErrorCode::OK);
  auto at = AtMaster("in-second");
  ASSERT_TRUE(at.ok());
  ASSERT_EQ(at->replicas.size(), 1u);
  EXPECT_EQ(at->replicas[0].memory.segment_id, second->id);
  EXPECT_TRUE(AtMaster("in-hosted").ok());
  // Read by memcpy: the added segment is attached to the client.
  const uint64_t copies = c.local_stats().copies;
  EXPECT_EQ(*c.Get("t", "in-second"), "second's bytes");
  EXPECT_EQ(c.local_stats().copies, copies + 1);
  // And by another client over UCX.
  auto other = Make(Options("", 0));
  ASSERT_TRUE(other);
  EXPECT_EQ(*other->client()->Get("t", "in-second"), "second's bytes");

  // Refused, nothing unmounted: an unknown id, the hosted segment's id, a
  // duplicate; size 0; an engine the client lacks.
  EXPECT_EQ(e->UnmountSegments({UUID::Generate()}), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(e->UnmountSegments({e->segment()->id}), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(e->UnmountSegments({second->id, second->id}), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(e->MountSegment(0, "ucx").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(e->MountSegment(1 << 20, "rdma").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->Stats().segment_count, 3u);

  // Unmounting the second drops its object only; twice is refused.
  EXPECT_EQ(e->UnmountSegments({second->id}), ErrorCode::OK);
  EXPECT_EQ(AtMaster("in-second").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(AtMaster("in-hosted").ok());
  EXPECT_EQ(e->UnmountSegments({second->id}), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->Stats().segment_count, 2u);
  // Close unmounts the rest.
  EXPECT_EQ(e->Close(), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().segment_count, 0u);
  EXPECT_EQ(dir_->Stats().superseded_segments, 0u);
}

// A graceful unmount: the call returns with the segment draining at the
// master (listed so; no new replicas; its objects read here and by another
// client) and leaves it mounted until the grace period ends, here by Close.
TEST_F(EmbeddedClientTest, AGracefulUnmountDrainsUntilClose) {
  auto e = Make(Options("emb-grace-close", 4 << 20));
  ASSERT_TRUE(e);
  Client& c = *e->client();
  auto added = e->MountSegment(4 << 20, "ucx");
  ASSERT_TRUE(added.ok());
  PutOptions there;
  there.config.preferred_segments = {added->name};
  ASSERT_EQ(c.Put("t", "old", "old bytes", there), ErrorCode::OK);
  ASSERT_EQ(AtMaster("old")->replicas[0].memory.segment_id, added->id);

  EXPECT_EQ(e->UnmountSegments({added->id}, false, /*grace_ms=*/-1), ErrorCode::INVALID_PARAMS);
  ASSERT_EQ(e->UnmountSegments({added->id}, false, /*grace_ms=*/3'600'000), ErrorCode::OK);
  EXPECT_TRUE(e->draining());
  EXPECT_TRUE(e->added_segments().empty());
  EXPECT_EQ(e->UnmountSegments({added->id}, false, 1), ErrorCode::INVALID_PARAMS);
  bool listed_draining = false;
  for (const SegmentState& s : dir_->ExportSegmentTable().segments) {
    if (s.segment.id == added->id) listed_draining = s.draining;
  }
  EXPECT_TRUE(listed_draining);
  ASSERT_EQ(c.Put("t", "new", "new bytes", there), ErrorCode::OK);
  EXPECT_EQ(AtMaster("new")->replicas[0].memory.segment_id, e->segment()->id);
  EXPECT_EQ(*c.Get("t", "old"), "old bytes");
  auto other = Make(Options("", 0));
  ASSERT_TRUE(other);
  EXPECT_EQ(*other->client()->Get("t", "old"), "old bytes");

  EXPECT_EQ(e->Close(), ErrorCode::OK);  // unmounts it now, not in an hour
  EXPECT_FALSE(e->draining());
  EXPECT_EQ(AtMaster("old").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->Stats().segment_count, 0u);
}

TEST_F(EmbeddedClientTest, AGracefulUnmountEndsAfterTheGracePeriod) {
  auto e = Make(Options("emb-grace", 4 << 20));
  ASSERT_TRUE(e);
  auto added = e->MountSegment(4 << 20, "ucx");
  ASSERT_TRUE(added.ok());
  PutOptions there;
  there.config.preferred_segments = {added->name};
  ASSERT_EQ(e->client()->Put("t", "old", "old bytes", there), ErrorCode::OK);
  ASSERT_EQ(e->UnmountSegments({added->id}, false, /*grace_ms=*/1'000), ErrorCode::OK);
  EXPECT_TRUE(testing::WaitFor([&] { return !e->draining(); }, 60'000));
  EXPECT_EQ(AtMaster("old").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->Stats().segment_count, 1u);
}

// Many graceful unmounts in a row, short graces queued behind an hour-long
// one: one thread serves them all (a long-lived client does not keep a
// thread per call), each ends at its own deadline, and Close ends the hour.
TEST_F(EmbeddedClientTest, GracefulUnmountsShareOneThread) {
  auto e = Make(Options("emb-graces", 4 << 20));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->grace_threads(), 0u);
  auto hour = e->MountSegment(1 << 20, "ucx");
  ASSERT_TRUE(hour.ok()) << ErrorCodeName(hour.error());
  ASSERT_EQ(e->UnmountSegments({hour->id}, false, /*grace_ms=*/3'600'000), ErrorCode::OK);
  constexpr int kUnmounts = 16;
  for (int i = 0; i < kUnmounts; ++i) {
    auto added = e->MountSegment(1 << 20, "ucx");
    ASSERT_TRUE(added.ok()) << ErrorCodeName(added.error());
    ASSERT_EQ(e->UnmountSegments({added->id}, false, /*grace_ms=*/1 + i % 3), ErrorCode::OK);
    EXPECT_EQ(e->grace_threads(), 1u);
  }
  // The hosted segment and the hour-long grace's are left.
  EXPECT_TRUE(testing::WaitFor([&] { return dir_->Stats().segment_count == 2; }, 60'000));
  EXPECT_TRUE(e->draining());
  EXPECT_EQ(e->grace_threads(), 1u);
  EXPECT_EQ(e->Close(), ErrorCode::OK);
  EXPECT_FALSE(e->draining());
  EXPECT_EQ(e->grace_threads(), 0u);
  EXPECT_EQ(dir_->Stats().segment_count, 0u);
}

// Without a hosted segment the engines listen only when asked (`listen`):
// a segment added to a client that does not listen could not be reached.
TEST_F(EmbeddedClientTest, AddedSegmentsNeedAListeningEngine) {
  auto quiet = Make(Options("", 0));
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->MountSegment(1 << 20, "ucx").error(), ErrorCode::INVALID_PARAMS);
  EmbeddedOptions options = Options("", 0);
  options.listen = true;
  auto listening = Make(options);
  ASSERT_TRUE(listening);
  auto added = listening->MountSegment(1 << 20, "ucx");
  ASSERT_TRUE(added.ok()) << ErrorCodeName(added.error());
  PutOptions there;
  there.config.preferred_segments = {added->name};
  ASSERT_EQ(listening->client()->Put("t", "k", "v", there), ErrorCode::OK);
  EXPECT_EQ(AtMaster("k")->replicas[0].memory.segment_id, added->id);
}

// The master forgets the client (its TTL passed: every segment of it goes).
// The first node to see NEED_REMOUNT makes the id known again, so the other
// segments' pings would answer OK: each must be told to remount too.
TEST_F(EmbeddedClientTest, EverySegmentRemountsWhenTheMasterForgetsTheClient) {
  auto e = Make(Options("emb-forgotten", 4 << 20));
  ASSERT_TRUE(e);
  auto added = e->MountSegment(4 << 20, "ucx");
  ASSERT_TRUE(added.ok());
  ASSERT_EQ(dir_->Stats().segment_count, 2u);
  master_clock_.AdvanceMs(dir_->options().client_ttl_ms + 1);
  dir_->RunBackgroundOnce();  // expires the client with both segments
  EXPECT_TRUE(testing::WaitFor(
      [&] { return e->node_counters().mounts >= 2 && dir_->Stats().segment_count == 2; },
      60'000))
      << "mounts " << e->node_counters().mounts << ", segments "
      << dir_->Stats().segment_count;
  PutOptions there;
  there.config.preferred_segments = {added->name};
  ASSERT_EQ(e->client()->Put("t", "after", "remounted", there), ErrorCode::OK);
  EXPECT_EQ(AtMaster("after")->replicas[0].memory.segment_id, added->id);
}

// A segment over the caller's file: objects put there are bytes of the file,
// from the offset on; it is unmounted only as a file segment.
TEST_F(EmbeddedClientTest, AFileSegmentServesTheCallersBytes) {
  testing::TempDir dir("emb-file");
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  UniqueFd fd(open(dir.Join("seg").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(ftruncate(fd.get(), static_cast<off_t>(page + (2 << 20))), 0);
  EmbeddedOptions options = Options("", 0);
  options.listen = true;
  auto e = Make(options);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->MountFileSegment(fd.get(), page + 1, 1 << 20, "ucx").error(),
            ErrorCode::INVALID_PARAMS);  // not page-aligned: mmap refuses
  auto added = e->MountFileSegment(fd.get(), page, 2 << 20, "ucx");
  ASSERT_TRUE(added.ok()) << ErrorCodeName(added.error());
  fd.Reset();  // the mapping keeps the file
  PutOptions there;
  there.config.preferred_segments = {added->name};
  const std::string value = testing::TestPattern(5000, 'f');
  ASSERT_EQ(e->client()->Put("t", "in-file", value, there), ErrorCode::OK);
  auto at = AtMaster("in-file");
  ASSERT_TRUE(at.ok());
  const uint64_t offset = at->replicas[0].memory.buffer_address - added->base;
  std::string stored(value.size(), '\0');
  UniqueFd again(open(dir.Join("seg").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(pread(again.get(), stored.data(), stored.size(), static_cast<off_t>(page + offset)),
            static_cast<ssize_t>(stored.size()));
  EXPECT_EQ(stored, value);
  EXPECT_EQ(e->UnmountSegments({added->id}), ErrorCode::INVALID_PARAMS);  // not allocated memory
  EXPECT_EQ(e->UnmountSegments({added->id}, /*file_backed=*/true), ErrorCode::OK);
  EXPECT_EQ(AtMaster("in-file").error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(EmbeddedClientTest, WithoutStagingOnlyRegisteredBuffersArePut) {
  EmbeddedOptions options = Options("emb-nostage");
  options.staging_bytes = 0;
  auto e = Make(options);
  ASSERT_TRUE(e);
  Client& c = *e->client();
  EXPECT_EQ(c.Put("t", "k", "staged"), ErrorCode::INVALID_PARAMS);
  std::vector<char> buffer(1 << 16);
  ASSERT_EQ(c.RegisterBuffer(buffer.data(), buffer.size()), ErrorCode::OK);
  std::memcpy(buffer.data(), "registered", 10);
  ASSERT_EQ(c.PutFrom("t", "k", buffer.data(), 10), ErrorCode::OK);
  auto got = c.GetInto("t", "k", buffer.data() + 100, 100);
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(std::string(buffer.data() + 100, *got), "registered");
  EXPECT_EQ(c.local_stats().copies, 2u);  // the put and the get, in its own segment
  c.UnregisterBuffer(buffer.data());
}

TEST_F(EmbeddedClientTest, CloseThenCreateAgain) {
  auto first = Make(Options("emb-again"));
  ASSERT_TRUE(first);
  ASSERT_EQ(first->client()->Put("t", "gone", "with the segment"), ErrorCode::OK);
  EXPECT_EQ(first->Close(), ErrorCode::OK);
  EXPECT_EQ(first->Close(), ErrorCode::OK);  // closing twice is harmless
  EXPECT_FALSE(first->segment().has_value());
  EXPECT_EQ(AtMaster("gone").error(), ErrorCode::OBJECT_NOT_FOUND);
  auto second = Make(Options("emb-again"));  // the same segment name is free again
  ASSERT_TRUE(second);
  ASSERT_EQ(second->client()->Put("t", "back", "again"), ErrorCode::OK);
  EXPECT_EQ(*second->client()->Get("t", "back"), "again");
}

TEST_F(EmbeddedClientTest, WithoutASegmentItIsAPlainClient) {
  auto host = Make(Options("emb-host"));
  auto plain = Make(Options("", /*segment_size=*/0));
  ASSERT_TRUE(host && plain);
  EXPECT_FALSE(plain->segment().has_value());
  ASSERT_EQ(plain->client()->Put("t", "k", "value"), ErrorCode::OK);
  EXPECT_EQ(*plain->client()->Get("t", "k"), "value");
  EXPECT_EQ(plain->client()->local_stats().copies, 0u);
}

TEST_F(EmbeddedClientTest, BadOptionsAndAnUnreachableMaster) {
  EmbeddedOptions options = Options("emb-bad");
  options.protocol = "loopback";  // a segment needs ucx or rdma
  EXPECT_EQ(EmbeddedClient::Create(options).error(), ErrorCode::INVALID_PARAMS);
  options = Options("emb-bad");
  options.master = "no-port";
  EXPECT_EQ(EmbeddedClient::Create(options).error(), ErrorCode::INVALID_PARAMS);
  options = Options("emb-bad");
  server_->Stop();
  options.mount_timeout_ms = 200;
  EXPECT_EQ(EmbeddedClient::Create(options).error(), ErrorCode::RPC_FAIL);
}

}  // namespace
}  // namespace shelfmark
