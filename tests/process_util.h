// Helpers for multi-process tests: free ports, child processes, HTTP GET.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shelfmark::testing {

// A TCP port that was free a moment ago (bound to 0 and released).
uint16_t FreePort();

// A child process started with execv; killed (SIGKILL) on destruction if
// still running.
class ChildProcess {
 public:
  ChildProcess(const std::string& binary, const std::vector<std::string>& args,
               const std::string& stderr_path = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits up to `timeout_ms` for exit; returns the exit status (128 + signal
  // for a signal death) or -1 on timeout.
  int Wait(int timeout_ms);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// GET http://127.0.0.1:port/path; returns the status code and fills *body;
// -1 when the connection fails.
int HttpGet(uint16_t port, const std::string& path, std::string* body);

// Polls /health until it answers 200 or `timeout_ms` passes.
bool WaitHealthy(uint16_t port, int timeout_ms);

// The value of an unlabelled metric line `name value` in Prometheus text; -1 if absent.
double MetricValue(const std::string& text, const std::string& name);

}  // namespace shelfmark::testing
