// Pinger: keeps a benchmark's client alive at the master. A background
// thread with its own MasterClient (same client id) pings every second and
// re-mounts the segment when the master answers NEED_REMOUNT (it expired the
// client, e.g. after a long stall).
//
// Thread safety: construct and destroy on one thread; failures() from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "common/mutex.h"
#include "rpc/master_client.h"
#include "common/types.h"

namespace shelfmark {

class Pinger {
 public:
  // Starts pinging as `options.client_id`; `segment` is re-mounted on demand.
  Pinger(MasterClientOptions options, Segment segment);
  ~Pinger();  // stops and joins the thread
  Pinger(const Pinger&) = delete;
  Pinger& operator=(const Pinger&) = delete;

  // Pings or re-mounts that failed so far.
  uint64_t failures() const { return failures_.load(); }

 private:
  void Run();

  MasterClientOptions options_;
  Segment segment_;
  Mutex mu_;
  std::condition_variable_any cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> failures_{0};
  std::thread thread_;  // last: starts after every other member exists
};

}  // namespace shelfmark
