// The master's RPC port hands hot standbys' connections (the replication
// tag) to replication: a real ReplicationStandby copies the directory
// through the port while Cap'n Proto and lookup channel clients are served
// beside it; mutations are answered once it holds them, a put's start
// included (its client writes into the ranges). (MasterClient sends its
// puts and removes on the framed channel: these waits are the channel's,
// master/lookup_session.h, "Replication".)
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <thread>

#include "master/rpc_server_test_util.h"
#include "replication/replication_leader.h"
#include "replication/replication_standby.h"
#include "rpc/lookup_client.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

class StandbyHandoverTest : public RpcServerFixture {
 protected:
  void Configure(RpcServerOptions& options) override {
    ReplicationLeaderOptions o;
    o.cluster_id = "c1";
    leader_ = std::make_unique<ReplicationLeader>(*dir_, o);
    leader_->Start();
    options.on_standby = [this](int fd, std::string first, auto handshake_done) {
      leader_->Adopt(fd, std::move(first), std::move(handshake_done));
    };
    options.replication = leader_.get();
  }
  void TearDown() override {
    RpcServerFixture::TearDown();
    leader_->Stop();
  }
  std::unique_ptr<ReplicationLeader> leader_;
};

TEST_F(StandbyHandoverTest, AStandbyCopiesThroughTheRpcPort) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("seg")), ErrorCode::OK);
  Put(client, "k1");
  ReplicationStandby standby(ReplicationStandbyOptions{"c1", "", 5000, {}, ""});
  standby.Start();
  standby.Follow("127.0.0.1:" + std::to_string(port_));
  ASSERT_TRUE(testing::WaitFor([&] { return standby.stats().synced; }, 10'000));
  Put(client, "k2");
  const uint64_t seq = dir_->ChangeSeq();
  ASSERT_TRUE(testing::WaitFor([&] { return standby.stats().applied_seq >= seq; }, 10'000));
  size_t objects = 0;
  standby.WithState([&](const StandbyState& s) { objects = s.object_count(); });
  EXPECT_EQ(objects, 2u);
  // Both other protocols still answer on the same port.
  EXPECT_TRUE(client.ExistKey("", "k2").ok());
  LookupClient lookups({"127.0.0.1:" + std::to_string(port_), "", 5000});
  EXPECT_TRUE(lookups.GetReplicaList("", "k1").ok());
  standby.Stop();
}

// Holds the standby's state lock, so it applies (and acknowledges) nothing
// until the object goes.
class HeldStandby {
 public:
  explicit HeldStandby(ReplicationStandby& standby) {
    std::promise<void> held;
    auto holding = held.get_future();
    thread_ = std::thread([&standby, &held, release = release_.get_future()]() mutable {
      standby.WithState([&](const StandbyState&) {
        held.set_value();
        release.wait();
      });
    });
    holding.wait();
  }
  ~HeldStandby() {
    release_.set_value();
    thread_.join();
  }

 private:
  std::promise<void> release_;
  std::thread thread_;
};

TEST_F(StandbyHandoverTest, APutStartIsAnsweredOnceTheStandbyHoldsItsRanges) {
  MasterClient client(ClientOptions());
  constexpr uint64_t kObject = 1 << 20;
  ASSERT_EQ(client.MountSegment(MakeSegment("seg", 0x10000000, 2 * kObject)), ErrorCode::OK);
  ReplicationStandby standby(ReplicationStandbyOptions{"c1", "", 5000, {}, ""});
  standby.Start();
  standby.Follow("127.0.0.1:" + std::to_string(port_));
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync == 1; }, 10'000));
  Put(client, "k1", kObject);  // answered once the standby holds it
  EXPECT_GE(leader_->stats().acked_seq, dir_->ChangeSeq());

  // The standby acknowledges nothing while held; it is released once the
  // directory shows the start made (its change counted). (std::async:
  // joined on any exit.)
  auto held = std::make_unique<HeldStandby>(standby);
  const uint64_t before = dir_->ChangeSeq();
  auto released = std::async(std::launch::async, [&] {
    const bool started = testing::WaitFor([&] { return dir_->ChangeSeq() > before; }, 10'000);
    held.reset();
    return started;
  });
  auto started = client.PutStart("", "k2", kObject, {});
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  EXPECT_GT(leader_->stats().acked_seq, before) << "answered only once the standby held it";
  EXPECT_TRUE(released.get());
  // The standby's copy holds the unfinished put, and so its range (applied
  // right after the acknowledgement).
  const uint64_t seq = dir_->ChangeSeq();
  ASSERT_TRUE(testing::WaitFor([&] { return standby.stats().applied_seq >= seq; }, 10'000));
  standby.WithState([&](const StandbyState& s) {
    EXPECT_EQ(s.object_count(), 2u);
    ASSERT_EQ(s.SegmentsForRestore().segments.size(), 1u);
    EXPECT_TRUE(s.SegmentsForRestore().segments[0].free_extents.empty());
  });
  ASSERT_EQ(client.PutEnd("", "k2"), ErrorCode::OK);
  EXPECT_GE(leader_->stats().acked_seq, dir_->ChangeSeq()) << "an end waits for the standby";
  standby.Stop();
}

}  // namespace
}  // namespace shelfmark
