#include "embedded/hosted_segment.h"

#include <chrono>
#include <condition_variable>
#include <utility>

#include "common/mutex.h"

namespace shelfmark {
namespace {

// The first mount's signal, shared with the node's callback.
struct MountSignal {
  Mutex mu;
  std::condition_variable_any cv;
  bool mounted GUARDED_BY(mu) = false;

  // True once mounted; false after `timeout_ms`. A loop rather than
  // wait_for's predicate: the analysis cannot see that a lambda runs with
  // the lock held.
  bool Wait(int64_t timeout_ms) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    MutexLock lock(&mu);
    while (!mounted) {
      if (cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    return mounted;
  }
};

}  // namespace

Result<std::unique_ptr<HostedSegment>> HostedSegment::Start(NodeOptions node,
                                                            TransportEngine* engine,
                                                            Client* client,
                                                            int64_t mount_timeout_ms) {
  auto signal = std::make_shared<MountSignal>();
  node.on_mounted = [signal](const Segment&) {
    MutexLock lock(&signal->mu);
    signal->mounted = true;
    signal->cv.notify_all();
  };
  auto created = Node::Create(std::move(node), engine);
  if (!created.ok()) return created.error();
  std::unique_ptr<HostedSegment> hosted(new HostedSegment(client));
  hosted->node_ = std::move(created).value();
  hosted->segment_ = hosted->node_->segment();
  const Segment& s = hosted->segment_;
  ErrorCode rc = client->AttachLocalSegment(s.id, hosted->node_->memory(), s.size);
  if (rc != ErrorCode::OK) return rc;  // the destructor destroys the node
  hosted->attached_ = true;
  HostedSegment* h = hosted.get();
  hosted->thread_ = std::thread([h] { h->unmounted_ = h->node_->Run(); });
  if (!signal->Wait(mount_timeout_ms)) return ErrorCode::RPC_FAIL;  // the destructor stops
  return hosted;
}

HostedSegment::~HostedSegment() { (void)Stop(); }

void HostedSegment::Remount() {
  if (node_ != nullptr) node_->Remount();
}

NodeCounters HostedSegment::counters() const {
  return node_ == nullptr ? NodeCounters{} : node_->counters();
}

LocalDiskStats HostedSegment::disk_stats() const {
  return node_ == nullptr ? LocalDiskStats{} : node_->disk_stats();
}

ErrorCode HostedSegment::Stop() {
  if (node_ == nullptr) return ErrorCode::OK;
  // No more local copies, then the node stops (and unmounts).
  if (attached_) client_->DetachLocalSegment(segment_.id);
  attached_ = false;
  node_->Stop();
  ErrorCode rc = ErrorCode::OK;
  if (thread_.joinable()) {
    thread_.join();
    rc = unmounted_;
  }
  node_.reset();  // unregisters from the client's engine: before the client goes
  return rc;
}

}  // namespace shelfmark
