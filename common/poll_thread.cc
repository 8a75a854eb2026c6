#include "common/poll_thread.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "common/socket_io.h"

namespace shelfmark {

bool PollThread::Start(std::function<void()> loop) {
  if (thread_.joinable() || pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  try {
    thread_ = std::thread(std::move(loop));
  } catch (const std::system_error&) {
    Stop();
    return false;
  }
  return true;
}

void PollThread::Stop() {
  if (thread_.joinable()) {
    char byte = 1;
    while (write(wake_[1], &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  CloseFd(wake_[0]);
  CloseFd(wake_[1]);
}

}  // namespace shelfmark
