// `shelfmark-perf connect`: what a connection to the master costs, and what
// a call on an established one costs, with the credentials given (issue 18:
// authentication is paid per connection, not per request).
//
//   shelfmark-perf connect --master=HOST:PORT [--count=N] [--calls=N]
//       [--cluster_token_file=PATH] [--master_token_file=PATH] [--json]
//
// Times `count` fresh connections, one after the other: TCP connect, the
// token handshake when a token is given (authChallenge + authenticate, two
// round trips) and the first call (ExistKey of a missing key), until its
// answer. Then `calls` ExistKey calls on one established connection.
// Output: one JSON line
//   {"bench":"connect","authenticated":..,"connections":..,"connect_p50_us":..,
//    "connect_p99_us":..,"calls":..,"call_p50_us":..,"call_p99_us":..}
// or two table rows. Exit 1 when a connection or call fails (the code is
// printed), 2 on bad flags.
#pragma once

namespace shelfmark {

int RunConnectBench(int argc, const char* const* argv);

}  // namespace shelfmark
