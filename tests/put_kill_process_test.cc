// A client killed between PutStart and PutEnd on the framed channel
// (rpc/mutation_wire.h) against a real shelfmark-master process: the
// object is never visible (no lookup or existence check sees it), its
// allocation stays held while the put is young, and once the put is older
// than --put_start_discard_timeout_sec a new put of the key reclaims it:
// the killed client's range is freed (allocated bytes count only the new
// object) and the new object is the one readers see.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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

// The child: PutStart of `key` over the channel, reports the outcome on
// `report` ('s': started, 'f': failed) and waits to be killed.
[[noreturn]] void PutStartAndHang(uint16_t rpc, const UUID& id, int report) {
  LookupClient channel({"127.0.0.1:" + std::to_string(rpc), "", 5000});
  const bool started = channel.PutStart(id, "", "victim", kSize, {}).ok();
  const char c = started ? 's' : 'f';
  if (::write(report, &c, 1) != 1) ::_exit(3);
  while (true) ::pause();
}

TEST(PutKillProcess, AKilledPutIsNeverVisibleAndIsReclaimedAfterTheDiscardTimeout) {
  // A fresh log: StartMaster reads the ports the master prints there.
  testing::TempDir dir("put_kill");
  testing::ServicePorts ports;
  auto master = testing::StartMaster(
      SHELFMARK_MASTER_BIN, {"--put_start_discard_timeout_sec=1", "--client_ttl=600"},
      dir.Join("master.log"), &ports);
  ASSERT_NE(master, nullptr);
  MasterClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(ports.rpc);
  MasterClient reader(options);
  ASSERT_EQ(reader.MountSegment(MakeTestSegment("seg", 1 << 20, 1 << 20, "127.0.0.1:1")),
            ErrorCode::OK);

  // fork() copies only the calling thread: the child may run only if it is
  // the one there is.
  ASSERT_EQ(ThreadCount(), 1);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const UUID victim_id = UUID::Generate();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) PutStartAndHang(ports.rpc, victim_id, pipe_fds[1]);
  ::close(pipe_fds[1]);
  char outcome = 0;
  ASSERT_EQ(::read(pipe_fds[0], &outcome, 1), 1);
  ::close(pipe_fds[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(outcome, 's') << "the killed client's PutStart failed";
  ASSERT_TRUE(WIFSIGNALED(status));

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

}  // namespace
}  // namespace shelfmark
