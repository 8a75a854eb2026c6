// The admin role pages (master/admin_http.h) of two real shelfmark-master
// processes with --enable_ha on a real etcd: the leader says so and names
// itself, the standby names the leader and refuses the data pages (503),
// as Mooncake's standby does.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "service/http_client.h"
#include "testing/etcd_process.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

constexpr int kDeadlineMs = 30'000;

struct Master {
  std::unique_ptr<testing::ChildProcess> process;
  testing::ServicePorts ports;
};

HttpReply Get(const Master& m, const std::string& target) {
  auto reply = HttpGet(HostPort{"127.0.0.1", m.ports.http}, target);
  return reply.ok() ? *reply : HttpReply{-1, ""};
}

TEST(AdminHaProcess, LeaderAndStandbyAnswerTheirRolesAndTheStandbyRefusesData) {
  testing::TempDir dir("admin_ha_process");
  testing::EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start()) << etcd.StartFailure();
  const std::vector<std::string> flags = {"--enable_ha", "--etcd_endpoints=" + etcd.endpoint(),
                                          "--rpc_address=127.0.0.1", "--cluster_id=admin_ha"};
  Master a, b;
  a.process = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, dir.Join("a.log"), &a.ports);
  ASSERT_NE(a.process, nullptr) << testing::ReadFile(dir.Join("a.log"));
  b.process = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, dir.Join("b.log"), &b.ports);
  ASSERT_NE(b.process, nullptr) << testing::ReadFile(dir.Join("b.log"));

  auto serving = [](const Master& m) { return Get(m, "/ha_status").body == "serving"; };
  ASSERT_TRUE(testing::WaitFor([&] { return serving(a) != serving(b); }, kDeadlineMs))
      << "exactly one master serves";
  const Master& leader = serving(a) ? a : b;
  const Master& standby = serving(a) ? b : a;
  const std::string address = "127.0.0.1:" + std::to_string(leader.ports.rpc);

  EXPECT_EQ(Get(leader, "/role").body, "leader");
  EXPECT_EQ(Get(standby, "/role").body, "standby");
  EXPECT_EQ(Get(standby, "/ha_status").body, "standby");
  // The standby learns the leader from its election view: wait for it.
  for (const Master* m : {&leader, &standby}) {
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          const std::string body = Get(*m, "/leader").body;
          return body.rfind("{\"present\":true,\"leader_address\":\"" + address +
                                "\",\"view_version\":",
                            0) == 0;
        },
        kDeadlineMs))
        << Get(*m, "/leader").body;
  }
  EXPECT_EQ(Get(leader, "/get_all_segments").status, 200);
  HttpReply refused = Get(standby, "/get_all_segments");
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.body.find("service plane is not active"), std::string::npos) << refused.body;
  const std::string summary = Get(standby, "/metrics/summary").body;
  EXPECT_EQ(summary.rfind("role=standby, state=standby, service_ready=false,", 0), 0u) << summary;
  EXPECT_NE(summary.find("ha={enabled}, leader=" + address), std::string::npos) << summary;
  if (HasFailure()) std::fprintf(stderr, "%s", testing::LogTails(dir.path(), ".log").c_str());
}

}  // namespace
}  // namespace shelfmark
