#include "perf/master_report.h"

#include <gtest/gtest.h>

namespace shelfmark {
namespace {

MasterResult Sample() {
  MasterResult r;
  r.op = "get_replica_list";
  r.batch = 128;
  r.connections = 16;
  r.key_size = 64;
  r.value_size = 64;
  r.seconds = 2.0;
  r.calls = 1000;
  r.keys = 128000;
  r.p50_us = 101.25;
  r.p99_us = 450.0;
  r.max_us = 900.0;
  return r;
}

TEST(MasterResultJson, ThroughputLine) {
  EXPECT_EQ(MasterResultJson(Sample()),
            "{\"bench\":\"master\",\"op\":\"get_replica_list\",\"batch\":128,"
            "\"connections\":16,\"keys_per_s\":64000.0,\"p50_us\":101.2,\"p99_us\":450.0,"
            "\"errors\":0,\"max_us\":900.0,\"calls\":1000,\"keys\":128000,\"seconds\":2.000,"
            "\"key_size\":64,\"value_size\":64}");
}

TEST(MasterResultJson, MemoryLineAndFlags) {
  MasterResult r = Sample();
  r.op = "memory";
  r.interrupted = true;
  MemoryFigures m;
  m.objects = 1000;
  m.rss_before = 1'000'000;
  m.rss_after = 1'250'000;
  m.key_count_before = 0;
  m.key_count_after = 1000;
  m.average_key_bytes = 64;
  r.memory = m;
  std::string j = MasterResultJson(r);
  EXPECT_NE(j.find("\"op\":\"memory\""), std::string::npos);
  EXPECT_NE(j.find("\"objects\":1000,\"bytes_per_object\":250.0,"
                   "\"overhead_beyond_key_bytes\":186.0,\"rss_before\":1000000,"
                   "\"rss_after\":1250000"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"interrupted\":true"), std::string::npos);
  EXPECT_EQ(j.find("capped"), std::string::npos);
  EXPECT_EQ(j.find('\n'), std::string::npos);
}

TEST(MemoryFigures, ShrinkingRssIsNegativeAndEmptyIsZero) {
  MemoryFigures m;
  EXPECT_EQ(m.bytes_per_object(), 0);
  m.objects = 10;
  m.rss_before = 1000;
  m.rss_after = 900;
  EXPECT_EQ(m.bytes_per_object(), -10);
}

TEST(MasterResultTable, RowAlignsWithHeader) {
  std::string header = MasterResultTableHeader();
  std::string row = MasterResultTableRow(Sample());
  EXPECT_EQ(header.find("errors") + 6, row.find(" 0  ") + 2);  // right-aligned column
  EXPECT_NE(row.find("64000"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
