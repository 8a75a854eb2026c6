#include "tests/netns_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace shelfmark::testing {

int RunCommand(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof(buf))) > 0) {
    if (output != nullptr) output->append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string RunOk(const std::vector<std::string>& argv) {
  std::string out;
  if (RunCommand(argv, &out) == 0) return "";
  std::string cmd;
  for (const std::string& a : argv) cmd += a + " ";
  return "`" + cmd + "` failed: " + out;
}

std::string NetNamespace::Unavailable() {
  if (geteuid() != 0) return "network namespaces need root";
  std::string out;
  if (RunCommand({"ip", "netns", "list"}, &out) != 0) return "`ip netns` does not work: " + out;
  return "";
}

std::string NetNamespace::Launcher() { return "/usr/sbin/ip"; }

std::unique_ptr<NetNamespace> NetNamespace::Create(int index, std::string* error,
                                                   const std::string& bridge) {
  const int pid = static_cast<int>(getpid());
  const std::string tag = std::to_string(pid) + "n" + std::to_string(index);
  const std::string subnet =
      "10." + std::to_string(64 + pid % 128) + "." + std::to_string(index) + ".";
  std::unique_ptr<NetNamespace> ns(new NetNamespace());
  ns->name_ = "shelfmark-" + tag;
  ns->host_if_ = "smh" + tag;  // at most 15 bytes: "smh" + 7-digit pid + "n" + 3 digits
  ns->host_ip_ = subnet + "1";
  ns->ip_ = subnet + "2";
  ns->peer_if_ = "smp" + tag;
  const std::string& peer = ns->peer_if_;
  const std::string host_dev = bridge.empty() ? ns->host_if_ : bridge;
  std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", ns->name_},
      {"ip", "link", "add", ns->host_if_, "type", "veth", "peer", "name", peer},
      {"ip", "link", "set", peer, "netns", ns->name_},
      {"ip", "addr", "add", ns->host_ip_ + "/24", "dev", host_dev},
      {"ip", "link", "set", ns->host_if_, "up"},
      {"ip", "-n", ns->name_, "addr", "add", ns->ip_ + "/24", "dev", peer},
      {"ip", "-n", ns->name_, "link", "set", peer, "up"},
      {"ip", "-n", ns->name_, "link", "set", "lo", "up"},
  };
  if (!bridge.empty()) {
    steps.insert(steps.begin() + 3, {"ip", "link", "set", ns->host_if_, "master", bridge});
    steps.push_back({"ip", "-n", ns->name_, "route", "add", "default", "via", ns->host_ip_});
  }
  for (const auto& step : steps) {
    std::string out;
    if (RunCommand(step, &out) != 0) {
      *error = "`" + step[0] + " " + step[1] + " " + step[2] + " ...` failed: " + out;
      return nullptr;  // the destructor removes what was made
    }
  }
  return ns;
}

NetNamespace::~NetNamespace() {
  if (!host_if_.empty()) RunCommand({"ip", "link", "del", host_if_});
  if (!name_.empty()) RunCommand({"ip", "netns", "del", name_});
}

std::unique_ptr<TestNetwork> TestNetwork::Create(std::string* error) {
  std::unique_ptr<TestNetwork> net(new TestNetwork());
  const std::string name = "smb" + std::to_string(getpid());
  for (const auto& step : std::vector<std::vector<std::string>>{
           {"ip", "link", "add", name, "type", "bridge"}, {"ip", "link", "set", name, "up"}}) {
    std::string out;
    if (RunCommand(step, &out) != 0) {
      *error = "cannot make bridge " + name + ": " + out;
      RunCommand({"ip", "link", "del", name});
      return nullptr;
    }
  }
  net->bridge_ = name;
  return net;
}

TestNetwork::~TestNetwork() {
  namespaces_.clear();
  RunCommand({"ip", "link", "del", bridge_});
}

NetNamespace* TestNetwork::Namespace(int index, std::string* error) {
  for (const auto& [i, ns] : namespaces_) {
    if (i == index) return ns.get();
  }
  auto ns = NetNamespace::Create(index, error, bridge_);
  if (ns == nullptr) return nullptr;
  namespaces_.emplace_back(index, std::move(ns));
  return namespaces_.back().second.get();
}

std::vector<std::string> NetNamespace::Wrap(const std::string& binary,
                                            const std::vector<std::string>& args) const {
  std::vector<std::string> out = {"netns", "exec", name_, binary};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

}  // namespace shelfmark::testing
