#include "perf/get_report.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark {
namespace {

GetRow DiskRow() {
  GetRow r;
  r.replica = "local_disk";
  r.protocol = "ucx";
  r.path = "ucx-am";
  r.size = 4096;
  r.get.count = 100;
  r.get.typical_us = 60;
  r.get.p99_us = 90;
  r.get.p999_us = 120.5;
  r.lookup_p50_us = 20;
  r.transfer_p50_us = 44;
  r.has_baselines = true;
  r.baseline_am_p50_us = 30;
  r.baseline_pread_p50_us = 10;
  r.cache_hits = 99;
  r.cache_misses = 1;
  return r;
}

TEST(GetReport, RatioIsTransferOverAmPlusPread) {
  GetRow r = DiskRow();
  EXPECT_DOUBLE_EQ(r.BaselineRatio(), 1.1);
  r.baseline_pread_p50_us = -1;
  EXPECT_EQ(r.BaselineRatio(), 0);
  r.has_baselines = false;
  EXPECT_EQ(r.BaselineRatio(), 0);
}

TEST(GetReport, JsonCarriesTheInterfaceFields) {
  const std::string json = GetRowJson(DiskRow());
  for (const char* field :
       {"\"bench\":\"get\"", "\"replica\":\"local_disk\"", "\"protocol\":\"ucx\"",
        "\"path\":\"ucx-am\"", "\"size\":4096", "\"iters\":100", "\"p50_us\":60.00",
        "\"p99_us\":90.00", "\"p999_us\":120.50",
        "\"lookup_p50_us\":20.00", "\"transfer_p50_us\":44.00", "\"baseline_am_p50_us\":30.00",
        "\"baseline_pread_p50_us\":10.00", "\"ratio\":1.100", "\"t_typical_us\":60.00",
        "\"location_cache\":true", "\"cache_hits\":99", "\"cache_misses\":1",
        "\"interrupted\":false"}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << " in " << json;
  }
  GetRow memory = DiskRow();
  memory.replica = "memory";
  memory.has_baselines = false;
  EXPECT_EQ(GetRowJson(memory).find("baseline"), std::string::npos);
  GetRow no_pread = DiskRow();
  no_pread.baseline_pread_p50_us = -1;
  EXPECT_NE(GetRowJson(no_pread).find("\"baseline_pread_p50_us\":null"), std::string::npos);
}

TEST(GetReport, TableRowLinesUpWithHeader) {
  GetRow r = DiskRow();
  r.interrupted = true;
  const std::string row = GetTableRow(r);
  EXPECT_EQ(row.rfind("local_disk", 0), 0u);
  EXPECT_NE(row.find("(interrupted)"), std::string::npos);
  EXPECT_EQ(GetTableRow(DiskRow()).size(), GetTableHeader().size());
  EXPECT_NE(GetTableHeader().find("path"), std::string::npos);
  GetRow same_host = DiskRow();
  same_host.replica = "memory";
  same_host.path = "same-host";
  same_host.has_baselines = false;
  EXPECT_NE(GetTableRow(same_host).find("memory     same-host "), std::string::npos);
  EXPECT_EQ(GetTableRow(same_host).size(), GetTableHeader().size());
  EXPECT_NE(GetTableRow(DiskRow()).find("  99.0 "), std::string::npos);
  GetRow off = DiskRow();
  off.location_cache = false;
  EXPECT_NE(GetTableRow(off).find("   off "), std::string::npos);
  EXPECT_EQ(GetTableRow(off).size(), GetTableHeader().size());
}

TEST(GetReport, ServedPathNamesTheCountersThatMoved) {
  EXPECT_EQ(ServedPath("memory", {0, 0, 3198}), "same-host");
  EXPECT_EQ(ServedPath("memory", {0, 1050, 0}), "ucx");
  EXPECT_EQ(ServedPath("memory", {1050, 0, 0}), "rdma");
  EXPECT_EQ(ServedPath("memory", {0, 2, 9}), "ucx+same-host");
  EXPECT_EQ(ServedPath("memory", {}), "none");
  EXPECT_EQ(ServedPath("local_disk", {}), "ucx-am");
  EXPECT_EQ(ServedPath("local_disk", {0, 0, 1}), "ucx-am+same-host");
}

TEST(GetReport, ThroughputIsKeysOverTheMeasuredSpan) {
  // 1000 gets of 4 KiB that took 1 us each: 1e6 gets/s, not a figure
  // capped by anything around the loop.
  const Throughput t = ThroughputOver(1000, 4096, 1'000'000);
  EXPECT_DOUBLE_EQ(t.ops_per_s, 1e6);
  EXPECT_DOUBLE_EQ(t.gbytes_per_s, 4.096);
  const Throughput none = ThroughputOver(1000, 4096, 0);
  EXPECT_EQ(none.ops_per_s, 0);
  EXPECT_EQ(none.gbytes_per_s, 0);
}

TEST(GetReport, CombinedSpanRunsFromFirstStartToLastEnd) {
  EXPECT_EQ(CombinedSpanNs({{100, 600}, {50, 400}, {200, 900}}), 850);
  EXPECT_EQ(CombinedSpanNs({{100, 600}, {0, -1}}), 500);  // a thread that timed nothing
  EXPECT_EQ(CombinedSpanNs({{0, -1}}), 0);
  EXPECT_EQ(CombinedSpanNs({}), 0);
}

}  // namespace
}  // namespace shelfmark
