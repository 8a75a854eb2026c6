#include "testing/process_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "service/http_client.h"
#include "testing/wait_for.h"

namespace shelfmark::testing {
std::unique_ptr<ChildProcess> StartMaster(const std::string& binary,
                                          const std::vector<std::string>& flags,
                                          const std::string& log_path, ServicePorts* ports,
                                          int timeout_ms) {
  std::vector<std::string> args = {"--rpc_port=0", "--metrics_port=0"};
  args.insert(args.end(), flags.begin(), flags.end());
  auto master = std::make_unique<ChildProcess>(binary, args, log_path);
  if (!WaitForServicePorts(log_path, timeout_ms, ports)) return nullptr;
  return master;
}

bool WaitForServicePorts(const std::string& log_path, int timeout_ms, ServicePorts* ports) {
  if (!WaitForText(log_path, "metrics port ", timeout_ms)) return false;
  const std::string text = ReadFile(log_path);
  const size_t at = text.find("rpc port ");
  int rpc = 0, http = 0;
  if (at == std::string::npos ||
      std::sscanf(text.c_str() + at, "rpc port %d, metrics port %d", &rpc, &http) != 2) {
    return false;
  }
  ports->rpc = static_cast<uint16_t>(rpc);
  ports->http = static_cast<uint16_t>(http);
  return WaitHealthy(ports->http, timeout_ms);
}

bool ParseNodeReady(const std::string& log_text, NodeReady* ready) {
  const std::string text = "\n" + log_text;
  const size_t line = text.find("\nnode ");
  const size_t metrics = text.find("metrics port ");
  char id[64] = {0};
  int port = 0;
  if (line == std::string::npos || metrics == std::string::npos ||
      std::sscanf(text.c_str() + line, "\nnode %63s segment", id) != 1 ||
      std::sscanf(text.c_str() + metrics, "metrics port %d", &port) != 1) {
    return false;
  }
  ready->client_id = id;
  ready->metrics_port = static_cast<uint16_t>(port);
  return true;
}

namespace {

sockaddr_in LoopbackAddress(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

}  // namespace

uint16_t FreePort() {
  uint16_t port = 0;
  const int fd = ListenLoopback(1, &port);
  if (fd >= 0) close(fd);
  return port;
}

int ListenLoopback(int backlog, uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = LoopbackAddress(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, backlog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

int ConnectLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in addr = LoopbackAddress(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

namespace {

// Inodes of the sockets among the descriptors of `pid`.
std::set<std::string> SocketInodes(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fds, ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), link_ec).string();
    if (!link_ec && target.rfind("socket:[", 0) == 0 && target.back() == ']') {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  return inodes;
}

// "0100007F:1F90" (/proc/net/tcp: the address as the kernel stores it, in
// hex, then the port) as a HostPort; a wildcard address becomes loopback.
std::optional<HostPort> ParseProcAddress(const std::string& text, int family) {
  const size_t colon = text.rfind(':');
  const size_t bytes = family == AF_INET ? 4 : 16;
  if (colon != bytes * 2) return std::nullopt;
  unsigned char raw[16] = {};
  for (size_t word = 0; word < bytes / 4; ++word) {  // 32-bit words in host order
    const uint32_t v = static_cast<uint32_t>(std::stoul(text.substr(word * 8, 8), nullptr, 16));
    std::memcpy(raw + word * 4, &v, 4);
  }
  static const unsigned char kAny[16] = {};
  char host[INET6_ADDRSTRLEN] = {};
  if (std::memcmp(raw, kAny, bytes) == 0) {
    std::snprintf(host, sizeof(host), "%s", family == AF_INET ? "127.0.0.1" : "::1");
  } else if (inet_ntop(family, raw, host, sizeof(host)) == nullptr) {
    return std::nullopt;
  }
  return HostPort{host, static_cast<uint16_t>(std::stoul(text.substr(colon + 1), nullptr, 16))};
}

}  // namespace

std::vector<HostPort> ListeningTcpAddresses(pid_t pid) {
  const std::set<std::string> inodes = SocketInodes(pid);
  std::vector<HostPort> out;
  for (const auto& [table, family] : {std::pair{"tcp", AF_INET}, std::pair{"tcp6", AF_INET6}}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state != "0A" || inodes.count(inode) == 0) continue;
      if (auto address = ParseProcAddress(local, family)) out.push_back(*address);
    }
  }
  return out;
}

bool WaitPeerClosed(int fd, int timeout_ms) {
  return WaitFor(
      [fd] {
        char buf[4096];
        for (;;) {
          const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
          if (n == 0) return true;  // end of stream
          if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
        }
      },
      timeout_ms);
}

bool PeerStillWaiting(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

ChildProcess::ChildProcess(const std::string& binary, const std::vector<std::string>& args,
                           const std::string& stderr_path, int stdout_fd) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    if (!stderr_path.empty()) {
      int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
    }
    if (stdout_fd >= 0) dup2(stdout_fd, STDOUT_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

int ChildProcess::Wait(int timeout_ms) {
  if (reaped_) return status_;
  const bool exited = WaitFor(
      [this] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) != pid_) return false;
        reaped_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      timeout_ms);
  return exited ? status_ : -1;
}

int HttpGet(uint16_t port, const std::string& path, std::string* body) {
  auto reply = shelfmark::HttpGet(HostPort{"127.0.0.1", port}, path);
  if (!reply.ok()) return -1;
  *body = reply->body;
  return reply->status;
}

bool WaitHealthy(uint16_t port, int timeout_ms) {
  return WaitFor(
      [port] {
        std::string body;
        return HttpGet(port, "/health", &body) == 200;
      },
      timeout_ms);
}

double MetricValue(const std::string& text, const std::string& series) {
  return PrometheusValue(text, series).value_or(-1);
}

double ScrapeMetric(uint16_t port, const std::string& series) {
  std::string body;
  if (HttpGet(port, "/metrics", &body) != 200) return -1;
  return MetricValue(body, series);
}

bool WaitForMetric(uint16_t port, const std::string& series,
                   const std::function<bool(double)>& done, int timeout_ms) {
  return WaitFor([&] { return done(ScrapeMetric(port, series)); }, timeout_ms);
}

uint64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) ADD_FAILURE() << "cannot write " << path;
}

void FlipBits(const std::string& path, uint64_t offset, uint8_t mask) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  const int byte = f.get();
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(byte ^ mask));
  f.flush();
  if (!f || byte == std::char_traits<char>::eof()) {
    ADD_FAILURE() << "cannot flip byte " << offset << " of " << path;
  }
}

std::string LogTails(const std::string& dir, const std::string& suffix, size_t max_bytes) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(error) && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& name : names) {
    std::string text = ReadFile(dir + "/" + name);
    if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
    out += "--- " + name + " ---\n" + text + "\n";
  }
  return out;
}

bool WaitForText(const std::string& path, const std::string& needle, int timeout_ms) {
  return WaitFor([&] { return ReadFile(path).find(needle) != std::string::npos; },
                   timeout_ms);
}

}  // namespace shelfmark::testing
