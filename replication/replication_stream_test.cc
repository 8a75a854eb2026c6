// ReplicationLeader and ReplicationStandby over real loopback TCP: the
// standby copies the leader's directory and follows its changes, mutations
// wait for the standby's acknowledgement, tokens and cluster ids are
// checked, and a standby that goes away releases the leader's waiters.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "auth/token_table.h"
#include "common/mutex.h"
#include "common/socket_io.h"
#include "directory/directory_test_util.h"
#include "replication/replication_leader.h"
#include "replication/replication_standby.h"
#include "replication/replication_wire.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

// Accepts connections on a loopback port and hands them to the leader (what
// the master's RPC server does for connections that start with the tag).
class Acceptor {
 public:
  explicit Acceptor(ReplicationLeader* leader) : leader_(leader) {
    fd_ = testing::ListenLoopback(8, &port_);
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) return;
        leader_->Adopt(c, "");
      }
    });
  }
  ~Acceptor() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    CloseFd(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  ReplicationLeader* leader_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

class ReplicationStreamTest : public DirectoryFixture {
 protected:
  void StartLeader(auth::TokenTable tokens = {},
                   std::function<bool(const std::vector<std::string>&)> publish = {},
                   const std::function<void(ReplicationLeaderOptions&)>& tune = {}) {
    ReplicationLeaderOptions o;
    o.cluster_id = "c1";
    o.tokens = std::move(tokens);
    o.publish_in_sync = std::move(publish);
    o.io_timeout_ms = 2000;
    if (tune) tune(o);
    leader_ = std::make_unique<ReplicationLeader>(*dir_, o);
    leader_->Start();
    acceptor_ = std::make_unique<Acceptor>(leader_.get());
  }
  std::unique_ptr<ReplicationStandby> StartStandby(const std::string& token = "",
                                                   const std::string& cluster = "c1",
                                                   const std::string& id = "") {
    auto s = std::make_unique<ReplicationStandby>(ReplicationStandbyOptions{
        cluster, token, 2000, [this](const std::string& address) {
          MutexLock lock(&gone_mu_);
          gone_.push_back(address);
        },
        id});
    s->Start();
    s->Follow(acceptor_->address());
    return s;
  }
  size_t StandbyObjects(const ReplicationStandby& s) {
    size_t n = 0;
    s.WithState([&](const StandbyState& st) { n = st.object_count(); });
    return n;
  }
  void TearDown() override {
    acceptor_.reset();
    if (leader_) leader_->Stop();
  }

  std::vector<std::string> Gone() {
    MutexLock lock(&gone_mu_);
    return gone_;
  }

  std::unique_ptr<ReplicationLeader> leader_;
  std::unique_ptr<Acceptor> acceptor_;
  Mutex gone_mu_;
  std::vector<std::string> gone_ GUARDED_BY(gone_mu_);  // on_leader_gone's addresses
};

TEST_F(ReplicationStreamTest, StandbyCopiesThenFollowsAndMutationsWaitForIt) {
  const UUID node = UUID::Generate();
  Mount(node, "a", 8 << 20);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(Put("before" + std::to_string(i)), ErrorCode::OK);
  StartLeader();
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return standby->stats().synced; }, 10'000));
  EXPECT_EQ(StandbyObjects(*standby), 100u);
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync == 1; }, 10'000));
  // Its watch connection is held too, and counted apart.
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().watchers == 1; }, 10'000));
  EXPECT_EQ(leader_->stats().standbys, 1u);

  // A mutation's caller waits until the standby holds it.
  ASSERT_EQ(Put("after"), ErrorCode::OK);
  std::atomic<bool> released{false};
  const uint64_t seq = dir_->ChangeSeq();
  if (!leader_->WhenReplicated(seq, [&] { released = true; })) {
    ASSERT_TRUE(testing::WaitFor([&] { return released.load(); }, 10'000));
  }
  bool has_after = false;
  standby->WithState([&](const StandbyState& st) {
    has_after = st.seq() >= seq && st.object_count() == 101;
  });
  EXPECT_TRUE(has_after);
  EXPECT_GE(leader_->stats().acked_seq, seq);

  // The standby's copy loads into a directory that serves the objects.
  standby->Stop();
  ManualClock clock2;
  auto promoted = MakeTestDirectory(&clock2);
  ErrorCode loaded = ErrorCode::INTERNAL_ERROR;
  standby->WithState([&](const StandbyState& st) { loaded = st.LoadInto(*promoted); });
  ASSERT_EQ(loaded, ErrorCode::OK);
  EXPECT_TRUE(promoted->GetReplicaList("", "after").ok());
  EXPECT_EQ(promoted->CountKeys("", true), 101u);
}

TEST_F(ReplicationStreamTest, AStandbyThatGoesAwayReleasesWaiters) {
  Mount(UUID::Generate(), "a");
  StartLeader();
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync == 1; }, 10'000));
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync_ids.size() == 1; },
                               10'000));  // published: every acknowledgement waits for it
  standby->Stop();  // its acknowledgements stop
  // Once the in-sync set without it is published, nothing waits for it.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const ReplicationLeaderStats st = leader_->stats();
        return st.in_sync == 0 && st.in_sync_ids.empty();
      },
      10'000));
  ASSERT_EQ(Put("alone"), ErrorCode::OK);
  // No standby in sync: nothing to wait for.
  EXPECT_TRUE(leader_->WhenReplicated(dir_->ChangeSeq(), [] {}));
  EXPECT_TRUE(leader_->Replicated(dir_->ChangeSeq()));
  // A stopped leader (a lost term) counts nothing as replicated: what its
  // Stop released is answered NOT_LEADER.
  leader_->Stop();
  EXPECT_FALSE(leader_->Replicated(0));
}

// The leader closing the stream while its address still listens (it
// dropped this standby, or stopped shipping) is no sign of death: the
// standby reconnects, and nobody is told the leader is gone.
TEST_F(ReplicationStreamTest, AClosedStreamWhileTheAddressListensIsNoLeaderGone) {
  Mount(UUID::Generate(), "a");
  StartLeader();
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return standby->stats().synced; }, 10'000));
  leader_->Stop();  // closes the stream; the acceptor keeps listening
  // Each reconnect is adopted by the stopped leader and closed again.
  ASSERT_TRUE(testing::WaitFor([&] { return standby->stats().failures >= 3; }, 10'000));
  EXPECT_TRUE(Gone().empty());
  standby->Stop();
}

// Closed in order, then refused: the leader's process is gone.
TEST_F(ReplicationStreamTest, AClosedStreamThenARefusedAddressIsLeaderGone) {
  Mount(UUID::Generate(), "a");
  StartLeader();
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return standby->stats().synced; }, 10'000));
  // Its watch connection is what ends with the FIN (it connects apart).
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().watchers == 1; }, 10'000));
  const std::string address = acceptor_->address();
  acceptor_.reset();  // nothing listens there any more
  leader_->Stop();    // the stream ends with a FIN
  ASSERT_TRUE(testing::WaitFor([&] { return !Gone().empty(); }, 10'000));
  EXPECT_EQ(Gone(), std::vector<std::string>{address}) << "once per loss";
  EXPECT_TRUE(standby->has_state()) << "the copy stays: it may take over";
  standby->Stop();
  EXPECT_EQ(Gone().size(), 1u);
}

TEST_F(ReplicationStreamTest, TokensAndClusterIdsAreChecked) {
  std::string error;
  auto tokens = auth::TokenTable::Parse(
      "admin admin-token-0123456789\nclient client-token-0123456789\n", &error);
  ASSERT_TRUE(tokens.ok()) << error;
  StartLeader(*tokens);
  auto wrong = StartStandby("wrong-token");
  auto client_role = StartStandby("client-token-0123456789");
  auto other_cluster = StartStandby("admin-token-0123456789", "c2");
  auto right = StartStandby("admin-token-0123456789");
  ASSERT_TRUE(testing::WaitFor([&] { return right->stats().synced; }, 10'000));
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return wrong->stats().failures > 0 && client_role->stats().failures > 0 &&
               other_cluster->stats().failures > 0;
      },
      10'000));
  EXPECT_FALSE(wrong->has_state());
  EXPECT_FALSE(client_role->has_state());
  EXPECT_FALSE(other_cluster->has_state());
  EXPECT_EQ(leader_->stats().in_sync, 1u);
}

TEST_F(ReplicationStreamTest, GarbageOnTheStreamDropsOnlyThatConnection) {
  Mount(UUID::Generate(), "a");
  StartLeader();
  auto good = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return good->stats().synced; }, 10'000));
  // A connection that sends a tag then garbage, and one that sends a huge frame.
  for (const std::string& junk :
       {std::string("SMRP\x05\0\0\0garbage", 15), std::string("SMRP\xff\xff\xff\xff", 8)}) {
    int fd = testing::ConnectLoopback(static_cast<uint16_t>(
        std::stoi(acceptor_->address().substr(acceptor_->address().rfind(':') + 1))));
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, junk, 2000));
    EXPECT_TRUE(testing::WaitPeerClosed(fd, 10'000));
    CloseFd(fd);
  }
  ASSERT_EQ(Put("still"), ErrorCode::OK);
  const uint64_t seq = dir_->ChangeSeq();
  ASSERT_TRUE(testing::WaitFor([&] { return good->stats().applied_seq >= seq; }, 10'000));
  EXPECT_EQ(leader_->stats().in_sync, 1u);
}

// The in-sync set: a synced standby is published once it holds all that was
// acknowledged; one that goes stays waited for until the set without it is
// published (so no acknowledgement ever counts on a standby the published
// set does not name, nor leaves out one it names).
TEST_F(ReplicationStreamTest, TheInSyncSetIsPublishedBeforeItCounts) {
  Mount(UUID::Generate(), "a");
  Mutex mu;
  std::vector<std::vector<std::string>> published;
  std::atomic<bool> publish_ok{true};
  std::atomic<int> attempts{0};
  StartLeader({}, [&](const std::vector<std::string>& ids) {
    ++attempts;
    if (!publish_ok) return false;
    MutexLock lock(&mu);
    published.push_back(ids);
    return true;
  });
  auto standby = StartStandby("", "c1", "10.0.0.2:1");
  ASSERT_TRUE(testing::WaitFor(
      [&] { return leader_->stats().in_sync_ids == std::vector<std::string>{"10.0.0.2:1"}; },
      10'000));
  {
    MutexLock lock(&mu);
    EXPECT_EQ(published.back(), std::vector<std::string>{"10.0.0.2:1"});
  }
  ASSERT_EQ(Put("held"), ErrorCode::OK);
  std::atomic<bool> released{false};
  if (!leader_->WhenReplicated(dir_->ChangeSeq(), [&] { released = true; })) {
    ASSERT_TRUE(testing::WaitFor([&] { return released.load(); }, 10'000));
  }

  // The standby goes while the set cannot be published: it stays waited for.
  publish_ok = false;
  standby->Stop();
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync == 0; }, 10'000));
  ASSERT_EQ(Put("waits"), ErrorCode::OK);
  released = false;
  ASSERT_FALSE(leader_->WhenReplicated(dir_->ChangeSeq(), [&] { released = true; }));
  const int tried = attempts.load();
  ASSERT_TRUE(testing::WaitFor([&] { return attempts.load() >= tried + 3; }, 10'000));
  EXPECT_FALSE(released.load()) << "released while the set still names the standby";
  EXPECT_EQ(leader_->stats().in_sync_ids, std::vector<std::string>{"10.0.0.2:1"});
  // Published without it: the waiter goes (acknowledged alone).
  publish_ok = true;
  ASSERT_TRUE(testing::WaitFor([&] { return released.load(); }, 10'000));
  EXPECT_TRUE(leader_->stats().in_sync_ids.empty());
  MutexLock lock(&mu);
  EXPECT_TRUE(published.back().empty());
}

// Once a standby acknowledged everything, nothing is outstanding: an idle
// stream never looks stalled (its acknowledgement can arrive before the
// shipper notes the batch as sent; that once left a healthy standby to be
// dropped after io_timeout of quiet).
TEST_F(ReplicationStreamTest, AnAcknowledgedStreamHasNothingOutstanding) {
  Mount(UUID::Generate(), "a", 8 << 20);
  StartLeader();
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync == 1; }, 10'000));
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(Put("quiet" + std::to_string(i)), ErrorCode::OK);
    const uint64_t seq = dir_->ChangeSeq();
    ASSERT_TRUE(testing::WaitFor(
        [&] {
          const ReplicationLeaderStats st = leader_->stats();
          return st.acked_seq >= seq && st.lag_ms == 0;
        },
        10'000))
        << "put " << i << ": acknowledged, yet still outstanding";
  }
  EXPECT_EQ(leader_->stats().dropped, 0u);
}

// Dropped connections leave no threads behind: each new one joins the
// readers that ended (before, they piled up until Stop).
TEST_F(ReplicationStreamTest, DroppedConnectionsLeaveNoReaderThreads) {
  StartLeader();
  const uint16_t port = static_cast<uint16_t>(
      std::stoi(acceptor_->address().substr(acceptor_->address().rfind(':') + 1)));
  for (int i = 0; i < 30; ++i) {
    int fd = testing::ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, std::string("SMRP\x05\0\0\0garbage", 15), 2000));
    EXPECT_TRUE(testing::WaitPeerClosed(fd, 10'000));
    CloseFd(fd);
  }
  EXPECT_EQ(leader_->stats().dropped, 30u);
  // Each Adopt joins the readers that ended by then (the last ones may
  // still be finishing): far fewer than one per connection.
  EXPECT_LT(leader_->stats().reader_threads, 10u) << "ended readers are joined";
}

// With nothing in flight, the thread that waits for a mutation ships it:
// an unbatched put never pays a wake-up of the sleeping shipper, even while
// a connection sits in its handshake (a standby's watch connection being
// proven, or, as here, a stranger that says nothing).
TEST_F(ReplicationStreamTest, AnIdleLeaderShipsOnTheMutationsThread) {
  Mount(UUID::Generate(), "a", 8 << 20);
  // The shipper wakes only when rung: no batch of its own between a put and
  // its wait; the stranger is not dropped during the test.
  StartLeader({}, {}, [](ReplicationLeaderOptions& o) {
    o.idle_ship_ms = 600'000;
    o.io_timeout_ms = 600'000;
  });
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync_ids.size() == 1; }, 10'000));
  const uint16_t port = static_cast<uint16_t>(
      std::stoi(acceptor_->address().substr(acceptor_->address().rfind(':') + 1)));
  UniqueFd stranger(testing::ConnectLoopback(port));
  ASSERT_TRUE(stranger.valid());
  // The standby's watch connection and the stranger: both adopted.
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().connections == 3; }, 10'000));
  const uint64_t wakes_before = leader_->stats().shipper_wakes;
  constexpr int kPuts = 50;
  for (int i = 0; i < kPuts; ++i) {
    ASSERT_EQ(Put("one-by-one" + std::to_string(i)), ErrorCode::OK);
    const uint64_t seq = dir_->ChangeSeq();
    std::atomic<bool> released{false};
    if (!leader_->WhenReplicated(seq, [&] { released = true; })) {
      ASSERT_TRUE(testing::WaitFor([&] { return released.load(); }, 10'000)) << "put " << i;
    }
    ASSERT_TRUE(leader_->Replicated(seq));
  }
  const ReplicationLeaderStats st = leader_->stats();
  // (The first may find the shipper finishing the round that published the
  // standby, and ring it as it goes to sleep.)
  EXPECT_GE(st.inline_batches, kPuts - 1u);
  EXPECT_LE(st.shipper_wakes - wakes_before, 1u);
  // (Acknowledged once decoded: applied right after.)
  EXPECT_TRUE(testing::WaitFor([&] { return StandbyObjects(*standby) == size_t{kPuts}; }, 10'000));
  EXPECT_EQ(st.dropped, 0u);
}

// Many threads putting at once: with a batch in flight, a waiter's change
// is left to the reader of that batch's acknowledgement, which ships all
// that came meanwhile. The shipper's own round is off (idle_ship_ms), so a
// change nobody shipped would leave its waiter waiting.
TEST_F(ReplicationStreamTest, ConcurrentWaitersAreAllShippedWithoutTheShippersRound) {
  Mount(UUID::Generate(), "a", 8 << 20);
  StartLeader({}, {}, [](ReplicationLeaderOptions& o) { o.idle_ship_ms = 600'000; });
  auto standby = StartStandby();
  ASSERT_TRUE(testing::WaitFor([&] { return leader_->stats().in_sync_ids.size() == 1; }, 10'000));
  constexpr int kThreads = 8;
  constexpr int kPuts = 50;
  std::atomic<int> released{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        if (Put("t" + std::to_string(t) + "-" + std::to_string(i)) != ErrorCode::OK) ++failed;
        auto done = std::make_shared<std::atomic<bool>>(false);
        if (!leader_->WhenReplicated(dir_->ChangeSeq(), [done] { *done = true; }) &&
            !testing::WaitFor([&] { return done->load(); }, 10'000)) {
          ++failed;
          return;
        }
        ++released;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(released.load(), kThreads * kPuts);
  EXPECT_TRUE(testing::WaitFor(
      [&] { return StandbyObjects(*standby) == static_cast<size_t>(kThreads * kPuts); }, 10'000));
  EXPECT_EQ(leader_->stats().dropped, 0u);
}

// A standby that completes its copy by hand (handshake, frames up to the
// synced one, its acknowledgement), then reads nothing more.
UniqueFd SilentStandby(const std::string& address) {
  const uint16_t port = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  UniqueFd fd(testing::ConnectLoopback(port));
  if (!fd.valid()) return fd;
  const int small = 4096;  // the leader's writes back up soon
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  std::string out, body, pending;
  AppendHello({"c1", std::string(32, 'n'), 0, "silent"}, &out);
  if (WriteFrames(fd.get(), 2000, out) != ErrorCode::OK) return {};
  for (int frame = 0; frame < 2; ++frame) {  // challenge, welcome
    if (ReadFrame(fd.get(), {}, &pending, &body) != ErrorCode::OK) return {};
  }
  for (;;) {
    if (ReadFrame(fd.get(), {}, &pending, &body) != ErrorCode::OK) return {};
    auto batch = DecodeBatch(body);
    if (!batch.ok()) return {};
    if ((batch->flags & kBatchSynced) != 0) {
      out.clear();
      AppendAck(batch->changes.seq, &out);
      if (WriteFrames(fd.get(), 2000, out) != ErrorCode::OK) return {};
      return fd;
    }
  }
}

// A mutation's thread never blocks on a standby's socket: what the socket
// does not take at once is left to the shipper, which drops the standby
// only after io_timeout. So the wait below returns while the standby is
// still in sync (a thread that wrote it all would have waited for the drop).
TEST_F(ReplicationStreamTest, AStandbyThatReadsNothingNeverBlocksTheMutationsThread) {
  Mount(UUID::Generate(), "a", 64 << 20);
  // Nothing ships but what is rung for; no drop during the test.
  StartLeader({}, {}, [](ReplicationLeaderOptions& o) {
    o.io_timeout_ms = 600'000;
    o.idle_ship_ms = 600'000;
  });
  UniqueFd silent = SilentStandby(acceptor_->address());
  ASSERT_TRUE(silent.valid());
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const ReplicationLeaderStats st = leader_->stats();
        return st.in_sync_ids.size() == 1 && st.lag_ops == 0;
      },
      10'000));
  // Megabytes of changes in one batch: far more than the sockets hold.
  for (int i = 0; i < 8000; ++i) {
    ASSERT_EQ(Put(std::string(1000, 'k') + std::to_string(i), 1), ErrorCode::OK);
  }
  std::atomic<bool> released{false};
  EXPECT_FALSE(leader_->WhenReplicated(dir_->ChangeSeq(), [&] { released = true; }));
  const ReplicationLeaderStats st = leader_->stats();
  EXPECT_EQ(st.in_sync, 1u) << "the call waited for the standby's drop";
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.inline_batches, 1u);
  // Its end drops it (the shipper's write fails) and releases the waiter.
  silent.Reset();
  EXPECT_TRUE(testing::WaitFor([&] { return released.load(); }, 30'000));
}

}  // namespace
}  // namespace shelfmark
