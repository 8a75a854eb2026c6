// WriteLatencyPlot: latency distributions as a PNG drawn by gnuplot (Debian's
// gnuplot-nox): one CDF curve per series, latency in microseconds on a log
// x axis, share of operations at or below it on the y axis, so replica types
// and sizes compare at a glance.
//
// The data and the gnuplot script go to `png_path` + ".dat" / ".gp" (kept
// next to the picture so a person can re-plot); gnuplot then renders the
// PNG. Errors (false, *error says why): no series or an empty one, a file
// that cannot be written, gnuplot missing or failing.
//
// Thread safety: reentrant (runs a child process; files are the caller's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shelfmark {

struct LatencySeries {
  std::string title;
  std::vector<int64_t> latencies_ns;  // any order
};

bool WriteLatencyPlot(const std::vector<LatencySeries>& series, const std::string& png_path,
                      std::string* error);

}  // namespace shelfmark
