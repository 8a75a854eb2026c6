# perfutil: pure helpers of the tools (JSON lines, percentiles, HOST:PORT,
# Prometheus text, a tiny HTTP GET, benchmark keys, the phase runner, the
# master benchmark's flags and result rows).
# Used by shelfmark-perf and shelfmark-cli.
shelfmark_library(perfutil
  SOURCES json_line.cc bench_util.cc bench_keys.cc phase_runner.cc master_report.cc
    master_options.cc
  DEPS shelfmark::common)

shelfmark_test(perf_test
  SOURCES json_line_test.cc bench_util_test.cc bench_keys_test.cc phase_runner_test.cc
    master_report_test.cc master_options_test.cc
  DEPS shelfmark::perfutil
  LABELS quick)

# shelfmark-perf needs the master client (control/); skip it while the
# control library does not exist yet so the rest of the tree still configures.
if(TARGET shelfmark::control)
  shelfmark_binary(shelfmark-perf
    SOURCES perf_main.cc master_bench.cc pinger.cc
    DEPS shelfmark::control shelfmark::perfutil)
endif()
