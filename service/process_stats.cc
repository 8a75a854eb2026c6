#include "service/process_stats.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace shelfmark {
namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
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
  // Field 2 (comm) is parenthesised and may hold spaces or ')': parse after
  // the last ')'. The next token is field 3 (state); utime and stime are
  // fields 14 and 15, i.e. tokens 11 and 12 from there.
  std::string stat = ReadFile("/proc/self/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  std::string token;
  for (int i = 0; i < 11; ++i) {
    if (!(fields >> token)) return 0;
  }
  uint64_t utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return 0;
  long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(utime + stime) / static_cast<double>(ticks) : 0;
}

// Both are gauges because the registry reads values through callbacks; the
// CPU total only grows, as its _total name promises.
void AddProcessMetrics(MetricsRegistry& registry) {
  registry.AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                    [] { return static_cast<double>(ProcessResidentMemoryBytes()); });
  registry.AddGauge("process_cpu_seconds_total",
                    "Total user and system CPU time spent in seconds.", ProcessCpuSeconds);
}

}  // namespace shelfmark
