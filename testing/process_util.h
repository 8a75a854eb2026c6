// Helpers for tests: files (read, write, the logs a failed test shows), free
// ports, child processes, HTTP GET and Prometheus metrics. Every wait is
// WaitFor (testing/wait_for.h) with a deadline.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/host_port.h"

#include "testing/wait_for.h"

namespace shelfmark::testing {

// The ports a shelfmark-master started with --rpc_port=0 --metrics_port=0
// printed ("rpc port N, metrics port M") to the log at `log_path`, once it
// answers /health; false (after `timeout_ms`) when it does not.
struct ServicePorts {
  uint16_t rpc = 0;
  uint16_t http = 0;
};
bool WaitForServicePorts(const std::string& log_path, int timeout_ms, ServicePorts* ports);

// What a shelfmark-node printed once mounted ("shelfmark-node: metrics port
// M", then "node <client id> segment ..."), from its log text; false when a
// line is missing.
struct NodeReady {
  std::string client_id;
  uint16_t metrics_port = 0;
};
bool ParseNodeReady(const std::string& log_text, NodeReady* ready);

// A TCP port that was free a moment ago (bound to 0 and released).
uint16_t FreePort();

// A TCP socket (close-on-exec) listening on 127.0.0.1 at a free port, which
// it writes to *port; -1 on failure. The caller closes it.
int ListenLoopback(int backlog, uint16_t* port);

// A TCP socket (close-on-exec) connected to 127.0.0.1:port; -1 on failure.
int ConnectLoopback(uint16_t port);

// The TCP addresses (IPv4 and IPv6) process `pid` is listening on, read
// from /proc (its socket descriptors matched to its network namespace's
// LISTEN sockets), a wildcard address given as loopback (where one connects
// to it); empty when /proc cannot be read.
std::vector<HostPort> ListeningTcpAddresses(pid_t pid);

// Waits (bounded) for the peer of the connected socket `fd` to close it (end
// of stream or a reset), reading and discarding what it sends; true when it did.
bool WaitPeerClosed(int fd, int timeout_ms);

// True while `fd` is open with nothing to read (the peer neither answered
// nor closed).
bool PeerStillWaiting(int fd);

// A child process started with execv; killed (SIGKILL) on destruction if
// still running.
class ChildProcess {
 public:
  // The child's stderr goes to `stderr_path` (empty: this process's); its
  // stdout to `stdout_fd` when >= 0 (e.g. the write end of a pipe the
  // caller never reads), else this process's.
  ChildProcess(const std::string& binary, const std::vector<std::string>& args,
               const std::string& stderr_path = "", int stdout_fd = -1);
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
  int status_ = -1;  // once reaped_
};

// Starts the shelfmark-master at `binary` on free ports (--rpc_port=0
// --metrics_port=0, then `flags`), its stderr at `log_path`, and waits up to
// `timeout_ms` for WaitForServicePorts; null (the process stopped) when the
// ports did not come.
std::unique_ptr<ChildProcess> StartMaster(const std::string& binary,
                                          const std::vector<std::string>& flags,
                                          const std::string& log_path, ServicePorts* ports,
                                          int timeout_ms = 30'000);

// GET http://127.0.0.1:port/path; returns the status code and fills *body;
// -1 when the connection fails.
int HttpGet(uint16_t port, const std::string& path, std::string* body);

// Polls /health until it answers 200 or `timeout_ms` passes.
bool WaitHealthy(uint16_t port, int timeout_ms);

// The value of the sample `series` in Prometheus text: a metric name, or a
// name with its labels as printed ("m{result=\"success\"}"); -1 if absent.
double MetricValue(const std::string& text, const std::string& series);

// MetricValue of GET http://127.0.0.1:port/metrics; -1 when that fails.
double ScrapeMetric(uint16_t port, const std::string& series);

// Polls ScrapeMetric until `done(value)` holds; false after `timeout_ms`.
bool WaitForMetric(uint16_t port, const std::string& series,
                   const std::function<bool(double)>& done, int timeout_ms);

// The bytes of the file at `path`; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Resident bytes of process `pid` (VmRSS of /proc/PID/status); 0 when unknown.
uint64_t ResidentBytes(pid_t pid);

// Replaces the file at `path` with `bytes`; ADD_FAILURE (GoogleTest) when it
// cannot be written.
void WriteFile(const std::string& path, const std::string& bytes);

// Flips the bits `mask` of the byte at `offset` of the file at `path` in
// place (a disk that changed a byte under a running process); ADD_FAILURE
// when the file cannot be read or written there.
void FlipBits(const std::string& path, uint64_t offset, uint8_t mask = 0x01);

// The files directly in `dir` whose names end with `suffix`, by name, each as
// "--- <name> ---\n<its last `max_bytes` bytes>\n": what a failed test prints
// of its processes' logs before its TempDir takes them away.
std::string LogTails(const std::string& dir, const std::string& suffix,
                     size_t max_bytes = 4000);

// Polls the file at `path` until it contains `needle`; false after `timeout_ms`.
bool WaitForText(const std::string& path, const std::string& needle, int timeout_ms);

}  // namespace shelfmark::testing
