// `shelfmark-perf failover`: puts small objects one after another through a
// client that follows the leader (--master=etcd://...), for --seconds, and
// reports every gap between two acknowledged puts longer than --gap_ms: a
// leader killed meanwhile shows as one gap, from its last acknowledged put
// to the first on the new leader (the failover time as a client sees it,
// at most one put's latency longer). Every acknowledged key is read back
// at the end (GetReplicaList, through the leader then): one that is gone
// fails the run.
//
// Output: one JSON line per gap {"bench":"failover","gap_ms":..}, then
//   {"bench":"failover_summary","acked":..,"failed_puts":..,"lost":..,
//    "gaps":..,"max_gap_ms":..}
// With --put_log=PATH, every put is also appended to PATH as it returns:
//   {"put":I,"key":"..","result":"OK"|error code,"start_ns":..,"end_ns":..}
// (CLOCK_REALTIME nanoseconds, so a test can order one process's puts
// against another's on the same machine); with --retry_pause_ms, a failed
// put is followed by that pause (a fixed --master that is a standby or a
// fenced leader answers NOT_LEADER at once).
// Exit 1 when an acknowledged put is lost, 2 on bad flags.
#pragma once

namespace shelfmark {

int RunFailoverBench(int argc, const char* const* argv);

}  // namespace shelfmark
