// The result of `shelfmark-perf batchget` (perf/batchget_bench.h) and its
// JSON line: the C++ baselines a Python benchmark of the Mooncake-compatible
// store compares against.
//
// Thread safety: plain values and reentrant functions.
#pragma once

#include <cstdint>
#include <string>

namespace shelfmark {

struct BatchGetRow {
  std::string protocol;
  uint64_t objects = 0;  // per batch
  uint64_t size = 0;     // bytes per object
  int64_t iters = 0;     // timed batches
  double batch_p50_us = 0, batch_p99_us = 0;  // one BatchGetInto of all objects
  double batch_gbps = 0;  // GB/s (1e9 bytes/s) over all timed batches
  // Same-process get: GetInto of an object in this process's own segment
  // (memcpy by the client) vs a plain memcpy of the same size. Only with a
  // hosted segment (`local` true).
  bool local = false;
  double local_get_gbps = 0, memcpy_gbps = 0;
  uint64_t local_copies = 0;  // Client::local_stats().copies during the run
};

// GB/s (1e9 bytes per second) of `bytes` moved in `ns`; 0 when ns <= 0.
double GigabytesPerSecond(uint64_t bytes, int64_t ns);
// local_get_gbps / memcpy_gbps (1: as fast as memcpy); 0 without memcpy.
double LocalVsMemcpy(const BatchGetRow& row);
// {"bench":"batchget","protocol":..,"objects":..,"size":..,"iters":..,
//  "batch_p50_us":..,"batch_p99_us":..,"batch_gbps":..,"local_get_gbps":..,
//  "memcpy_gbps":..,"local_vs_memcpy":..,"local_copies":..}; the local
// fields are null without a hosted segment.
std::string BatchGetJson(const BatchGetRow& row);

}  // namespace shelfmark
