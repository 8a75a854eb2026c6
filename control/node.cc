#include "control/node.h"

#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <utility>

#include "common/host_port.h"
#include "control/master_client.h"

namespace shelfmark {

Result<std::unique_ptr<Node>> Node::Create(NodeOptions options, TransportEngine* engine) {
  if (engine == nullptr || options.segment_size == 0 || options.ping_interval_ms <= 0 ||
      options.retry_interval_ms <= 0 || !ParseHostPort(options.master)) {
    return ErrorCode::INVALID_PARAMS;
  }
  std::unique_ptr<Node> node(new Node(std::move(options), engine));
  void* mem = mmap(nullptr, node->options_.segment_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (mem == MAP_FAILED) return ErrorCode::NO_AVAILABLE_HANDLE;
  node->memory_ = static_cast<uint8_t*>(mem);
  auto region = engine->RegisterMemory(mem, node->options_.segment_size, /*remote_access=*/true);
  if (!region.ok()) return region.error();  // ~Node unmaps
  node->region_ = *region;
  Segment& s = node->segment_;
  s.id = UUID::Generate();
  s.name = node->options_.segment_name.empty() ? "node-" + node->options_.client_id.ToString()
                                               : node->options_.segment_name;
  s.base = reinterpret_cast<uint64_t>(mem);
  s.size = node->options_.segment_size;
  s.endpoint = engine->endpoint();
  s.protocol = std::string(engine->protocol());
  s.rkey = region->rkey;
  return node;
}

Node::Node(NodeOptions options, TransportEngine* engine)
    : options_(std::move(options)), engine_(engine) {}

Node::~Node() {
  if (region_.addr != nullptr) engine_->UnregisterMemory(region_);
  if (memory_ != nullptr) munmap(memory_, options_.segment_size);
}

NodeCounters Node::counters() const {
  return NodeCounters{pings_.load(), ping_failures_.load(), mounts_.load(), remounts_.load()};
}

void Node::Stop() {
  MutexLock lock(&stop_mu_);
  stop_ = true;
  stop_cv_.notify_all();
}

bool Node::SleepOrStop(int64_t ms) {
  MutexLock lock(&stop_mu_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stop_) {
    if (stop_cv_.wait_until(lock, until) == std::cv_status::timeout) break;
  }
  return stop_;
}

ErrorCode Node::Run() {
  MasterClientOptions mo;
  mo.address = options_.master;
  mo.client_id = options_.client_id;
  mo.call_timeout_ms = options_.rpc_timeout_ms;
  MasterClient master(mo);
  ErrorCode last_mount_error = ErrorCode::OK;
  int64_t wait_ms = 0;
  while (!SleepOrStop(wait_ms)) {
    if (!mounted_.load()) {
      ErrorCode rc = master.MountSegment(segment_);
      if (rc == ErrorCode::OK) {
        mounted_.store(true);
        mounts_.fetch_add(1);
        if (options_.on_mounted) options_.on_mounted(segment_);
        wait_ms = options_.ping_interval_ms;
      } else {
        if (rc != last_mount_error) {
          std::fprintf(stderr, "shelfmark-node: mount at %s: %s (retrying)\n",
                       options_.master.c_str(), std::string(ErrorCodeName(rc)).c_str());
        }
        wait_ms = options_.retry_interval_ms;
      }
      last_mount_error = rc;
      continue;
    }
    auto ping = master.Ping();
    if (!ping.ok()) {
      ping_failures_.fetch_add(1);
      wait_ms = options_.retry_interval_ms;
      continue;
    }
    pings_.fetch_add(1);
    if (ping->status == ClientStatus::NEED_REMOUNT) {
      remounts_.fetch_add(1);
      mounted_.store(false);
      wait_ms = 0;
      continue;
    }
    wait_ms = options_.ping_interval_ms;
  }
  if (!mounted_.exchange(false)) return ErrorCode::OK;
  return master.UnmountSegment(segment_.id);
}

}  // namespace shelfmark
