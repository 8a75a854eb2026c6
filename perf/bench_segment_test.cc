#include "perf/bench_segment.h"

#include <gtest/gtest.h>

#include <string>

#include "common/clock.h"
#include "common/host_port.h"
#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

TEST(BookkeepingSegmentTest, FreshIdNameAndAnEndpointOfItsOwnThatIsNoAddress) {
  const Segment a = BookkeepingSegment("failover", uint64_t{1} << 40, uint64_t{1} << 30);
  const Segment b = BookkeepingSegment("failover", uint64_t{1} << 40, uint64_t{1} << 30);
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(a.name, "failover-" + a.id.ToString());
  EXPECT_EQ(a.base, uint64_t{1} << 40);
  EXPECT_EQ(a.size, uint64_t{1} << 30);
  EXPECT_EQ(a.protocol, "tcp");
  EXPECT_TRUE(a.rkey.empty());
  EXPECT_NE(a.endpoint, b.endpoint);
  EXPECT_FALSE(ParseHostPort(a.endpoint).has_value()) << a.endpoint;
}

// Two benchmark processes mounting at one master (tests/ha_partition_test.cc
// runs two `shelfmark-perf failover` side by side): the second's mount must
// not be taken for a restart of the first, which would drop the first's
// segment and every object placed on it, whoever put them.
TEST(BookkeepingSegmentTest, ASecondBenchmarksMountKeepsTheObjectsOnTheFirstsSegment) {
  ManualClock clock;
  std::unique_ptr<Directory> dir = MakeTestDirectory(&clock);
  const Segment first = BookkeepingSegment("failover", uint64_t{1} << 40, uint64_t{1} << 30);
  ASSERT_EQ(dir->MountSegment(UUID::Generate(), first), ErrorCode::OK);
  // Another client's puts, placed on the only segment there is.
  const UUID writer = UUID::Generate();
  for (int i = 0; i < 4; ++i) {
    const std::string key = "put-" + std::to_string(i);
    ASSERT_TRUE(dir->PutStart(writer, "", key, 4096, {}).ok()) << key;
    ASSERT_EQ(dir->PutEnd(writer, "", key), ErrorCode::OK) << key;
  }
  const Segment second = BookkeepingSegment("failover", uint64_t{2} << 40, uint64_t{1} << 30);
  ASSERT_EQ(dir->MountSegment(UUID::Generate(), second), ErrorCode::OK);
  EXPECT_EQ(dir->Stats().segment_count, 2u);
  for (int i = 0; i < 4; ++i) {
    auto got = dir->GetReplicaList("", "put-" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << i << ": " << ErrorCodeName(got.error());
    EXPECT_EQ(got->replicas[0].memory.segment_id, first.id);
  }
}

}  // namespace
}  // namespace shelfmark
