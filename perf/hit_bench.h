// `shelfmark-perf hit`: one existing key read over and over, each get timed
// and attributed to the replica that served it. Made for promotion on hit
// (docs/directory.md): a key that only has a LOCAL_DISK replica is served
// by its node's SSD until the node has it promoted, then by a one-sided
// MEMORY read; run it on a MEMORY-only key for the baseline.
//
//   shelfmark-perf hit --master=HOST:PORT --key=KEY [--compare_key=KEY2]
//       [--tenant=T] [--iters=N] [--location_cache=false] [--protocol=auto]
//       [credentials] [--json]
//
// Each get is a lookup (Locate; without the location cache a master call
// every time, so a promotion shows at the next get) and a read of the
// first replica listed (MEMORY before LOCAL_DISK), into a registered
// buffer. The bytes are checked against client/object_load.h's LoadValue
// (what `shelfmark-cli fill` writes) unless --check_bytes=false. With
// --compare_key, each get of --key is followed by a timed get of that key
// (of the same size; e.g. one in DRAM all along), so both see the same
// drift of the machine.
// Output: one JSON line
//   {"bench":"hit","key":..,"size":..,"gets":..,"disk_gets":..,"disk_p50_us":..,
//    "memory_gets":..,"memory_p50_us":..,"first_memory_get":..,"compare_key":..,
//    "compare_gets":..,"compare_p50_us":..,"wrong_bytes":..}
// (first_memory_get: the index of the first get MEMORY served, -1 if none)
// or a table. Exit 1 when a get fails (the code is printed), 2 on bad flags.
#pragma once

namespace shelfmark {

int RunHitBench(int argc, const char* const* argv);

}  // namespace shelfmark
