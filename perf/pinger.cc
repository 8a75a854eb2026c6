#include "perf/pinger.h"

#include <chrono>
#include <cstdio>
#include <utility>

namespace shelfmark {

Pinger::Pinger(MasterClientOptions options, Segment segment)
    : options_(std::move(options)), segment_(std::move(segment)), thread_([this] { Run(); }) {}

Pinger::~Pinger() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Pinger::Run() {
  MasterClient client(options_);
  MutexLock lock(&mu_);
  while (!cv_.wait_for(lock, std::chrono::seconds(1), [this]() REQUIRES(mu_) { return stop_; })) {
    lock.unlock();
    Result<PingResponse> r = client.Ping();
    if (!r.ok()) {
      failures_.fetch_add(1);
    } else if (r->status == ClientStatus::NEED_REMOUNT) {
      std::fprintf(stderr, "shelfmark-perf: the master asked to remount; remounting the segment\n");
      if (client.MountSegment(segment_) != ErrorCode::OK) failures_.fetch_add(1);
    }
    lock.lock();
  }
}

}  // namespace shelfmark
