// NetNamespace: a network namespace joined to this one by a veth pair, so
// that a process started inside it reaches the host (and is reached) over a
// real interface, not loopback. Created with `ip netns` / `ip link` (needs
// root and iproute2) and removed on destruction.
//
// Addressing: namespace number `index` (1..250) of a test process gets the
// subnet 10.<64 + pid % 128>.<index>.0/24: the host side of the veth is .1,
// the namespace side .2 (its `lo` is up too). Names carry the pid, so tests
// running in parallel do not collide.
//
// UCX would still pick shared memory between processes of one machine; the
// cluster tests set UCX_TLS=tcp so bytes cross the veth.
//
// Thread safety: none; create and destroy on the test's thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace shelfmark::testing {

class NetNamespace {
 public:
  // "" when namespaces can be made here (root, `ip netns` works), else why
  // not (tests skip with that reason).
  static std::string Unavailable();

  // nullptr (and *error) when a step fails; what was made is removed.
  static std::unique_ptr<NetNamespace> Create(int index, std::string* error);
  ~NetNamespace();
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  const std::string& name() const { return name_; }
  const std::string& ip() const { return ip_; }            // inside the namespace
  const std::string& host_ip() const { return host_ip_; }  // the host's end of the veth

  // The binary to give ChildProcess and the arguments that run `binary args`
  // inside the namespace (`ip netns exec NAME binary args...`; the pid is the
  // program's own, so signals reach it).
  static std::string Launcher();
  std::vector<std::string> Wrap(const std::string& binary,
                                const std::vector<std::string>& args) const;

 private:
  NetNamespace() = default;
  std::string name_, host_if_, ip_, host_ip_;
};

// Runs a command (argv[0] looked up in PATH) and waits; its exit status, or
// -1 when it could not run. Output goes to *output when not null.
int RunCommand(const std::vector<std::string>& argv, std::string* output = nullptr);

}  // namespace shelfmark::testing
