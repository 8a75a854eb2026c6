#include "node/disk_reporter.h"

#include <chrono>

#include "common/object_key.h"

namespace shelfmark {
namespace {

DiskReporter::KeyRef Ref(std::string_view tenant, std::string_view key) {
  return {std::string(EffectiveTenant(tenant)), std::string(key)};
}

}  // namespace

DiskReporter::DiskReporter(DiskReporterOptions options)
    : options_(std::move(options)), thread_([this] { Loop(); }) {}

DiskReporter::~DiskReporter() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

void DiskReporter::SetReady(bool ready) {
  MutexLock lock(&mu_);
  ready_ = ready;
  cv_.notify_all();
}

void DiskReporter::Evicted(std::string_view tenant, std::string_view key) {
  MutexLock lock(&mu_);
  evictions_.push_back(Ref(tenant, key));
  cv_.notify_all();
}

void DiskReporter::Lost(std::string_view tenant, std::string_view key) {
  auto item = std::make_shared<LostItem>();
  item->key = Ref(tenant, key);
  MutexLock lock(&mu_);
  if (stop_ || held_.count(item->key) != 0) return;
  lost_.push_back(item);
  cv_.notify_all();
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.lost_wait_ms);
  while (!item->done && !stop_) {
    if (cv_.wait_until(lock, until) == std::cv_status::timeout) break;
  }
}

void DiskReporter::Hold(const std::vector<KeyRef>& keys, bool hold) {
  MutexLock lock(&mu_);
  for (const KeyRef& k : keys) {
    auto it = held_.try_emplace(Ref(k.first, k.second), 0).first;
    it->second += hold ? 1 : -1;
    if (it->second <= 0) held_.erase(it);
  }
  if (!hold) cv_.notify_all();  // evictions of these keys may go now
}

bool DiskReporter::Held(std::string_view tenant, std::string_view key) const {
  MutexLock lock(&mu_);
  return held_.count(Ref(tenant, key)) != 0;
}

uint64_t DiskReporter::evictions_sent() const {
  MutexLock lock(&mu_);
  return evictions_sent_;
}

uint64_t DiskReporter::lost_sent() const {
  MutexLock lock(&mu_);
  return lost_sent_;
}

uint64_t DiskReporter::pending() const {
  MutexLock lock(&mu_);
  return evictions_.size() + lost_.size() + sending_;
}

bool DiskReporter::HasWorkLocked() const {
  if (!ready_) return false;
  if (!lost_.empty()) return true;
  for (const KeyRef& e : evictions_) {
    if (held_.count(e) == 0) return true;
  }
  return false;
}

std::vector<DiskReporter::KeyRef> DiskReporter::TakeSendableLocked() {
  std::vector<KeyRef> sendable, kept;
  for (KeyRef& e : evictions_) {
    const bool take = sendable.size() < kEvictionBatch && held_.count(e) == 0;
    (take ? sendable : kept).push_back(std::move(e));
  }
  evictions_.swap(kept);
  return sendable;
}

void DiskReporter::Loop() {
  MasterClient master(options_.master);
  auto retry_at = std::chrono::steady_clock::time_point::min();  // after a failed send
  MutexLock lock(&mu_);
  while (!stop_) {
    if (std::chrono::steady_clock::now() < retry_at) {
      cv_.wait_until(lock, retry_at);
      continue;
    }
    if (!HasWorkLocked()) {
      cv_.wait(lock);
      continue;
    }
    // Lost records first, each settled (counted, its reader woken) before
    // any eviction is sent: a reader waits for its own record only.
    // Evictions go in bounded batches so that a lost record queued meanwhile
    // waits for at most one batch.
    std::vector<KeyRef> failed;
    if (!lost_.empty()) {
      std::vector<std::shared_ptr<LostItem>> lost(lost_.begin(), lost_.end());
      lost_.clear();
      sending_ = lost.size();
      lock.unlock();
      for (const auto& item : lost) {
        if (master.EvictDiskReplica(item->key.first, item->key.second) == ErrorCode::RPC_FAIL) {
          failed.push_back(item->key);
        }
      }
      lock.lock();
      lost_sent_ += lost.size() - failed.size();
      for (const auto& item : lost) item->done = true;  // failed ones retry as evictions
    } else {
      std::vector<KeyRef> evictions = TakeSendableLocked();
      sending_ = evictions.size();
      lock.unlock();
      uint64_t sent = 0;
      for (KeyRef& e : evictions) {
        // Once the master is unreachable the rest are kept untried.
        if (failed.empty() && master.EvictDiskReplica(e.first, e.second) != ErrorCode::RPC_FAIL) {
          ++sent;
        } else {
          failed.push_back(std::move(e));
        }
      }
      lock.lock();
      evictions_sent_ += sent;
    }
    evictions_.insert(evictions_.begin(), failed.begin(), failed.end());
    sending_ = 0;
    cv_.notify_all();
    if (!failed.empty()) {
      retry_at = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(options_.retry_interval_ms);
    }
  }
}

}  // namespace shelfmark
