#include "directory/client_registry.h"

#include <algorithm>

namespace shelfmark {

void ClientRegistry::Touch(const UUID& client, int64_t now_ms) {
  MutexLock lock(&mu_);
  clients_[client].last_seen_ms = now_ms;
}

bool ClientRegistry::Ping(const UUID& client, int64_t now_ms) {
  MutexLock lock(&mu_);
  auto it = clients_.find(client);
  if (it == clients_.end()) return false;
  it->second.last_seen_ms = now_ms;
  return true;
}

bool ClientRegistry::Known(const UUID& client) const {
  MutexLock lock(&mu_);
  return clients_.count(client) != 0;
}

std::unique_ptr<DiskNode> ClientRegistry::MountDisk(const UUID& client, std::string_view endpoint,
                                                    bool enable_offloading, int64_t now_ms,
                                                    std::vector<const DiskNode*>* superseded) {
  MutexLock lock(&mu_);
  if (superseded != nullptr) {
    for (auto& [id, other] : clients_) {
      if (id != client && other.disk && other.disk->endpoint == endpoint) {
        superseded->push_back(TakeDiskOf(other));
      }
    }
  }
  ClientState& state = clients_[client];
  state.last_seen_ms = now_ms;
  if (state.disk && state.disk->endpoint == endpoint &&
      state.disk->enable_offloading == enable_offloading) {
    return nullptr;
  }
  std::unique_ptr<DiskNode> old = std::move(state.disk);
  state.disk = std::make_unique<DiskNode>(client, std::string(endpoint), enable_offloading);
  return old;
}

const DiskNode* ClientRegistry::TakeDisk(const UUID& client) {
  MutexLock lock(&mu_);
  auto it = clients_.find(client);
  return it == clients_.end() ? nullptr : TakeDiskOf(it->second);
}

const DiskNode* ClientRegistry::TakeDiskOf(ClientState& state) {
  if (!state.disk) return nullptr;
  state.offload_queue.clear();  // no store takes them now
  state.taken_disks.push_back(std::move(state.disk));
  return state.taken_disks.back().get();
}

DiskNode* ClientRegistry::Disk(const UUID& client) const {
  MutexLock lock(&mu_);
  auto it = clients_.find(client);
  return it == clients_.end() ? nullptr : it->second.disk.get();
}

std::vector<ExpiredClient> ClientRegistry::TakeExpired(int64_t now_ms, int64_t ttl_ms) {
  MutexLock lock(&mu_);
  std::vector<ExpiredClient> out;
  if (expiry_held_) return out;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second.last_seen_ms + ttl_ms < now_ms) {
      out.push_back({it->first, std::move(it->second.disk)});
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

bool ClientRegistry::QueueOffload(const UUID& client, OffloadTask task, size_t limit) {
  MutexLock lock(&mu_);
  auto it = clients_.find(client);
  if (it == clients_.end() || it->second.offload_queue.size() >= limit) return false;
  it->second.offload_queue.push_back(std::move(task));
  return true;
}

uint64_t ClientRegistry::QueuedOffloads() const {
  MutexLock lock(&mu_);
  uint64_t n = 0;
  for (const auto& [id, state] : clients_) n += state.offload_queue.size();
  return n;
}

std::vector<OffloadTask> ClientRegistry::TakeOffload(const UUID& client, size_t max) {
  MutexLock lock(&mu_);
  std::vector<OffloadTask> out;
  auto it = clients_.find(client);
  if (it == clients_.end()) return out;
  auto& queue = it->second.offload_queue;
  while (!queue.empty() && out.size() < max) {
    out.push_back(std::move(queue.front()));
    queue.pop_front();
  }
  return out;
}

void ClientRegistry::AddInflight(const UUID& client, InflightOffload item) {
  MutexLock lock(&mu_);
  auto it = clients_.find(client);
  if (it != clients_.end()) it->second.inflight.push_back(std::move(item));
}

bool ClientRegistry::FinishInflight(const UUID& client, std::string_view tenant,
                                    std::string_view key, uint64_t* replica_id) {
  MutexLock lock(&mu_);
  auto it = clients_.find(client);
  if (it == clients_.end()) return false;
  auto& list = it->second.inflight;
  auto found = std::find_if(list.begin(), list.end(), [&](const InflightOffload& f) {
    return f.tenant == tenant && f.key == key;
  });
  if (found == list.end()) return false;
  *replica_id = found->replica_id;
  list.erase(found);
  return true;
}

std::vector<InflightOffload> ClientRegistry::TakeTimedOutInflight(int64_t now_ms) {
  MutexLock lock(&mu_);
  std::vector<InflightOffload> out;
  for (auto& [id, state] : clients_) {
    auto& list = state.inflight;
    auto keep = std::partition(list.begin(), list.end(),
                               [&](const InflightOffload& f) { return f.deadline_ms >= now_ms; });
    std::move(keep, list.end(), std::back_inserter(out));
    list.erase(keep, list.end());
  }
  return out;
}

std::vector<DiskNodeState> ClientRegistry::ExportDisks() const {
  MutexLock lock(&mu_);
  std::vector<DiskNodeState> out;
  for (const auto& [id, state] : clients_) {
    if (state.disk) out.push_back({id, state.disk->endpoint, state.disk->enable_offloading});
  }
  std::sort(out.begin(), out.end(),
            [](const DiskNodeState& a, const DiskNodeState& b) { return a.client < b.client; });
  return out;
}

std::vector<PendingOffloadState> ClientRegistry::ExportOffloads() const {
  MutexLock lock(&mu_);
  std::vector<PendingOffloadState> out;
  for (const auto& [id, state] : clients_) {
    if (state.offload_queue.empty()) continue;
    out.push_back({id, {state.offload_queue.begin(), state.offload_queue.end()}});
  }
  std::sort(out.begin(), out.end(), [](const PendingOffloadState& a, const PendingOffloadState& b) {
    return a.client < b.client;
  });
  return out;
}

void ClientRegistry::TouchAll(int64_t now_ms) {
  MutexLock lock(&mu_);
  for (auto& [id, state] : clients_) state.last_seen_ms = now_ms;
}

void ClientRegistry::HoldExpiry() {
  MutexLock lock(&mu_);
  expiry_held_ = true;
}

void ClientRegistry::ReleaseExpiry(int64_t now_ms) {
  MutexLock lock(&mu_);
  if (!expiry_held_) return;
  expiry_held_ = false;
  for (auto& [id, state] : clients_) state.last_seen_ms = now_ms;
}

bool ClientRegistry::expiry_held() const {
  MutexLock lock(&mu_);
  return expiry_held_;
}

void ClientRegistry::Clear() {
  MutexLock lock(&mu_);
  clients_.clear();
}

size_t ClientRegistry::size() const {
  MutexLock lock(&mu_);
  return clients_.size();
}

}  // namespace shelfmark
