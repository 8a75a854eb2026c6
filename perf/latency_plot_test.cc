#include "perf/latency_plot.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

namespace shelfmark {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class LatencyPlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shelfmark-plot-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const char* f : {"/p.png", "/p.png.dat", "/p.png.gp"}) unlink((dir_ + f).c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
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
  ASSERT_TRUE(WriteLatencyPlot(series, dir_ + "/p.png", &error)) << error;
  const std::string png = Slurp(dir_ + "/p.png");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  const std::string script = Slurp(dir_ + "/p.png.gp");
  EXPECT_NE(script.find("index 1"), std::string::npos);
  EXPECT_NE(script.find("'local_disk 4096 ''quoted'''"), std::string::npos);
  // Downsampled, the last point is the maximum at share 1.
  const std::string data = Slurp(dir_ + "/p.png.dat");
  EXPECT_NE(data.find("200 1\n"), std::string::npos);
}

TEST_F(LatencyPlotTest, RejectsEmptyInputAndUnwritablePaths) {
  std::string error;
  EXPECT_FALSE(WriteLatencyPlot({}, dir_ + "/p.png", &error));
  EXPECT_NE(error.find("nothing"), std::string::npos);
  EXPECT_FALSE(WriteLatencyPlot({{"empty", {}}}, dir_ + "/p.png", &error));
  EXPECT_NE(error.find("empty"), std::string::npos);
  EXPECT_FALSE(WriteLatencyPlot({{"a", {1, 2}}}, dir_ + "/missing/p.png", &error));
  EXPECT_NE(error.find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
