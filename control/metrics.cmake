# Metrics, the /metrics + /health HTTP server and process statistics.
list(APPEND CONTROL_SOURCES metrics.cc http_server.cc process_stats.cc)

shelfmark_test(metrics_test
  SOURCES metrics_test.cc http_server_test.cc process_stats_test.cc
  DEPS shelfmark::control
  LABELS quick)
