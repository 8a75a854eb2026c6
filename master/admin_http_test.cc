// AdminPages against a real Directory: each page's answer and shape, the
// refusals of bad parameters, the default tenant only, and a standby's 503.
#include "master/admin_http.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "directory/directory_test_util.h"
#include "service/http_client.h"

namespace shelfmark {
namespace {

class AdminPagesTest : public DirectoryFixture {
 protected:
  AdminPages Pages() {
    return AdminPages(*dir_, [this] { return role_; });
  }
  HttpResponse Get(std::string_view path, std::string_view query = "") {
    return Pages().Serve(path, query);
  }

  AdminRole role_;
};

TEST_F(AdminPagesTest, QueryKeyListsEachCompleteMemoryReplicaAsMooncakesDescriptor) {
  const Segment a = Mount(node_, "node-a:13000");
  const Segment b = Mount(UUID::Generate(), "node-b:13000");
  PutConfig two;
  two.replica_num = 2;
  ASSERT_EQ(Put("k/1 x", 4096, two), ErrorCode::OK);
  HttpResponse r = Get("/query_key", "key=k%2F1+x");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4");
  for (const Segment& s : {a, b}) {
    const std::string line = "{\"size_\":4096,\"buffer_address_\":" + std::to_string(s.base) +
                             ",\"protocol_\":\"ucx\",\"transport_endpoint_\":\"" + s.endpoint +
                             "\"}\n";
    EXPECT_NE(r.body.find(line), std::string::npos) << r.body;
  }
  EXPECT_EQ(std::count(r.body.begin(), r.body.end(), '\n'), 2) << r.body;
  auto info = dir_->Stat("", "k/1 x");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->lease_remaining_ms, 0) << "an admin query grants no lease";
}

TEST_F(AdminPagesTest, QueryKeyAnswersMooncakesNotFoundAndNotReady) {
  Mount(node_, "node-a:13000");
  HttpResponse missing = Get("/query_key", "key=nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "OBJECT_NOT_FOUND");
  ASSERT_TRUE(dir_->PutStart(writer_, "", "half", 100, {}).ok());  // not ended
  HttpResponse half = Get("/query_key", "key=half");
  EXPECT_EQ(half.status, 404);
  EXPECT_EQ(half.body, "REPLICA_IS_NOT_READY");
}

TEST_F(AdminPagesTest, KeysOfOtherTenantsAreNeitherListedNorFound) {
  Mount(node_, "node-a:13000");
  ASSERT_EQ(Put("shared", 100), ErrorCode::OK);
  ASSERT_EQ(Put("secret", 100, {}, "acme"), ErrorCode::OK);
  ASSERT_EQ(Put("shared", 100, {}, "acme"), ErrorCode::OK);
  HttpResponse all = Get("/get_all_keys");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.body, "shared\n");
  EXPECT_EQ(Get("/query_key", "key=secret").status, 404);
  EXPECT_EQ(Get("/query_key", "key=secret&tenant=acme").status, 400)
      << "no parameter reaches another tenant";
}

TEST_F(AdminPagesTest, GetAllKeysListsOneKeyALine) {
  EXPECT_EQ(Get("/get_all_keys").body, "");
  Mount(node_, "node-a:13000");
  for (const char* key : {"b", "a", "c"}) ASSERT_EQ(Put(key), ErrorCode::OK);
  HttpResponse r = Get("/get_all_keys");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "a\nb\nc\n");
}

TEST_F(AdminPagesTest, SegmentPagesCountWhatIsAllocated) {
  EXPECT_EQ(Get("/get_all_segments").body, "");
  EXPECT_EQ(Get("/get_segments_detail").body, "{\"total_segments\":0,\"segments\":[]}");
  const Segment a = Mount(node_, "node-a:13000", 1 << 20);
  ASSERT_EQ(Put("k", 4096), ErrorCode::OK);

  HttpResponse names = Get("/get_all_segments");
  EXPECT_EQ(names.status, 200);
  EXPECT_EQ(names.body, "node-a:13000\n");

  HttpResponse usage = Get("/query_segment", "segment=node-a%3A13000");
  ASSERT_EQ(usage.status, 200) << usage.body;
  EXPECT_EQ(usage.body, "node-a:13000\nUsed(bytes): 4096\nCapacity(bytes) : 1048576\n");

  HttpResponse detail = Get("/get_segments_detail");
  ASSERT_EQ(detail.status, 200);
  EXPECT_EQ(detail.content_type, "application/json; charset=utf-8");
  const std::string expected =
      "{\"total_segments\":1,\"segments\":[{\"segment_name\":\"node-a:13000\",\"segment_id\":\"" +
      a.id.ToString() + "\",\"client_id\":\"" + node_.ToString() +
      "\",\"base_address\":\"0x100000\",\"size_bytes\":1048576,\"size_human\":\"0.000976562 GiB\","
      "\"te_endpoint\":\"node-a:13000:1234\",\"protocol\":\"ucx\",\"status\":\"OK\","
      "\"allocator_used_bytes\":4096,\"allocator_capacity_bytes\":1048576,"
      "\"allocator_usage_percent\":0.390625}]}";
  EXPECT_EQ(detail.body, expected);

  // A draining segment (a graceful unmount's grace period) has Mooncake's
  // status for it.
  ASSERT_EQ(dir_->DrainSegment(node_, a.id), ErrorCode::OK);
  std::string draining = expected;
  draining.replace(draining.find("\"status\":\"OK\""), 13, "\"status\":\"GRACEFULLY_UNMOUNTING\"");
  EXPECT_EQ(Get("/get_segments_detail").body, draining);
}

TEST_F(AdminPagesTest, QuerySegmentSumsEverySegmentOfTheNameAndRefusesUnknownOnes) {
  Mount(node_, "node-a:13000", 1 << 20);
  Segment second = MakeTestSegment("node-a:13000", 0x900000, 1 << 20, "node-a:1235");
  ASSERT_EQ(dir_->MountSegment(node_, second), ErrorCode::OK);
  HttpResponse usage = Get("/query_segment", "segment=node-a:13000");
  EXPECT_EQ(usage.body, "node-a:13000\nUsed(bytes): 0\nCapacity(bytes) : 2097152\n");
  EXPECT_EQ(Get("/get_all_segments").body, "node-a:13000\nnode-a:13000\n");
  HttpResponse unknown = Get("/query_segment", "segment=nobody");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, "SEGMENT_NOT_FOUND");
}

TEST_F(AdminPagesTest, BadParametersAre400WithAMessageNamingThem) {
  struct Case {
    const char* path;
    const char* query;
    const char* says;
  };
  for (const Case& c : {Case{"/query_key", "", "missing query parameter 'key'"},
                        Case{"/query_key", "key=", "missing query parameter 'key'"},
                        Case{"/query_key", "kye=a", "unknown query parameter 'kye'"},
                        Case{"/query_key", "key=%zz", "percent escape"},
                        Case{"/query_key", "key=a&key=b", "'key' given more than once"},
                        Case{"/query_segment", "", "missing query parameter 'segment'"},
                        Case{"/get_all_keys", "limit=3", "unknown query parameter 'limit'"},
                        Case{"/role", "x=1", "unknown query parameter 'x'"}}) {
    HttpResponse r = Get(c.path, c.query);
    EXPECT_EQ(r.status, 400) << c.path << "?" << c.query;
    EXPECT_EQ(r.content_type, "application/json; charset=utf-8");
    EXPECT_EQ(r.body.rfind("{\"success\":false,\"error_code\":-600,\"error_message\":\"", 0), 0u)
        << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.path << "?" << c.query << " " << r.body;
  }
  HttpResponse too_long = Get("/query_key", "key=" + std::string(10'000, 'x'));
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_NE(too_long.body.find("INVALID_KEY"), std::string::npos) << too_long.body;
}

TEST_F(AdminPagesTest, RolePagesOfAMasterWithoutHa) {
  EXPECT_EQ(Get("/role").body, "leader");
  EXPECT_EQ(Get("/role").content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(Get("/ha_status").body, "serving");
  EXPECT_EQ(Get("/leader").body, "{\"present\":false}");
}

TEST_F(AdminPagesTest, AStandbyAnswersItsRoleAndRefusesDataPagesWith503) {
  role_.ha = true;
  role_.serving = false;
  role_.leader_address = "10.0.0.7:50051";
  role_.term = 42;
  EXPECT_EQ(Get("/role").body, "standby");
  EXPECT_EQ(Get("/ha_status").body, "standby");
  EXPECT_EQ(Get("/leader").body,
            "{\"present\":true,\"leader_address\":\"10.0.0.7:50051\",\"view_version\":42}");
  for (const char* path : {"/query_key", "/get_all_keys", "/get_all_segments",
                           "/get_segments_detail", "/query_segment"}) {
    const char* query = std::string(path) == "/query_key" ? "key=k"
                        : std::string(path) == "/query_segment" ? "segment=s"
                                                                : "";
    HttpResponse r = Get(path, query);
    EXPECT_EQ(r.status, 503) << path;
    EXPECT_EQ(r.body,
              "{\"success\":false,\"error_code\":-1410,\"error_message\":\"service plane is not "
              "active\"}")
        << path;
  }
  HttpResponse summary = Get("/metrics/summary");
  EXPECT_EQ(summary.status, 200);
  EXPECT_EQ(summary.body.rfind("role=standby, state=standby, service_ready=false, master={", 0), 0u)
      << summary.body;
  EXPECT_NE(summary.body.find(", leader=10.0.0.7:50051, view_version=42"), std::string::npos);
  role_.elected = true;  // won the election, still loading the standby copy
  EXPECT_EQ(Get("/role").body, "leader");
  EXPECT_EQ(Get("/ha_status").body, "leader_warmup");
  EXPECT_EQ(Get("/get_all_keys").status, 503);
}

TEST_F(AdminPagesTest, MetricsSummaryCarriesTheDirectorysFigures) {
  Mount(node_, "node-a:13000", 1 << 20);
  ASSERT_EQ(Put("k", 4096), ErrorCode::OK);
  HttpResponse r = Get("/metrics/summary");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            "role=leader, state=serving, service_ready=true, master={Storage: 4.00 KB / 1.00 MB "
            "(0.4%) | Keys: 1 | Clients: 1 | Segments: 1 | Evicted: keys=0, size=0.00 B}, "
            "ha={disabled}");
}

TEST_F(AdminPagesTest, JsonEscapesNamesAndUnknownPathsAre404) {
  Segment odd = MakeTestSegment("a\"b\\c\n", 0x100000, 1 << 20, "e:1");
  ASSERT_EQ(dir_->MountSegment(node_, odd), ErrorCode::OK);
  EXPECT_NE(Get("/get_segments_detail").body.find("\"segment_name\":\"a\\\"b\\\\c\\u000a\""),
            std::string::npos)
      << Get("/get_segments_detail").body;
  EXPECT_EQ(Get("/metrics").status, 404) << "/metrics is not an admin page";
  EXPECT_EQ(Get("/query_keys").status, 404);
}

TEST(AdminPagesInstall, EveryPageIsServedAndProtectedByTheToken) {
  ManualClock clock;
  auto directory = MakeTestDirectory(&clock);
  HttpServer http;
  AddAdminPages(http, *directory, AdminRoleOf(nullptr), "admin-token");
  auto port = http.Start(0);
  ASSERT_TRUE(port.ok());
  const HostPort where{"127.0.0.1", *port};
  for (const std::string& path : AdminPages::Paths()) {
    auto without = HttpGet(where, path);
    ASSERT_TRUE(without.ok()) << path;
    EXPECT_EQ(without->status, 401) << path;
    auto wrong = HttpGet(where, path, 5000, "Bearer admin-token-not");
    ASSERT_TRUE(wrong.ok()) << path;
    EXPECT_EQ(wrong->status, 401) << path;
    auto right = HttpGet(where, path + (path == "/query_key"       ? "?key=k"
                                        : path == "/query_segment" ? "?segment=s"
                                                                   : ""),
                         5000, "Bearer admin-token");
    ASSERT_TRUE(right.ok()) << path;
    EXPECT_NE(right->status, 401) << path;
    EXPECT_NE(right->status, 400) << path << " " << right->body;
  }
}

}  // namespace
}  // namespace shelfmark
