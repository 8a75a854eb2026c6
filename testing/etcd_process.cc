#include "testing/etcd_process.h"

#include <signal.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace shelfmark::testing {
namespace {

std::string Url(uint16_t port, const std::string& host = "127.0.0.1") {
  return "http://" + host + ":" + std::to_string(port);
}

}  // namespace

EtcdProcess::EtcdProcess(std::string client_host) : client_host_(std::move(client_host)) {
  client_port_ = FreePort();
  peer_port_ = FreePort();
  while (peer_port_ == client_port_) peer_port_ = FreePort();
}

EtcdProcess::~EtcdProcess() { Stop(); }  // before dir_ goes

std::string EtcdProcess::endpoint() const {
  return (client_host_.empty() ? "127.0.0.1" : client_host_) + ":" +
         std::to_string(client_port_);
}

bool EtcdProcess::Healthy() const {
  std::string body;
  return HttpGet(client_port_, "/health", &body) == 200 &&
         body.find("\"true\"") != std::string::npos;
}

bool EtcdProcess::Start(int timeout_ms) {
  if (child_ != nullptr) return true;
  if (dir_.path().empty() || access(kBinary, X_OK) != 0) return false;
  // Loopback always (Healthy() asks there), the client host besides.
  const std::string listen =
      Url(client_port_) + (client_host_.empty() ? "" : "," + Url(client_port_, client_host_));
  const std::vector<std::string> args = {
      "--name=shelfmark-test",
      "--data-dir=" + dir_.path() + "/data",
      "--listen-client-urls=" + listen,
      "--advertise-client-urls=" + Url(client_port_, client_host_.empty() ? "127.0.0.1"
                                                                          : client_host_),
      "--listen-peer-urls=" + Url(peer_port_),
      "--initial-advertise-peer-urls=" + Url(peer_port_),
      "--initial-cluster=shelfmark-test=" + Url(peer_port_),
      "--heartbeat-interval=50",
      "--election-timeout=500",
      "--logger=zap",
      "--log-outputs=stderr",
  };
  child_ = std::make_unique<ChildProcess>(kBinary, args, dir_.path() + "/etcd.log");
  paused_ = false;
  if (WaitFor([this] { return Healthy(); }, timeout_ms)) return true;
  Stop();
  return false;
}

bool EtcdProcess::Stop(int timeout_ms) {
  if (child_ == nullptr) return false;
  if (paused_) Resume();  // a stopped process takes no SIGTERM
  child_->Signal(SIGTERM);
  if (child_->Wait(timeout_ms) < 0) {
    child_->Signal(SIGKILL);
    child_->Wait(timeout_ms);
  }
  child_.reset();
  return true;
}

bool EtcdProcess::Kill(int timeout_ms) {
  if (child_ == nullptr) return false;
  child_->Signal(SIGKILL);  // a stopped process dies of SIGKILL too
  child_->Wait(timeout_ms);
  child_.reset();
  paused_ = false;
  return true;
}

bool EtcdProcess::Restart(int timeout_ms) {
  Stop();
  return Start(timeout_ms);
}

void EtcdProcess::Pause() {
  if (child_ == nullptr || paused_) return;
  child_->Signal(SIGSTOP);
  paused_ = true;
}

void EtcdProcess::Resume() {
  if (child_ == nullptr || !paused_) return;
  child_->Signal(SIGCONT);
  paused_ = false;
}

std::string EtcdProcess::StartFailure() const {
  if (access(kBinary, X_OK) != 0) {
    return std::string(kBinary) + " is missing: the ha tests need Debian's etcd-server "
                                  "(scripts/setup.sh installs it)";
  }
  return "etcd did not become healthy on " + endpoint() + "; its log:\n" +
         LogTails(dir_.path(), ".log");
}

}  // namespace shelfmark::testing
