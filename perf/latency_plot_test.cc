#include "perf/latency_plot.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ReadFile;

class LatencyPlotTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"latency_plot"};
};

TEST_F(LatencyPlotTest, DrawsOnePngWithACurvePerSeries) {
  std::vector<LatencySeries> series(2);
  series[0].title = "memory 4096";
  series[1].title = "local_disk 4096 'quoted'";
  for (int64_t i = 1; i <= 5000; ++i) {
    series[0].latencies_ns.push_back(i * 10);
    series[1].latencies_ns.push_back(i * 40);
  }
  std::string error;
  ASSERT_TRUE(WriteLatencyPlot(series, dir_.Join("p.png"), &error)) << error;
  const std::string png = ReadFile(dir_.Join("p.png"));
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  const std::string script = ReadFile(dir_.Join("p.png.gp"));
  EXPECT_NE(script.find("index 1"), std::string::npos);
  EXPECT_NE(script.find("'local_disk 4096 ''quoted'''"), std::string::npos);
  // Downsampled, the last point is the maximum at share 1.
  const std::string data = ReadFile(dir_.Join("p.png.dat"));
  EXPECT_NE(data.find("200 1\n"), std::string::npos);
}

TEST_F(LatencyPlotTest, RejectsEmptyInputAndUnwritablePaths) {
  std::string error;
  EXPECT_FALSE(WriteLatencyPlot({}, dir_.Join("p.png"), &error));
  EXPECT_NE(error.find("nothing"), std::string::npos);
  EXPECT_FALSE(WriteLatencyPlot({{"empty", {}}}, dir_.Join("p.png"), &error));
  EXPECT_NE(error.find("empty"), std::string::npos);
  EXPECT_FALSE(WriteLatencyPlot({{"a", {1, 2}}}, dir_.Join("missing/p.png"), &error));
  EXPECT_NE(error.find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
