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
// TestNetwork: what the cluster tests use. UCX 1.13 picks the tcp device of a
// connection's data lane among all of the host's devices of equal speed,
// without a route check: with one veth per namespace in the host, it moved a
// connection to one node onto another namespace's veth and the connection
// was reset. So the host ends of a TestNetwork's veths are enslaved to one
// bridge that carries the host addresses, the test process restricts its
// UCX to that bridge (UCX_NET_DEVICES=bridge()), and every namespace routes
// by default to the host. Devices in the host namespace disturb other UCX
// processes of the machine the same way: run such tests alone (ctest
// RUN_SERIAL).
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
  // `bridge` non-empty: the veth's host end joins that bridge, which takes
  // the host address, and the namespace routes by default to the host.
  static std::unique_ptr<NetNamespace> Create(int index, std::string* error,
                                              const std::string& bridge = "");
  ~NetNamespace();
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  const std::string& name() const { return name_; }
  const std::string& ip() const { return ip_; }            // inside the namespace
  const std::string& host_ip() const { return host_ip_; }  // the host's end of the veth
  const std::string& host_device() const { return host_if_; }  // the veth's host end
  // The veth's end in the namespace (holds ip(); what a process in the
  // namespace restricts its UCX to, so that UCX does not offer its lo).
  const std::string& device() const { return peer_if_; }

  // The binary to give ChildProcess and the arguments that run `binary args`
  // inside the namespace (`ip netns exec NAME binary args...`; the pid is the
  // program's own, so signals reach it).
  static std::string Launcher();
  std::vector<std::string> Wrap(const std::string& binary,
                                const std::vector<std::string>& args) const;

 private:
  NetNamespace() = default;
  std::string name_, host_if_, peer_if_, ip_, host_ip_;
};

class TestNetwork {
 public:
  // The bridge (named after the pid); nullptr and *error when it cannot be
  // made.
  static std::unique_ptr<TestNetwork> Create(std::string* error);
  ~TestNetwork();  // namespaces first, then the bridge
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  const std::string& bridge() const { return bridge_; }
  // Namespace `index` (made on first use, on the bridge); nullptr and
  // *error when a step fails.
  NetNamespace* Namespace(int index, std::string* error);

 private:
  TestNetwork() = default;
  std::string bridge_;
  std::vector<std::pair<int, std::unique_ptr<NetNamespace>>> namespaces_;
};

// Runs a command (argv[0] looked up in PATH) and waits; its exit status, or
// -1 when it could not run. Output goes to *output when not null.
int RunCommand(const std::vector<std::string>& argv, std::string* output = nullptr);
// Runs a command; "" on success, else the command line and its output.
std::string RunOk(const std::vector<std::string>& argv);

}  // namespace shelfmark::testing
