# shelfmark-allocator-perf: OffsetAllocator throughput, latency and
# fragmentation against a first-fit baseline.
shelfmark_binary(shelfmark-allocator-perf
  SOURCES allocator_perf.cc
  DEPS shelfmark::directory)
