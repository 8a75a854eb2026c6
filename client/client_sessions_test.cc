// The Client's put steps (StartPuts, WriteAt, EndPuts, RevokePuts) and
// ReadRanges of a kept location, against the real master service and real
// Nodes on loopback engines (client/client_test_util.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client/client.h"
#include "client/client_test_util.h"

namespace shelfmark {
namespace {

constexpr uint64_t kPage = 1000;
constexpr uint64_t kLayers = 4;

TEST_F(ClientTest, AnObjectWrittenInPiecesIsReadableOnlyAfterItsEnd) {
  StartNode("seg-a");
  Client& client = MakeClient();
  const std::string value = Pattern(kPage * kLayers, 3);
  Registered src(client, value.size());
  std::copy(value.begin(), value.end(), src.data());
  PutConfig config;
  config.replica_num = 1;
  auto started = client.StartPuts("t", {"k", "j"}, {value.size(), kPage}, config);
  ASSERT_EQ(started.size(), 2u);
  ASSERT_TRUE(started[0].ok() && started[1].ok());
  for (uint64_t layer = kLayers; layer-- > 0;) {  // any order
    const uint64_t at = layer * kPage;
    ASSERT_EQ(client.WriteAt(*started[0], value.size(), {{src.data() + at, kPage}}, {at}),
              ErrorCode::OK);
    EXPECT_FALSE(client.Get("t", "k").ok());  // not readable before the end
  }
  EXPECT_EQ(client.EndPuts("t", {"k"}), std::vector<ErrorCode>{ErrorCode::OK});
  auto got = client.Get("t", "k");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);  // no checksum was stored, so none is verified
  EXPECT_EQ(client.RevokePuts("t", {"j"}), std::vector<ErrorCode>{ErrorCode::OK});
  EXPECT_EQ(client.Exist("t", "j").value(), false);
  EXPECT_EQ(client.StartPuts("t", {"k"}, {8}, config)[0].error(),
            ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_NE(client.EndPuts("t", {"never-started"})[0], ErrorCode::OK);
  EXPECT_EQ(client.StartPuts("t", {"a", "b"}, {8}, config)[1].error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(ClientTest, WriteAtRefusesWhatLiesOutsideTheObjectOrRegisteredMemory) {
  StartNode("seg-a");
  Client& client = MakeClient();
  Registered src(client, kPage);
  auto started = client.StartPuts("t", {"k"}, {kPage}, PutConfig{});
  ASSERT_TRUE(started[0].ok());
  const auto& replicas = *started[0];
  EXPECT_EQ(client.WriteAt(replicas, kPage, {{src.data(), 10}}, {kPage - 9}),
            ErrorCode::INVALID_PARAMS);  // past the end
  EXPECT_EQ(client.WriteAt(replicas, kPage, {{src.data(), 10}}, {UINT64_MAX}),
            ErrorCode::INVALID_PARAMS);  // an offset that would overflow
  std::string outside(10, 'x');
  EXPECT_EQ(client.WriteAt(replicas, kPage, {{outside.data(), 10}}, {0}),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.WriteAt(replicas, kPage, {{src.data(), 10}}, {}), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.WriteAt(replicas, kPage, {{src.data(), 0}}, {kPage}), ErrorCode::OK);
  EXPECT_EQ(client.RevokePuts("t", {"k"})[0], ErrorCode::OK);
}

TEST_F(ClientTest, ReadRangesRidesTheLeaseOfTheLocationKept) {
  StartNode("seg-a");
  Client& client = MakeClient();
  const std::string value = Pattern(5000, 9);
  ASSERT_EQ(client.Put("t", "r", value), ErrorCode::OK);
  GetOptions fresh;
  fresh.use_location_cache = false;
  auto loc = client.Locate("t", "r", fresh);
  ASSERT_TRUE(loc.ok());
  Registered dst(client, 100);
  ASSERT_EQ(client.ReadRanges(*loc, {{4990, 10, dst.data()}, {0, 5, dst.data() + 20}}),
            ErrorCode::OK);
  EXPECT_EQ(dst.Str(0, 10), value.substr(4990));
  EXPECT_EQ(dst.Str(20, 5), value.substr(0, 5));
  EXPECT_EQ(client.ReadRanges(*loc, {{4991, 10, dst.data()}}), ErrorCode::INVALID_PARAMS);
  std::string outside(10, 'x');
  EXPECT_EQ(client.ReadRanges(*loc, {{0, 10, outside.data()}}), ErrorCode::INVALID_PARAMS);
  // Past the lease nothing is read: the memory may hold another object.
  client_clock_.AdvanceMs(kLeaseTtlMs);
  std::fill(dst.data(), dst.data() + 100, '\0');
  EXPECT_EQ(client.ReadRanges(*loc, {{0, 10, dst.data()}}), ErrorCode::LEASE_EXPIRED);
  EXPECT_EQ(dst.Str(0, 10), std::string(10, '\0'));
}

}  // namespace
}  // namespace shelfmark
