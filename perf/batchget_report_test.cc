#include "perf/batchget_report.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

TEST(BatchGetReportTest, GigabytesPerSecondIsBytesPerNanosecond) {
  EXPECT_DOUBLE_EQ(GigabytesPerSecond(1'000'000'000, 1'000'000'000), 1.0);
  EXPECT_DOUBLE_EQ(GigabytesPerSecond(64ull * 262144, 1'000'000), 16.777216);
  EXPECT_EQ(GigabytesPerSecond(100, 0), 0);
}

TEST(BatchGetReportTest, JsonNamesEveryFieldAndNullsTheLocalOnesWithoutASegment) {
  BatchGetRow row;
  row.protocol = "ucx";
  row.objects = 64;
  row.size = 262144;
  row.iters = 10;
  row.batch_p50_us = 1234.5;
  row.batch_gbps = 12.25;
  EXPECT_EQ(BatchGetJson(row),
            "{\"bench\":\"batchget\",\"protocol\":\"ucx\",\"objects\":64,\"size\":262144,"
            "\"iters\":10,\"batch_p50_us\":1234.50,\"batch_p99_us\":0.00,\"batch_gbps\":12.250,"
            "\"local_get_gbps\":null,\"memcpy_gbps\":null,\"local_vs_memcpy\":null,"
            "\"local_copies\":null}");
  row.local = true;
  row.local_get_gbps = 5;
  row.memcpy_gbps = 10;
  row.local_copies = 7;
  const std::string json = BatchGetJson(row);
  EXPECT_NE(json.find("\"local_vs_memcpy\":0.500"), std::string::npos) << json;
  EXPECT_NE(json.find("\"local_copies\":7}"), std::string::npos) << json;
}

}  // namespace
}  // namespace shelfmark
