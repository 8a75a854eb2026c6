// The real shelfmark-master's admin pages (master/admin_http.h) over real
// HTTP: what SGLang's check_server and an operator's curl read after a real
// RPC mount and put, and --metrics_token_file guarding every page but
// /health against requests without the token or with a wrong one.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "directory/directory_test_util.h"
#include "rpc/master_client.h"
#include "service/http_client.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

constexpr const char* kToken = "admin-scrape-token-1";

// The admin pages with a query each one accepts.
const std::vector<std::string>& AdminTargets() {
  static const std::vector<std::string> targets = {
      "/query_key?key=k0",     "/get_all_keys", "/get_all_segments", "/get_segments_detail",
      "/query_segment?segment=seg-a", "/role", "/leader", "/ha_status", "/metrics/summary"};
  return targets;
}

class AdminProcessTest : public ::testing::Test {
 protected:
  // A master (with `flags`), one mounted segment and three keys put over RPC.
  void StartWithData(const std::vector<std::string>& flags) {
    master_ = testing::StartMaster(SHELFMARK_MASTER_BIN, flags, dir_.Join("master.err"), &ports_);
    ASSERT_NE(master_, nullptr) << testing::ReadFile(dir_.Join("master.err"));
    MasterClientOptions opts;
    opts.address = "127.0.0.1:" + std::to_string(ports_.rpc);
    client_ = std::make_unique<MasterClient>(opts);
    ASSERT_EQ(client_->MountSegment(MakeTestSegment("seg-a", 1 << 20, 1 << 20, "127.0.0.1:7")),
              ErrorCode::OK);
    for (int i = 0; i < 3; ++i) {
      const std::string key = "k" + std::to_string(i);
      ASSERT_TRUE(client_->PutStart("", key, 1000, {}).ok());
      ASSERT_EQ(client_->PutEnd("", key), ErrorCode::OK);
    }
  }

  HttpReply Get(const std::string& target, std::string_view authorization = {}) {
    auto reply = HttpGet(HostPort{"127.0.0.1", ports_.http}, target, 5000, authorization);
    EXPECT_TRUE(reply.ok()) << target;
    return reply.ok() ? *reply : HttpReply{-1, ""};
  }

  testing::TempDir dir_{"admin_process"};
  testing::ServicePorts ports_;
  std::unique_ptr<testing::ChildProcess> master_;
  std::unique_ptr<MasterClient> client_;
};

TEST_F(AdminProcessTest, PagesAnswerWhatTheMasterHolds) {
  StartWithData({});
  HttpReply segments = Get("/get_all_segments");  // SGLang's check_server probe
  EXPECT_EQ(segments.status, 200);
  EXPECT_EQ(segments.body, "seg-a\n");
  EXPECT_EQ(Get("/get_all_keys").body, "k0\nk1\nk2\n");
  HttpReply key = Get("/query_key?key=k1");
  EXPECT_EQ(key.status, 200);
  EXPECT_NE(key.body.find("{\"size_\":1000,\"buffer_address_\":"), std::string::npos) << key.body;
  EXPECT_NE(key.body.find("\"transport_endpoint_\":\"127.0.0.1:7\"}\n"), std::string::npos)
      << key.body;
  HttpReply missing = Get("/query_key?key=nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "OBJECT_NOT_FOUND");
  EXPECT_EQ(Get("/query_segment?segment=seg-a").body,
            "seg-a\nUsed(bytes): 3072\nCapacity(bytes) : 1048576\n");
  EXPECT_NE(Get("/get_segments_detail").body.find("\"total_segments\":1,"), std::string::npos);
  EXPECT_EQ(Get("/role").body, "leader");
  EXPECT_EQ(Get("/ha_status").body, "serving");
  EXPECT_EQ(Get("/leader").body, "{\"present\":false}");
  EXPECT_NE(Get("/metrics/summary").body.find("| Keys: 3 |"), std::string::npos);
  HttpReply bad = Get("/query_key?key=%zz");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("percent escape"), std::string::npos) << bad.body;
}

TEST_F(AdminProcessTest, TheMetricsTokenGuardsEveryAdminPageButHealth) {
  const std::string token_file = dir_.Join("metrics.token");
  testing::WriteFile(token_file, std::string(kToken) + "\n");
  ASSERT_EQ(chmod(token_file.c_str(), 0600), 0);
  StartWithData({"--metrics_token_file=" + token_file});
  for (const std::string& target : AdminTargets()) {
    for (std::string_view refused : {std::string_view(), std::string_view("Bearer wrong-token"),
                                     std::string_view("Bearer admin-scrape-token-12"),
                                     std::string_view("admin-scrape-token-1")}) {
      HttpReply r = Get(target, refused);
      EXPECT_EQ(r.status, 401) << target << " with '" << refused << "'";
      EXPECT_EQ(r.body.find("k0"), std::string::npos) << target;
      EXPECT_EQ(r.body.find("seg-a"), std::string::npos) << target;
    }
    HttpReply allowed = Get(target, std::string("Bearer ") + kToken);
    EXPECT_EQ(allowed.status, 200) << target << " " << allowed.body;
  }
  EXPECT_EQ(Get("/get_all_segments", std::string("Bearer ") + kToken).body, "seg-a\n");
  EXPECT_EQ(Get("/metrics").status, 401);
  EXPECT_EQ(Get("/health").status, 200) << "liveness stays open";
}

}  // namespace
}  // namespace shelfmark
