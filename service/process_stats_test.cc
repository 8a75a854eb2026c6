#include "service/process_stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <memory>

namespace shelfmark {
namespace {

TEST(ProcessStats, ResidentMemoryGrowsWhenPagesAreTouched) {
  uint64_t before = ProcessResidentMemoryBytes();
  ASSERT_GT(before, 0u);
  constexpr size_t kBytes = 64 << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  volatile char* pages = block.get();
  for (size_t i = 0; i < kBytes; i += 4096) pages[i] = 1;  // volatile: cannot be elided
  uint64_t after = ProcessResidentMemoryBytes();
  EXPECT_GE(after, before + kBytes / 2) << "before " << before << " after " << after;
}

TEST(ProcessStats, CpuSecondsAdvanceWhenBurningCpu) {
  double start = ProcessCpuSeconds();
  ASSERT_GE(start, 0.0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  volatile uint64_t sink = 0;
  while (ProcessCpuSeconds() < start + 0.05 && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 1'000'000; ++i) sink = sink + i;
  }
  EXPECT_GE(ProcessCpuSeconds(), start + 0.05);
}

TEST(ProcessStats, StartTimeIsThisProcessesStart) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double start = ProcessStartTimeSeconds();
  // btime has whole seconds and is derived from the uptime: allow a little.
  EXPECT_LE(start, now + 2);
  EXPECT_GT(start, now - 3600) << "started more than an hour ago?";
}

TEST(ProcessStats, RegistersStandardMetrics) {
  MetricsRegistry registry;
  AddProcessMetrics(registry);
  std::string text = registry.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE process_resident_memory_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("\nprocess_resident_memory_bytes "), std::string::npos) << text;
  EXPECT_EQ(text.find("\nprocess_resident_memory_bytes 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("\nprocess_cpu_seconds_total "), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE process_start_time_seconds gauge\n"), std::string::npos);
}

}  // namespace
}  // namespace shelfmark
