// BookkeepingSegment: the segment a benchmark mounts when it only registers
// objects at a master (shelfmark-perf master, failover, snapshot): no bytes
// stand behind it, nothing reads from it.
//
// Its endpoint is its own. The master takes a mount at an endpoint where
// another owner's segment is mounted for that node restarted on its port,
// and drops the older segment with every object placed on it
// (SegmentTable::BeginUnmountSuperseded, issue 28). Benchmarks used to share
// one made-up endpoint, so a second benchmark process mounting at the same
// master dropped the first's segment, and with it the acknowledged puts of
// every client that had been placed there (tests/ha_partition_test.cc lost
// them so).
//
// Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/types.h"

namespace shelfmark {

// A segment of `size` bytes at `base` with a fresh id, named
// "<prefix>-<id>", protocol "tcp", no rkey, and the endpoint
// "bookkeeping/<id>": unique to the segment, and no address (a client that
// tried to read from it could not parse it), since nothing listens for it.
Segment BookkeepingSegment(std::string_view prefix, uint64_t base, uint64_t size);

}  // namespace shelfmark
