#include "perf/latency_plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace shelfmark {
namespace {

// At most this many points per curve (evenly spaced ranks, the last kept).
constexpr size_t kMaxPoints = 2000;

bool WriteData(const std::vector<LatencySeries>& series, const std::string& path) {
  std::ofstream out(path);
  for (const LatencySeries& s : series) {
    std::vector<int64_t> sorted = s.latencies_ns;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    const size_t step = std::max<size_t>(1, n / kMaxPoints);
    for (size_t i = 0; i < n; i += step) {
      out << static_cast<double>(sorted[i]) / 1000.0 << ' '
          << static_cast<double>(i + 1) / static_cast<double>(n) << '\n';
    }
    out << static_cast<double>(sorted.back()) / 1000.0 << " 1\n\n\n";  // next gnuplot index
  }
  return static_cast<bool>(out);
}

// gnuplot's string syntax: single quotes, a quote doubled.
std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

bool WriteScript(const std::vector<LatencySeries>& series, const std::string& data,
                 const std::string& png, const std::string& path) {
  std::ofstream out(path);
  out << "set terminal png size 1100,650 noenhanced\n"
      << "set output " << Quote(png) << "\n"
      << "set title 'Shelfmark get latency distribution'\n"
      << "set xlabel 'latency (us, log scale)'\nset ylabel 'share of gets <= latency'\n"
      << "set logscale x\nset grid\nset key bottom right\nset yrange [0:1]\n"
      << "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    out << (i == 0 ? "" : ", ") << Quote(data) << " index " << i
        << " using 1:2 with lines linewidth 2 title " << Quote(series[i].title);
  }
  out << "\n";
  return static_cast<bool>(out);
}

// Runs `gnuplot script`; its exit status, or -1 when it could not start.
int RunGnuplot(const std::string& script) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

bool WriteLatencyPlot(const std::vector<LatencySeries>& series, const std::string& png_path,
                      std::string* error) {
  if (series.empty()) {
    *error = "nothing to plot";
    return false;
  }
  for (const LatencySeries& s : series) {
    if (s.latencies_ns.empty()) {
      *error = "series '" + s.title + "' has no samples";
      return false;
    }
  }
  const std::string data = png_path + ".dat", script = png_path + ".gp";
  if (!WriteData(series, data) || !WriteScript(series, data, png_path, script)) {
    *error = "cannot write " + data + " / " + script;
    return false;
  }
  const int rc = RunGnuplot(script);
  if (rc == 127) {
    *error = "gnuplot not found (Debian: apt-get install gnuplot-nox)";
    return false;
  }
  if (rc != 0) {
    *error = "gnuplot failed on " + script + " (exit " + std::to_string(rc) + ")";
    return false;
  }
  return true;
}

}  // namespace shelfmark
