#include "perf/get_report.h"

#include <gtest/gtest.h>

#include <string>

namespace shelfmark {
namespace {

GetRow DiskRow() {
  GetRow r;
  r.replica = "local_disk";
  r.protocol = "ucx";
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
       {"\"bench\":\"get\"", "\"replica\":\"local_disk\"", "\"protocol\":\"ucx\"", "\"size\":4096",
        "\"iters\":100", "\"p50_us\":60.00", "\"p99_us\":90.00", "\"p999_us\":120.50",
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
  EXPECT_NE(GetTableRow(DiskRow()).find("  99.0 "), std::string::npos);
  GetRow off = DiskRow();
  off.location_cache = false;
  EXPECT_NE(GetTableRow(off).find("   off "), std::string::npos);
  EXPECT_EQ(GetTableRow(off).size(), GetTableHeader().size());
}

}  // namespace
}  // namespace shelfmark
