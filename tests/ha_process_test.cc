// Real shelfmark-master processes with --enable_ha on a real etcd
// (testing/etcd_process.h): one leader, a standby that answers NOT_LEADER on
// both protocols (naming the leader, which clients follow without etcd) and
// takes over when the leader is killed, a fenced leader
// (etcd paused) that serves reads and refuses mutations, and the start-up
// errors (unreachable etcd, a published address taken, bad flags); and,
// disabled while they fail (known bugs, see there), a standby the leader
// dropped that must not take over with its old copy and a leader restarted
// at once that must not take over with an empty directory; a master that
// waits to lead expires none of the nodes it restored from a snapshot, and
// gives each a full client TTL once it leads; a put started before a
// failover keeps its range and ends on the new leader. Every wait is
// WaitFor with a deadline; no durations are asserted.
#include <signal.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "directory/directory_test_util.h"
#include "rpc/lookup_client.h"
#include "rpc/master_client.h"
#include "ha/etcd_client.h"
#include "ha/leader_key.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

constexpr int kDeadlineMs = 30'000;

struct HaMaster {
  std::unique_ptr<ChildProcess> process;
  testing::ServicePorts ports;
  std::string log;

  std::string address() const { return "127.0.0.1:" + std::to_string(ports.rpc); }
  double Metric(const std::string& name) const {
    return testing::ScrapeMetric(ports.http, name);
  }
  bool Leading() const { return Metric("shelfmark_master_ha_role") == 1; }
  // A Cap'n Proto client (lookups too: the channel is off), a fresh one
  // unless `id` names it.
  std::unique_ptr<MasterClient> Client(const UUID& id = UUID::Generate()) const {
    MasterClientOptions options;
    options.address = address();
    options.client_id = id;
    options.call_timeout_ms = 5000;
    options.lookup_channel = false;
    return std::make_unique<MasterClient>(options);
  }
};

class HaProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.Start()) << etcd_.StartFailure(); }

  void TearDown() override {
    ::unsetenv("MOONCAKE_SNAPSHOT_LOCAL_PATH");  // set by a test that takes snapshots
    if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir_.path(), ".log").c_str());
  }

  std::vector<std::string> HaFlags() const {
    return {"--enable_ha", "--etcd_endpoints=" + etcd_.endpoint(), "--rpc_address=127.0.0.1",
            "--cluster_id=ha_test", "--client_ttl=3600"};
  }

  // A master with HA on, started and answering /health.
  HaMaster Start(const std::string& name) {
    HaMaster m;
    m.log = dir_.Join(name + ".log");
    m.process = testing::StartMaster(SHELFMARK_MASTER_BIN, HaFlags(), m.log, &m.ports);
    EXPECT_NE(m.process, nullptr) << ReadFile(m.log);
    return m;
  }

  // Starts two masters and waits until exactly one leads: [leader, standby].
  std::vector<HaMaster*> StartPair() {
    a_ = Start("a");
    b_ = Start("b");
    if (a_.process == nullptr || b_.process == nullptr) return {};
    const bool one = testing::WaitFor([&] { return a_.Leading() != b_.Leading(); }, kDeadlineMs);
    EXPECT_TRUE(one) << "exactly one leader";
    if (!one) return {};
    return a_.Leading() ? std::vector<HaMaster*>{&a_, &b_} : std::vector<HaMaster*>{&b_, &a_};
  }

  // StartPair, then waits until the standby holds a copy.
  std::vector<HaMaster*> StartSyncedPair() {
    std::vector<HaMaster*> pair = StartPair();
    if (pair.size() != 2) return {};
    const bool synced = testing::WaitFor(
        [&] { return pair[1]->Metric("shelfmark_master_ha_standby_synced") == 1; }, kDeadlineMs);
    EXPECT_TRUE(synced) << "the standby holds a copy";
    return synced ? pair : std::vector<HaMaster*>{};
  }

  // Mounts a fresh segment (its own range and endpoint) and puts `key`
  // through `master`.
  void MountAndPut(const HaMaster& master, const std::string& segment, const std::string& key) {
    auto client = master.Client();
    const uint64_t n = ++segments_;
    ASSERT_EQ(client->MountSegment(MakeTestSegment(segment, n << 24, 1 << 20,
                                                   "127.0.0.1:" + std::to_string(n))),
              ErrorCode::OK);
    auto started = client->PutStart("", key, 1000, {});
    ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
    ASSERT_EQ(client->PutEnd("", key), ErrorCode::OK);
  }

  // Mounts one segment of 2 * kHalf through `client` and puts `key` into
  // half of it, hard-pinned (never evicted for a put: once the other half
  // is taken the segment stays full).
  static constexpr uint64_t kHalf = 1 << 19;
  static PutConfig Pinned() {
    PutConfig pinned;
    pinned.hard_pin = true;
    return pinned;
  }
  static void MountHalfFull(MasterClient& client, const std::string& key) {
    ASSERT_EQ(client.MountSegment(MakeTestSegment("seg", 1 << 24, 2 * kHalf, "127.0.0.1:9")),
              ErrorCode::OK);
    ASSERT_TRUE(client.PutStart("", key, kHalf, Pinned()).ok());
    ASSERT_EQ(client.PutEnd("", key), ErrorCode::OK);
  }
  // StartSyncedPair into *pair, then MountHalfFull of `key` on the leader
  // through a client with id `writer`, which it returns.
  std::unique_ptr<MasterClient> StartHalfFullPair(const UUID& writer, const std::string& key,
                                                  std::vector<HaMaster*>* pair) {
    *pair = StartSyncedPair();
    if (pair->size() != 2) return nullptr;
    auto client = (*pair)[0]->Client(writer);
    MountHalfFull(*client, key);
    return HasFatalFailure() ? nullptr : std::move(client);
  }
  // SIGKILLs the leader and waits until the standby leads.
  static void FailOver(HaMaster& leader, HaMaster& standby) {
    leader.process->Signal(SIGKILL);
    EXPECT_EQ(leader.process->Wait(kDeadlineMs), 128 + SIGKILL);
    ASSERT_TRUE(testing::WaitFor([&] { return standby.Leading(); }, kDeadlineMs));
  }
  // A put of kHalf through `master` finds no room: its segment is full.
  static void ExpectFull(const HaMaster& master) {
    auto other = master.Client()->PutStart("", "other", kHalf, {});
    ASSERT_FALSE(other.ok()) << "the new leader gave a held range away";
    EXPECT_EQ(other.error(), ErrorCode::NO_AVAILABLE_HANDLE);
  }

  testing::TempDir dir_{"ha_process"};
  testing::EtcdProcess etcd_;
  HaMaster a_, b_;
  uint64_t segments_ = 0;
};

TEST_F(HaProcessTest, OneLeaderTheStandbyAnswersNotLeaderAndTakesOverWhenItIsKilled) {
  auto pair = StartPair();
  ASSERT_EQ(pair.size(), 2u);
  HaMaster& leader = *pair[0];
  HaMaster& standby = *pair[1];
  EXPECT_EQ(leader.Metric("shelfmark_master_ha_elections_won_total"), 1);
  EXPECT_EQ(standby.Metric("shelfmark_master_ha_elections_won_total"), 0);
  EXPECT_GT(leader.Metric("shelfmark_master_ha_term"), 0);
  std::string health;
  ASSERT_EQ(testing::HttpGet(leader.ports.http, "/health", &health), 200);
  EXPECT_EQ(health, "ok\nha_role leader\n");
  ASSERT_EQ(testing::HttpGet(standby.ports.http, "/health", &health), 200);
  EXPECT_EQ(health, "ok\nha_role standby\n");
  MountAndPut(leader, "seg-a", "k");
  // The standby's watch connection is held (its end is the death signal).
  ASSERT_TRUE(testing::WaitFor(
      [&] { return leader.Metric("shelfmark_master_ha_replication_watchers") == 1; },
      kDeadlineMs));

  auto exists = standby.Client()->ExistKey("", "k");
  ASSERT_FALSE(exists.ok());
  EXPECT_EQ(exists.error(), ErrorCode::NOT_LEADER);
  LookupClient lookup({standby.address(), "", 5000});
  auto looked_up = lookup.GetReplicaList("", "k");
  ASSERT_FALSE(looked_up.ok());
  EXPECT_EQ(looked_up.error(), ErrorCode::NOT_LEADER);
  EXPECT_GE(standby.Metric("shelfmark_master_ha_not_leader_total"), 2);

  leader.process->Signal(SIGKILL);
  EXPECT_EQ(leader.process->Wait(kDeadlineMs), 128 + SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return standby.Leading(); }, kDeadlineMs))
      << "the standby takes over";
  EXPECT_EQ(standby.Metric("shelfmark_master_ha_elections_won_total"), 1);
  // An idle leader's kernel closed the stream in order (FIN) and its port
  // refused: the standby revoked the dead leader's lease instead of waiting
  // for it to expire.
  EXPECT_EQ(standby.Metric("shelfmark_master_ha_gone_leaders_revoked_total"), 1);
  MountAndPut(standby, "seg-b", "k2");
}

// A put started on the leader and ended on the new leader after a failover
// (docs/ha.md, "A put's start waits too"): PutStart is answered once the
// standby holds the unfinished put, so the new leader holds its range (a put
// of another key into the full segment finds no room) and reports nothing
// until the original client's PutEnd completes it in that range.
TEST_F(HaProcessTest, APutStartedBeforeAFailoverKeepsItsRangeAndEndsOnTheNewLeader) {
  const UUID writer = UUID::Generate();  // the same client at either master
  std::vector<HaMaster*> pair;
  auto client = StartHalfFullPair(writer, "done", &pair);
  ASSERT_NE(client, nullptr);
  auto started = client->PutStart("", "mid", kHalf, {});
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  const uint64_t mid = started->at(0).memory.buffer_address;

  ASSERT_NO_FATAL_FAILURE(FailOver(*pair[0], *pair[1]));
  auto moved = pair[1]->Client(writer);
  auto exists = moved->ExistKey("", "mid");
  ASSERT_TRUE(exists.ok()) << ErrorCodeName(exists.error());
  EXPECT_FALSE(*exists);
  ASSERT_NO_FATAL_FAILURE(ExpectFull(*pair[1]));  // the unfinished put's range is held
  ASSERT_EQ(moved->PutEnd("", "mid"), ErrorCode::OK);
  auto ended = moved->GetReplicaList("", "mid");
  ASSERT_TRUE(ended.ok()) << ErrorCodeName(ended.error());
  EXPECT_EQ(ended->replicas.at(0).memory.buffer_address, mid) << "where its client wrote";
}

// An upsert started on the leader and ended on the new leader (docs/ha.md,
// "Upserts and held ranges"): the pending version ships with its key, so
// the new leader serves the old version and holds the new one's range
// until the writer's PutEnd swaps the new version in where it was written
// (never an OK over the old version).
TEST_F(HaProcessTest, AnUpsertStartedBeforeAFailoverIsSwappedInOnTheNewLeader) {
  const UUID writer = UUID::Generate();  // the same client at either master
  std::vector<HaMaster*> pair;
  auto client = StartHalfFullPair(writer, "k", &pair);
  ASSERT_NE(client, nullptr);
  auto old = client->GetReplicaList("", "k");
  ASSERT_TRUE(old.ok()) << ErrorCodeName(old.error());
  PutConfig replace = Pinned();
  replace.replace = true;
  auto started = client->PutStart("", "k", kHalf - 64, replace);
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());

  ASSERT_NO_FATAL_FAILURE(FailOver(*pair[0], *pair[1]));
  auto moved = pair[1]->Client(writer);
  auto before = moved->GetReplicaList("", "k");
  ASSERT_TRUE(before.ok()) << ErrorCodeName(before.error());
  EXPECT_EQ(before->size, kHalf) << "the old version until the swap";
  EXPECT_EQ(before->replicas.at(0).memory.buffer_address,
            old->replicas.at(0).memory.buffer_address);
  ASSERT_NO_FATAL_FAILURE(ExpectFull(*pair[1]));  // the pending version's range is held
  ASSERT_EQ(moved->PutEnd("", "k"), ErrorCode::OK);
  auto after = moved->GetReplicaList("", "k");
  ASSERT_TRUE(after.ok()) << ErrorCodeName(after.error());
  EXPECT_EQ(after->size, kHalf - 64) << "the new version";
  EXPECT_EQ(after->replicas.at(0).memory.buffer_address, started->at(0).memory.buffer_address)
      << "where its client wrote";
}

// A host:port client of `master` that follows NOT_LEADER hints.
std::unique_ptr<MasterClient> HintFollowingClientOf(const HaMaster& master) {
  MasterClientOptions options;
  options.address = master.address();
  options.call_timeout_ms = 5000;
  options.follow_leader_hints = true;
  return std::make_unique<MasterClient>(options);
}

// A standby's NOT_LEADER names the leader (docs/ha.md, "NOT_LEADER names
// the leader"): a host:port client of the standby that follows hints gets
// its answers from the leader, a lookup (the channel names nobody; the
// Cap'n Proto answer does) and a put. Before, it got NOT_LEADER.
TEST_F(HaProcessTest, AStandbysNotLeaderNamesTheLeader) {
  auto pair = StartPair();
  ASSERT_EQ(pair.size(), 2u);
  HaMaster& leader = *pair[0];
  HaMaster& standby = *pair[1];
  MountAndPut(leader, "seg-a", "k");
  ASSERT_TRUE(testing::WaitFor(
      [&] { return standby.Metric("shelfmark_master_ha_leader_known") == 1; }, kDeadlineMs))
      << "the standby has read the leader key";

  auto client = HintFollowingClientOf(standby);
  auto replicas = client->GetReplicaList("", "k");
  ASSERT_TRUE(replicas.ok()) << ErrorCodeName(replicas.error());
  EXPECT_EQ(replicas->size, 1000u);
  EXPECT_EQ(client->master_address(), leader.address());
  ASSERT_EQ(client->MountSegment(MakeTestSegment("seg-b", 2 << 24, 1 << 20, "127.0.0.1:7")),
            ErrorCode::OK);
  ASSERT_TRUE(client->PutStart("", "k2", 1000, {}).ok());
  EXPECT_EQ(client->PutEnd("", "k2"), ErrorCode::OK);
  auto put = leader.Client()->ExistKey("", "k2");
  ASSERT_TRUE(put.ok()) << ErrorCodeName(put.error());
  EXPECT_TRUE(*put) << "the put went to the leader";
  // The standby answered the lookup on both protocols, and nothing after.
  EXPECT_EQ(standby.Metric("shelfmark_master_ha_not_leader_total"), 2);
}

// A client that finds the leader through etcd, as nodes and engines do.
std::unique_ptr<MasterClient> EtcdClientOf(const testing::EtcdProcess& etcd, const UUID& id) {
  MasterClientOptions options;
  options.address = "etcd://" + etcd.endpoint();
  options.cluster_id = "ha_test";
  options.client_id = id;
  options.call_timeout_ms = 15'000;
  return std::make_unique<MasterClient>(options);
}

// A client of the leader through etcd; the leader stalls past its lease
// (SIGSTOP), the standby takes over, and the old leader comes back as a
// standby of the new one. With etcd silent (paused) the client's next
// calls can reach the new leader only by the old one's NOT_LEADER naming
// it: they do, without asking etcd. Before, the client asked etcd and
// failed RPC_FAIL.
TEST_F(HaProcessTest, AClientWhoseLeaderBecameAStandbyFollowsItsHintWithoutEtcd) {
  auto pair = StartSyncedPair();
  ASSERT_EQ(pair.size(), 2u);
  HaMaster& first = *pair[0];
  HaMaster& second = *pair[1];
  auto client = EtcdClientOf(etcd_, UUID::Generate());
  ASSERT_EQ(client->MountSegment(MakeTestSegment("seg", 1 << 24, 64 << 20, "127.0.0.1:9")),
            ErrorCode::OK);
  ASSERT_TRUE(client->PutStart("", "k", 4096, {}).ok());
  ASSERT_EQ(client->PutEnd("", "k"), ErrorCode::OK);
  ASSERT_EQ(client->master_address(), first.address());

  first.process->Signal(SIGSTOP);
  const bool took_over = testing::WaitFor([&] { return second.Leading(); }, kDeadlineMs);
  first.process->Signal(SIGCONT);
  ASSERT_TRUE(took_over) << "the standby takes over once the stalled leader's lease expired";
  // The old leader finds its lease gone and follows the new one: its
  // NOT_LEADER names it (a fresh hint-following client of it gets there).
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto probe = HintFollowingClientOf(first);
        return !first.Leading() && probe->ExistKey("", "k").ok() &&
               probe->master_address() == second.address();
      },
      kDeadlineMs));

  etcd_.Pause();
  auto exists = client->ExistKey("", "k");  // the new leader is fenced now: reads are served
  const std::string after_exists = client->master_address();
  auto replicas = client->GetReplicaList("", "k");
  etcd_.Resume();
  ASSERT_TRUE(exists.ok()) << ErrorCodeName(exists.error());
  EXPECT_TRUE(*exists);
  EXPECT_EQ(after_exists, second.address());
  ASSERT_TRUE(replicas.ok()) << ErrorCodeName(replicas.error());
  EXPECT_EQ(replicas->size, 4096u);
}

TEST_F(HaProcessTest, AcknowledgedPutsSurviveKillingTheLeader) {
  auto pair = StartPair();
  ASSERT_EQ(pair.size(), 2u);
  HaMaster* leader = pair[0];
  HaMaster* standby = pair[1];
  const UUID node = UUID::Generate();
  auto client = EtcdClientOf(etcd_, node);
  ASSERT_EQ(client->MountSegment(MakeTestSegment("seg", 1 << 24, 64 << 20, "127.0.0.1:9")),
            ErrorCode::OK);
  std::vector<std::string> acked;
  int next = 0;
  // Puts until `count` more are acknowledged (a put cut by the failover is
  // simply not acknowledged).
  auto put_more = [&](size_t count) {
    const size_t want = acked.size() + count;
    return testing::WaitFor(
        [&] {
          const std::string key = "key-" + std::to_string(next++);
          auto started = client->PutStart("", key, 4096, {});
          if (started.ok() && client->PutEnd("", key) == ErrorCode::OK) acked.push_back(key);
          return acked.size() >= want;
        },
        kDeadlineMs);
  };
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(testing::WaitFor(
        [&] { return standby->Metric("shelfmark_master_ha_standby_synced") == 1; }, kDeadlineMs))
        << "the standby holds a copy";
    ASSERT_TRUE(put_more(100));
    leader->process->Signal(SIGKILL);
    EXPECT_EQ(leader->process->Wait(kDeadlineMs), 128 + SIGKILL);
    ASSERT_TRUE(put_more(20)) << "puts resume on the new leader";
    ASSERT_TRUE(standby->Leading());
    for (const std::string& key : acked) {
      auto r = client->GetReplicaList("", key);
      ASSERT_TRUE(r.ok()) << key << ": " << ErrorCodeName(r.error());
      EXPECT_EQ(r->size, 4096u);
    }
    // The node keeps its segment: the new leader knows it.
    auto ping = client->Ping();
    ASSERT_TRUE(ping.ok());
    EXPECT_EQ(ping->status, ClientStatus::OK);
    // The killed master comes back as the new standby.
    *leader = Start(round % 2 == 0 ? "a" + std::to_string(round) : "b" + std::to_string(round));
    ASSERT_NE(leader->process, nullptr);
    std::swap(leader, standby);
  }
  EXPECT_GE(acked.size(), 360u);
}

// A standby the leader dropped keeps the copy it holds, but the leader went
// on acknowledging mutations without it: it must not take over with that
// copy. Only the standbys of the leader's published in-sync set (etcd,
// shelfmark/<cluster>/in_sync: every acknowledgement waited for each of
// them) may (docs/ha.md, "The in-sync set").
//
// Three masters; one standby stalls (SIGSTOP: a long pause, a starved
// machine) until the leader drops it (io_timeout, 5 s), puts go on and are
// acknowledged through the other standby. Then the synced standby is held
// (SIGSTOP), the leader killed and the stalled standby resumed, so that it
// has the first chance: it must decline (it knows no leader and does not
// campaign). --ha_unsynced_takeover_s is long, so within this test only a
// master named in the set may take over: the synced one, once resumed.
TEST_F(HaProcessTest, AStandbyTheLeaderDroppedDoesNotTakeOverWithAnOldCopy) {
  std::vector<std::string> flags = HaFlags();
  flags.push_back("--ha_unsynced_takeover_s=3600");
  HaMaster m[3];
  for (int i = 0; i < 3; ++i) {
    m[i].log = dir_.Join("m" + std::to_string(i) + ".log");
    m[i].process = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, m[i].log, &m[i].ports);
    ASSERT_NE(m[i].process, nullptr) << ReadFile(m[i].log);
  }
  int leader = -1;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        int leaders = 0;
        for (int i = 0; i < 3; ++i) {
          if (m[i].Leading()) leader = i, ++leaders;
        }
        return leaders == 1;
      },
      kDeadlineMs));
  HaMaster& synced = m[(leader + 1) % 3];
  HaMaster& stalled = m[(leader + 2) % 3];
  for (HaMaster* s : {&synced, &stalled}) {
    ASSERT_TRUE(testing::WaitFor(
        [&] { return s->Metric("shelfmark_master_ha_standby_synced") == 1; }, kDeadlineMs));
  }
  auto client = EtcdClientOf(etcd_, UUID::Generate());
  ASSERT_EQ(client->MountSegment(MakeTestSegment("seg", 1 << 24, 64 << 20, "127.0.0.1:9")),
            ErrorCode::OK);
  std::vector<std::string> acked;
  int next = 0;
  auto put = [&] {
    const std::string key = "key-" + std::to_string(next++);
    auto started = client->PutStart("", key, 4096, {});
    if (started.ok() && client->PutEnd("", key) == ErrorCode::OK) acked.push_back(key);
  };
  for (int i = 0; i < 50; ++i) put();

  stalled.process->Signal(SIGSTOP);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        put();
        return m[leader].Metric("shelfmark_master_ha_replication_dropped_standbys_total") >= 1;
      },
      kDeadlineMs))
      << "the leader drops the standby whose acknowledgements stall";
  for (int i = 0; i < 100; ++i) put();
  ASSERT_EQ(m[leader].Metric("shelfmark_master_ha_replication_standbys_in_sync"), 1)
      << "the other standby holds what the leader acknowledged";
  // The published set names the synced standby alone.
  ha::EtcdClientOptions eo;
  eo.endpoints = *ha::ParseEtcdEndpoints(etcd_.endpoint());
  ha::EtcdClient etcd(eo);
  auto record = etcd.Get(ha::InSyncKey("ha_test"));
  ASSERT_TRUE(record.ok() && record->has_value());
  int64_t set_term = 0;
  std::vector<std::string> named;
  ASSERT_TRUE(ha::DecodeInSync((*record)->value, &set_term, &named));
  EXPECT_EQ(set_term, m[leader].Metric("shelfmark_master_ha_term"));
  EXPECT_EQ(named, std::vector<std::string>{synced.address()});

  synced.process->Signal(SIGSTOP);
  m[leader].process->Signal(SIGKILL);
  ASSERT_EQ(m[leader].process->Wait(kDeadlineMs), 128 + SIGKILL);
  m[leader].process.reset();
  stalled.process->Signal(SIGCONT);
  // The stalled standby sees nobody lead (the dead leader's key revoked or
  // expired) and declines: it is not in the set.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return stalled.Leading() || stalled.Metric("shelfmark_master_ha_leader_known") == 0;
      },
      kDeadlineMs));
  const bool stalled_leads = stalled.Leading();
  synced.process->Signal(SIGCONT);
  EXPECT_FALSE(stalled_leads) << "the dropped standby took over with its old copy";
  HaMaster* next_leader = nullptr;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (HaMaster* s : {&synced, &stalled}) {
          if (s->Leading()) next_leader = s;
        }
        return next_leader != nullptr;
      },
      kDeadlineMs));
  EXPECT_EQ(next_leader, &synced);
  size_t lost = 0;
  std::string first;
  for (const std::string& key : acked) {
    auto r = client->GetReplicaList("", key);
    if (!r.ok() && lost++ == 0) first = key + ": " + std::string(ErrorCodeName(r.error()));
  }
  EXPECT_EQ(lost, 0u) << "of " << acked.size() << " acknowledged puts, first " << first
                      << (next_leader == &stalled ? "; the dropped standby took over"
                                                  : "; the synced standby took over");
}

// A leader killed and restarted at once (as a supervisor restarts a
// crashed service) comes back with an empty directory while its dead
// predecessor's key, with the same address, still stands. It must not take
// that term for its own and campaign once the key is gone (it did: if it
// won, every acknowledged put was lost; MasterReplication counts another
// leader by term, not address). The standby is held back (SIGSTOP) until
// the restarted master has seen no leader and declined to campaign
// (shelfmark_master_ha_leader_known 0), so that it had the first chance.
TEST_F(HaProcessTest, ALeaderRestartedAtOnceDoesNotTakeOverWithAnEmptyDirectory) {
  const uint16_t port = testing::FreePort();
  // Master `a` at a fixed port, so that its restart publishes the same
  // address; its log `name`.
  auto start_a = [&](const std::string& name, HaMaster* m) {
    m->log = dir_.Join(name + ".log");
    std::vector<std::string> flags = HaFlags();
    flags.insert(flags.begin(), {"--rpc_port=" + std::to_string(port), "--metrics_port=0"});
    m->process = std::make_unique<ChildProcess>(SHELFMARK_MASTER_BIN, flags, m->log);
    ASSERT_TRUE(testing::WaitForServicePorts(m->log, kDeadlineMs, &m->ports))
        << ReadFile(m->log);
  };
  ASSERT_NO_FATAL_FAILURE(start_a("a", &a_));
  ASSERT_TRUE(testing::WaitFor([&] { return a_.Leading(); }, kDeadlineMs));
  b_ = Start("b");
  ASSERT_NE(b_.process, nullptr);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return b_.Metric("shelfmark_master_ha_standby_synced") == 1; }, kDeadlineMs));
  auto client = EtcdClientOf(etcd_, UUID::Generate());
  ASSERT_EQ(client->MountSegment(MakeTestSegment("seg", 1 << 24, 64 << 20, "127.0.0.1:9")),
            ErrorCode::OK);
  std::vector<std::string> acked;
  for (int i = 0; i < 100; ++i) {
    const std::string key = "key-" + std::to_string(i);
    auto started = client->PutStart("", key, 4096, {});
    if (started.ok() && client->PutEnd("", key) == ErrorCode::OK) acked.push_back(key);
  }
  ASSERT_EQ(acked.size(), 100u);

  a_.process->Signal(SIGKILL);
  ASSERT_EQ(a_.process->Wait(kDeadlineMs), 128 + SIGKILL);
  b_.process->Signal(SIGSTOP);
  HaMaster restarted;
  ASSERT_NO_FATAL_FAILURE(start_a("a-restarted", &restarted));
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return restarted.Leading() || restarted.Metric("shelfmark_master_ha_leader_known") == 0;
      },
      kDeadlineMs));
  const bool restarted_leads = restarted.Leading();
  b_.process->Signal(SIGCONT);
  EXPECT_FALSE(restarted_leads) << "a master with an empty directory took over";
  ASSERT_TRUE(testing::WaitFor([&] { return restarted.Leading() || b_.Leading(); },
                               kDeadlineMs));
  EXPECT_TRUE(b_.Leading()) << "the standby with the copy takes over";
  size_t lost = 0;
  for (const std::string& key : acked) lost += !client->GetReplicaList("", key).ok();
  EXPECT_EQ(lost, 0u) << "of " << acked.size() << " acknowledged puts";
}

// Issue 29: masters restarted with their snapshots wait to lead (the dead
// leader's lease, then --ha_unsynced_takeover_s: they saw its term), and
// meanwhile their background pass expired every node they restored
// (--client_ttl, no leader to ping) and dropped its objects; the next leader
// served an empty directory. Now a master that does not lead expires
// nobody, and a new leader gives each node a full --client_ttl from its
// start of service: the node's next ping finds it known, and every object
// of the snapshot reads back.
TEST_F(HaProcessTest, NoNodeExpiresWhileNobodyLeadsAndTheNewLeaderGivesEachAFullTtl) {
  ASSERT_EQ(::setenv("MOONCAKE_SNAPSHOT_LOCAL_PATH", dir_.Join("snapshots").c_str(), 1), 0);
  std::vector<std::string> flags;
  for (const std::string& f : HaFlags()) {
    if (f.rfind("--client_ttl=", 0) != 0) flags.push_back(f);
  }
  flags.insert(flags.end(),
               {"--client_ttl=4", "--ha_unsynced_takeover_s=10", "--enable_snapshot=true",
                "--enable_snapshot_restore=true", "--snapshot_object_store_type=local",
                "--snapshot_catalog_store_type=embedded", "--snapshot_interval_seconds=1",
                "--snapshot_retention_count=2"});
  auto start = [&](const std::string& name, HaMaster* m) {
    m->log = dir_.Join(name + ".log");
    m->process = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, m->log, &m->ports);
    ASSERT_NE(m->process, nullptr) << ReadFile(m->log);
  };
  ASSERT_NO_FATAL_FAILURE(start("a", &a_));
  ASSERT_TRUE(testing::WaitFor([&] { return a_.Leading(); }, kDeadlineMs));
  auto node = EtcdClientOf(etcd_, UUID::Generate());
  ASSERT_EQ(node->MountSegment(MakeTestSegment("seg", 1 << 24, 64 << 20, "127.0.0.1:9")),
            ErrorCode::OK);
  std::vector<std::string> keys;
  for (int i = 0; i < 50; ++i) {
    keys.push_back("key-" + std::to_string(i));
    ASSERT_TRUE(node->PutStart("", keys.back(), 4096, {}).ok()) << keys.back();
    ASSERT_EQ(node->PutEnd("", keys.back()), ErrorCode::OK) << keys.back();
  }
  // A snapshot begun after the last put (two more successes); the node
  // pings meanwhile, as a node does.
  const std::string success = "shelfmark_master_snapshots_total{result=\"success\"}";
  const double done = a_.Metric(success);
  ASSERT_GE(done, 0);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        EXPECT_TRUE(node->Ping().ok());
        return a_.Metric(success) >= done + 2;
      },
      kDeadlineMs));

  a_.process->Signal(SIGKILL);
  ASSERT_EQ(a_.process->Wait(kDeadlineMs), 128 + SIGKILL);
  HaMaster restarted;
  ASSERT_NO_FATAL_FAILURE(start("a-restarted", &restarted));
  // Its pings go nowhere until the restarted master leads (longer than the
  // client TTL); then the first one must find the node known.
  Result<PingResponse> ping = ErrorCode::RPC_FAIL;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        ping = node->Ping();
        return ping.ok();
      },
      kDeadlineMs))
      << "a leader answers";
  EXPECT_TRUE(restarted.Leading());
  EXPECT_EQ(ping->status, ClientStatus::OK) << "the new leader expired the restored node";
  size_t lost = 0;
  for (const std::string& key : keys) lost += !node->GetReplicaList("", key).ok();
  EXPECT_EQ(lost, 0u) << "of " << keys.size() << " objects in the snapshot";
}

TEST_F(HaProcessTest, FencedLeaderServesReadsAndRefusesMutationsUntilEtcdReturns) {
  auto pair = StartPair();
  ASSERT_EQ(pair.size(), 2u);
  HaMaster& leader = *pair[0];
  MountAndPut(leader, "seg-a", "k");
  auto client = leader.Client();

  etcd_.Pause();
  // Remove of an absent key changes nothing: OBJECT_NOT_FOUND while admitted.
  ASSERT_TRUE(testing::WaitFor(
      [&] { return client->Remove("", "absent") == ErrorCode::NOT_LEADER; }, kDeadlineMs))
      << "the leader stops acknowledging mutations once it cannot renew its lease";
  EXPECT_GT(leader.Metric("shelfmark_master_ha_fenced_writes_total"), 0);
  auto exists = client->ExistKey("", "k");
  ASSERT_TRUE(exists.ok()) << ErrorCodeName(exists.error());
  EXPECT_TRUE(*exists);
  LookupClient lookup({leader.address(), "", 5000});
  EXPECT_TRUE(lookup.GetReplicaList("", "k").ok());
  auto started = client->PutStart("", "k2", 1000, {});
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error(), ErrorCode::NOT_LEADER);

  etcd_.Resume();
  HaMaster* serving = nullptr;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (HaMaster* m : pair) {
          if (m->Client()->Remove("", "absent") == ErrorCode::OBJECT_NOT_FOUND) serving = m;
        }
        return serving != nullptr;
      },
      kDeadlineMs))
      << "a leader (the same or the other) admits mutations again";
  MountAndPut(*serving, "seg-after", "k3");
}

TEST_F(HaProcessTest, SecondMasterWithTheSamePublishedAddressRefusesToStart) {
  const std::string taken = "--rpc_advertise_address=127.0.0.1:" +
                            std::to_string(testing::FreePort());
  std::vector<std::string> flags = HaFlags();
  flags.push_back(taken);
  testing::ServicePorts ports;
  auto first = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, dir_.Join("first.log"), &ports);
  ASSERT_NE(first, nullptr) << ReadFile(dir_.Join("first.log"));
  const std::string err = dir_.Join("second.log");
  flags.insert(flags.begin(), {"--rpc_port=0", "--metrics_port=0"});
  ChildProcess second(SHELFMARK_MASTER_BIN, flags, err);
  EXPECT_EQ(second.Wait(kDeadlineMs), 1);
  const std::string log = ReadFile(err);
  EXPECT_NE(log.find("another master of cluster ha_test publishes 127.0.0.1:"),
            std::string::npos) << log;
  EXPECT_NE(log.find("--rpc_advertise_address"), std::string::npos) << log;
  EXPECT_EQ(testing::ScrapeMetric(ports.http, "shelfmark_master_ha_role"), 1)
      << "the first master is untouched";
}

TEST_F(HaProcessTest, UnreachableEtcdAtStartIsAnErrorNamingTheFlag) {
  const std::string err = dir_.Join("unreachable.log");
  const std::string nowhere = "127.0.0.1:" + std::to_string(testing::FreePort());
  ChildProcess master(SHELFMARK_MASTER_BIN,
                      {"--rpc_port=0", "--metrics_port=0", "--enable_ha",
                       "--etcd_endpoints=" + nowhere, "--rpc_address=127.0.0.1"},
                      err);
  EXPECT_EQ(master.Wait(kDeadlineMs), 1);
  const std::string log = ReadFile(err);
  EXPECT_NE(log.find("--etcd_endpoints=" + nowhere), std::string::npos) << log;
  EXPECT_NE(log.find("etcd did not answer"), std::string::npos) << log;
}

TEST_F(HaProcessTest, BadHaFlagsAreErrorsNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::string etcd = "--etcd_endpoints=" + etcd_.endpoint();
  const std::vector<Case> cases = {
      {{"--enable_ha", etcd, "--ha_backend_type=redis"}, "--ha_backend_type"},
      {{"--enable_ha", "--rpc_address=127.0.0.1"}, "--etcd_endpoints"},
      {{"--enable_ha", etcd}, "--rpc_advertise_address"},  // wildcard bind address
      {{"--enable_ha", etcd, "--ha_backend_connstring=127.0.0.1:1"}, "--ha_backend_connstring"},
      {{"--enable_ha", "--etcd_endpoints=nope"}, "--etcd_endpoints"},
      {{"--enable_ha", etcd, "--ha_lease_ttl_s=1", "--ha_safety_margin_ms=1000"},
       "--ha_safety_margin_ms"},
  };
  for (const Case& c : cases) {
    const std::string err = dir_.Join("bad.err");
    ChildProcess master(SHELFMARK_MASTER_BIN, c.args, err);
    EXPECT_EQ(master.Wait(kDeadlineMs), 2) << c.names;
    EXPECT_NE(ReadFile(err).find(c.names), std::string::npos) << ReadFile(err);
  }
}

}  // namespace
}  // namespace shelfmark
