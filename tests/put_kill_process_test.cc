// A client killed between PutStart and PutEnd on the framed channel
// (rpc/mutation_wire.h) against a real shelfmark-master process: the
// object is never visible (no lookup or existence check sees it), its
// allocation stays held while the put is young, and once the put is older
// than --put_start_discard_timeout_sec a new put of the key reclaims it:
// the killed client's range is freed (allocated bytes count only the new
// object) and the new object is the one readers see.
//
// The one-round-trip put's steps (ReservePut, the write, CommitPut) and
// their batch forms: a client killed after its reservations leaves nothing
// visible and their ranges held until --put_reservation_ttl_sec, then given
// back; a master killed
// and started again on its port knows no reservation (the commit is
// LEASE_EXPIRED, nothing is created) and the client sees its connection
// ended, so it never writes into a range the new master may give away.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/uuid.h"
#include "rpc/lookup_client.h"
#include "rpc/master_client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "directory/directory_test_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

constexpr uint64_t kSize = 4096;

// The number of threads of this process (/proc/self/status).
int ThreadCount() {
  const std::string status = testing::ReadFile("/proc/self/status");
  const size_t at = status.find("Threads:");
  return at == std::string::npos ? -1 : std::atoi(status.c_str() + at + 8);
}

// Forks a child that runs `child(report)` (it writes one byte to `report`,
// then waits), reads that byte into *outcome, then kills the child with
// SIGKILL and reaps it.
template <typename Child>
void RunThenKill(Child child, char* outcome) {
  // fork() copies only the calling thread: the child may run only if it is
  // the one there is.
  ASSERT_EQ(ThreadCount(), 1);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) child(pipe_fds[1]);  // never returns
  ::close(pipe_fds[1]);
  ASSERT_EQ(::read(pipe_fds[0], outcome, 1), 1);
  ::close(pipe_fds[0]);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
}

// The child: PutStart of `key` over the channel, reports the outcome on
// `report` ('s': started, 'f': failed) and waits to be killed.
[[noreturn]] void PutStartAndHang(uint16_t rpc, const UUID& id, int report) {
  LookupClient channel({"127.0.0.1:" + std::to_string(rpc), "", 5000});
  const bool started = channel.PutStart(id, "", "victim", kSize, {}).ok();
  const char c = started ? 's' : 'f';
  if (::write(report, &c, 1) != 1) ::_exit(3);
  while (true) ::pause();
}

// A shelfmark-master started with `flags` (its log in `dir`: StartMaster
// reads the ports it prints there) and a 1 MiB segment mounted by `reader`.
struct MasterWithSegment {
  MasterWithSegment(const testing::TempDir& dir, const std::vector<std::string>& flags)
      : process(testing::StartMaster(SHELFMARK_MASTER_BIN, flags, dir.Join("master.log"), &ports)) {
    options.address = "127.0.0.1:" + std::to_string(ports.rpc);
  }
  // Mounts the segment; call under ASSERT_NO_FATAL_FAILURE.
  void Mount() {
    ASSERT_NE(process, nullptr);
    reader.emplace(options);
    ASSERT_EQ(reader->MountSegment(MakeTestSegment("seg", 1 << 20, 1 << 20, "127.0.0.1:1")),
              ErrorCode::OK);
  }
  testing::ServicePorts ports;
  std::unique_ptr<testing::ChildProcess> process;
  MasterClientOptions options;
  std::optional<MasterClient> reader;
};

TEST(PutKillProcess, AKilledPutIsNeverVisibleAndIsReclaimedAfterTheDiscardTimeout) {
  testing::TempDir dir("put_kill");
  MasterWithSegment m(dir, {"--put_start_discard_timeout_sec=1", "--client_ttl=600"});
  ASSERT_NO_FATAL_FAILURE(m.Mount());
  const testing::ServicePorts& ports = m.ports;
  const MasterClientOptions& options = m.options;
  MasterClient& reader = *m.reader;

  const UUID victim_id = UUID::Generate();
  char outcome = 0;
  ASSERT_NO_FATAL_FAILURE(RunThenKill(
      [&](int report) { PutStartAndHang(ports.rpc, victim_id, report); }, &outcome));
  ASSERT_EQ(outcome, 's') << "the killed client's PutStart failed";

  // Never visible, over the channel or Cap'n Proto.
  EXPECT_EQ(reader.GetReplicaList("", "victim").error(), ErrorCode::REPLICA_IS_NOT_READY);
  auto exists = reader.ExistKey("", "victim");
  ASSERT_TRUE(exists.ok());
  EXPECT_FALSE(*exists);
  MasterClientOptions capnp_options = options;
  capnp_options.lookup_channel = false;
  MasterClient capnp(capnp_options);
  EXPECT_EQ(capnp.GetReplicaList("", "victim").error(), ErrorCode::REPLICA_IS_NOT_READY);
  // Its range is held.
  EXPECT_EQ(testing::ScrapeMetric(ports.http, "shelfmark_master_allocated_bytes"), kSize);

  // Once the put is older than the discard timeout, a new put reclaims it.
  MasterClient writer(options);
  ErrorCode last = ErrorCode::OK;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto r = writer.PutStart("", "victim", 2 * kSize, {});
        last = r.ok() ? ErrorCode::OK : r.error();
        return r.ok();
      },
      20'000))
      << "last PutStart: " << ErrorCodeName(last);
  EXPECT_EQ(last, ErrorCode::OK);
  // The killed client's range was freed: only the new object's is held.
  EXPECT_EQ(testing::ScrapeMetric(ports.http, "shelfmark_master_allocated_bytes"), 2 * kSize);
  EXPECT_EQ(reader.GetReplicaList("", "victim").error(), ErrorCode::REPLICA_IS_NOT_READY);
  ASSERT_EQ(writer.PutEnd("", "victim"), ErrorCode::OK);
  auto seen = reader.GetReplicaList("", "victim");
  ASSERT_TRUE(seen.ok()) << ErrorCodeName(seen.error());
  EXPECT_EQ(seen->size, 2 * kSize);
  // The killed client's PutEnd, were it to come now, finds no put of its own.
  LookupClient late({options.address, "", 5000});
  EXPECT_EQ(late.PutFinish(true, victim_id, "", "victim", ReplicaType::MEMORY),
            ErrorCode::ILLEGAL_CLIENT);
}

// The child: a reservation for one put of kSize and a batch's for two,
// reports ('r' / 'f') on `report` and waits to be killed before it commits.
[[noreturn]] void ReserveAndHang(uint16_t rpc, const UUID& id, int report) {
  LookupClient channel({"127.0.0.1:" + std::to_string(rpc), "", 5000});
  const bool reserved = channel.ReservePut(id, "", kSize, {}).ok() &&
                        channel.BatchReservePut(id, "", {kSize, kSize}, {}).ok();
  const char c = reserved ? 'r' : 'f';
  if (::write(report, &c, 1) != 1) ::_exit(3);
  while (true) ::pause();
}

uint64_t Metric(uint16_t http, const char* name) { return testing::ScrapeMetric(http, name); }

TEST(PutKillProcess, AClientKilledBeforeItsCommitLeavesNothingAndItsRangeGoesBack) {
  testing::TempDir dir("reserve_kill");
  // (Three reservations of 4 KiB: over the default 1% of the 1 MiB segment.)
  MasterWithSegment m(
      dir, {"--put_reservation_ttl_sec=1", "--client_ttl=600", "--put_reservation_share=0.05"});
  ASSERT_NO_FATAL_FAILURE(m.Mount());
  const testing::ServicePorts& ports = m.ports;
  const MasterClientOptions& options = m.options;
  MasterClient& reader = *m.reader;
  const UUID victim_id = UUID::Generate();
  char outcome = 0;
  ASSERT_NO_FATAL_FAILURE(RunThenKill(
      [&](int report) { ReserveAndHang(ports.rpc, victim_id, report); }, &outcome));
  ASSERT_EQ(outcome, 'r') << "the killed client's ReservePut failed";

  // Nothing visible; the range is held, then given back at the deadline.
  auto count = reader.CountKeys("", true);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 0u);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return Metric(ports.http, "shelfmark_master_put_reservations_held") == 0; }, 20'000));
  EXPECT_EQ(Metric(ports.http, "shelfmark_master_allocated_bytes"), 0u);
  EXPECT_EQ(Metric(ports.http, "shelfmark_master_put_reservations_released_total"), 3u);
  // Its commits, were they to come now, create nothing (whatever the ids).
  LookupClient late({options.address, "", 5000});
  auto committed = late.CommitPut(victim_id, "", "victim", 1, false, {});
  EXPECT_EQ(committed.error(), ErrorCode::LEASE_EXPIRED);
  auto batch = late.BatchCommitPut(victim_id, "", {"v2", "v3"}, {2, 3}, {}, false, {});
  ASSERT_TRUE(batch.ok()) << ErrorCodeName(batch.error());
  for (const auto& r : *batch) EXPECT_EQ(r.error(), ErrorCode::LEASE_EXPIRED);
  for (const char* key : {"victim", "v2", "v3"}) {
    EXPECT_EQ(reader.GetReplicaList("", key).error(), ErrorCode::OBJECT_NOT_FOUND) << key;
  }
}

TEST(PutKillProcess, AMasterRestartedBetweenTheStepsKnowsNoReservation) {
  testing::TempDir dir("reserve_restart");
  testing::ServicePorts ports;
  auto master = testing::StartMaster(SHELFMARK_MASTER_BIN,
                                     {"--client_ttl=600", "--put_reservation_share=0.05"},
                                     dir.Join("master.1.log"), &ports);
  ASSERT_NE(master, nullptr);
  const std::string address = "127.0.0.1:" + std::to_string(ports.rpc);
  const Segment segment = MakeTestSegment("seg", 1 << 20, 1 << 20, "127.0.0.1:1");
  {
    MasterClientOptions options;
    options.address = address;
    MasterClient node(options);
    ASSERT_EQ(node.MountSegment(segment), ErrorCode::OK);
  }
  const UUID writer = UUID::Generate();
  LookupClient channel({address, "", 5000});
  auto grant = channel.ReservePut(writer, "", kSize, {});
  ASSERT_TRUE(grant.ok()) << ErrorCodeName(grant.error());
  auto batch_grant = channel.BatchReservePut(writer, "", {kSize, kSize}, {});
  ASSERT_TRUE(batch_grant.ok()) << ErrorCodeName(batch_grant.error());
  const uint64_t granted_on = channel.IntactConnection();
  EXPECT_NE(granted_on, 0u);

  master->Signal(SIGKILL);
  ASSERT_NE(master->Wait(10'000), -1);
  // The connection the grant came on is over: the client would not use it.
  ASSERT_TRUE(testing::WaitFor([&] { return channel.IntactConnection() == 0; }, 10'000));

  testing::ServicePorts again;
  master = testing::StartMaster(SHELFMARK_MASTER_BIN,
                                {"--client_ttl=600", "--rpc_port=" + std::to_string(ports.rpc)},
                                dir.Join("master.2.log"), &again);
  ASSERT_NE(master, nullptr);
  ASSERT_EQ(again.rpc, ports.rpc);
  {
    MasterClientOptions options;
    options.address = address;
    MasterClient node(options);
    ASSERT_EQ(node.MountSegment(segment), ErrorCode::OK);
    // A late commit of the old grant (its bytes written) creates nothing.
    auto committed = channel.CommitPut(writer, "", "k", grant->id, true, {});
    EXPECT_EQ(committed.error(), ErrorCode::LEASE_EXPIRED);
    EXPECT_NE(channel.IntactConnection(), granted_on) << "a new connection";
    EXPECT_EQ(node.GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
    auto batch = channel.BatchCommitPut(writer, "", {"b0", "b1"},
                                        {(*batch_grant)[0].id, (*batch_grant)[1].id}, {}, true, {});
    ASSERT_TRUE(batch.ok()) << ErrorCodeName(batch.error());
    for (const auto& r : *batch) EXPECT_EQ(r.error(), ErrorCode::LEASE_EXPIRED);
    EXPECT_EQ(node.GetReplicaList("", "b0").error(), ErrorCode::OBJECT_NOT_FOUND);
    EXPECT_EQ(Metric(again.http, "shelfmark_master_allocated_bytes"), 0u);
  }
}

}  // namespace
}  // namespace shelfmark
