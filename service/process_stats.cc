#include "service/process_stats.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace shelfmark {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Fields `first`..`last` (1-based, as proc(5) numbers them) of
// /proc/self/stat as numbers; empty when unreadable. Field 2 (comm) is
// parenthesised and may hold spaces or ')': parsing starts after the last
// ')', at field 3 (state), which is not a number and is skipped.
std::vector<uint64_t> StatFields(int first, int last) {
  std::string stat = ReadFile("/proc/self/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 1));
  std::string token;
  for (int field = 3; field < first; ++field) {
    if (!(fields >> token)) return {};
  }
  std::vector<uint64_t> out(static_cast<size_t>(last - first + 1));
  for (uint64_t& v : out) {
    if (!(fields >> v)) return {};
  }
  return out;
}

}  // namespace

uint64_t ProcessResidentMemoryBytes() {
  std::istringstream statm(ReadFile("/proc/self/statm"));
  uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? resident_pages * static_cast<uint64_t>(page) : 0;
}

double ProcessCpuSeconds() {
  // utime and stime are fields 14 and 15.
  std::vector<uint64_t> f = StatFields(14, 15);
  long ticks = sysconf(_SC_CLK_TCK);
  if (f.empty() || ticks <= 0) return 0;
  return static_cast<double>(f[0] + f[1]) / static_cast<double>(ticks);
}

double ProcessStartTimeSeconds() {
  // starttime (field 22) counts clock ticks since boot; /proc/stat's btime
  // is the boot's Unix time.
  std::vector<uint64_t> f = StatFields(22, 22);
  long ticks = sysconf(_SC_CLK_TCK);
  std::istringstream stat(ReadFile("/proc/stat"));
  std::string line;
  uint64_t btime = 0;
  while (std::getline(stat, line)) {
    if (line.rfind("btime ", 0) == 0) btime = std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  if (f.empty() || ticks <= 0 || btime == 0) return 0;
  return static_cast<double>(btime) + static_cast<double>(f[0]) / static_cast<double>(ticks);
}

void AddProcessMetrics(MetricsRegistry& registry) {
  registry.AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                    [] { return static_cast<double>(ProcessResidentMemoryBytes()); });
  registry.AddCounterFunc("process_cpu_seconds_total",
                          "Total user and system CPU time spent in seconds.", ProcessCpuSeconds);
  const double start = ProcessStartTimeSeconds();
  registry.AddGauge("process_start_time_seconds",
                    "Start time of the process since unix epoch in seconds.",
                    [start] { return start; });
}

}  // namespace shelfmark
