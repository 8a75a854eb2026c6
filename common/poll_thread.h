// PollThread: the thread of a small poll-loop server (the HTTP server, the
// UCX address server, the local share) and the pipe that stops it: the loop
// polls wake_fd() with its other descriptors and returns once it is
// readable; Stop() makes it readable and joins.
//
// Thread safety: Start and Stop (and the destructor) from one thread; the
// loop runs on its own.
#pragma once

#include <functional>
#include <thread>

namespace shelfmark {

class PollThread {
 public:
  PollThread() = default;
  ~PollThread() { Stop(); }
  PollThread(const PollThread&) = delete;
  PollThread& operator=(const PollThread&) = delete;

  // Opens the wake pipe and runs `loop` on a new thread; false when either
  // fails or a loop is already running.
  bool Start(std::function<void()> loop);
  // Wakes the loop, joins it and closes the pipe (a no-op when not running).
  void Stop();
  bool running() const { return thread_.joinable(); }
  // Readable once Stop() was called: the loop's cue to return.
  int wake_fd() const { return wake_[0]; }

 private:
  int wake_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace shelfmark
