// EtcdProcess: one real etcd server (Debian's etcd-server, /usr/bin/etcd)
// for the ha tests: a single member on free loopback client and peer ports,
// its data directory in a fresh TempDir (kept across Stop/Start, so a
// restarted etcd keeps its keys), fast raft settings (heartbeat
// 50 ms, election timeout 500 ms: etcd's minimum lease TTL becomes 1 s).
// Never the system etcd on 2379: installing etcd-server on Debian starts
// one there. Stopped (SIGTERM, then SIGKILL) and removed with the object.
//
// Thread safety: one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark::testing {

class EtcdProcess {
 public:
  static constexpr const char* kBinary = "/usr/bin/etcd";

  // `client_host`: where clients reach it besides 127.0.0.1 (e.g. a
  // TestNetwork's host address, for processes in network namespaces);
  // endpoint() names it. Empty: loopback only.
  explicit EtcdProcess(std::string client_host = "");
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // Starts etcd and waits (up to `timeout_ms`) for GET /health to answer
  // {"health":"true"}; false (with the process stopped) otherwise:
  // StartFailure() says why.
  bool Start(int timeout_ms = 30'000);
  // SIGTERM, then SIGKILL after `timeout_ms`; true when it was running.
  bool Stop(int timeout_ms = 10'000);
  // SIGKILL (a crash: no clean shutdown); true when it was running.
  bool Kill(int timeout_ms = 10'000);
  // Stop, then Start on the same ports and data directory.
  bool Restart(int timeout_ms = 30'000);
  // SIGSTOP / SIGCONT: etcd holds its connections but answers nothing,
  // like a partitioned server.
  void Pause();
  void Resume();

  bool running() const { return child_ != nullptr; }
  uint16_t client_port() const { return client_port_; }
  // "<client host>:<client port>" (127.0.0.1 by default), as EtcdClient and
  // ParseEtcdEndpoints take it.
  std::string endpoint() const;
  std::string StartFailure() const;

 private:
  bool Healthy() const;

  std::string client_host_;
  TempDir dir_{"etcd"};
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
  std::unique_ptr<ChildProcess> child_;
  bool paused_ = false;
};

}  // namespace shelfmark::testing
