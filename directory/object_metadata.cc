#include "directory/object_metadata.h"

#include <cstring>

namespace shelfmark {

Replica MakeReplica(uint64_t id, ReplicaStatus status, ReplicaType type, const void* owner,
                    uint64_t offset) {
  Replica r;
  r.id = id;
  r.status = static_cast<uint64_t>(status);
  r.type = static_cast<uint64_t>(type);
  r.refcnt = 0;
  r.owner = owner;
  r.offset = offset;
  return r;
}

int32_t CeilSeconds(int64_t ms) { return static_cast<int32_t>((ms + 999) / 1000); }

ReplicaList::~ReplicaList() {
  if (cap_ > 1) delete[] heap_;
}

void ReplicaList::push_back(const Replica& r) {
  if (size_ < cap_) {
    data()[size_++] = r;
    return;
  }
  uint8_t new_cap = static_cast<uint8_t>(cap_ * 2);
  Replica* grown = new Replica[new_cap];
  std::memcpy(static_cast<void*>(grown), data(), size_ * sizeof(Replica));
  if (cap_ > 1) delete[] heap_;
  heap_ = grown;
  cap_ = new_cap;
  heap_[size_++] = r;
}

bool ObjectMetadata::HasComplete() const {
  for (const Replica& r : replicas) {
    if (r.is_complete()) return true;
  }
  return false;
}

bool ObjectMetadata::HasProcessing() const {
  for (const Replica& r : replicas) {
    if (r.status_enum() == ReplicaStatus::PROCESSING) return true;
  }
  return false;
}

bool ObjectMetadata::HasCompleteMemory() const {
  for (const Replica& r : replicas) {
    if (r.is_complete() && r.is_memory()) return true;
  }
  return false;
}

bool ObjectMetadata::HasCompleteDisk() const {
  for (const Replica& r : replicas) {
    if (r.is_complete() && !r.is_memory()) return true;
  }
  return false;
}

size_t ObjectMetadata::ReferenceCount() const {
  size_t n = 0;
  for (const Replica& r : replicas) n += r.refcnt;
  return n;
}

void ObjectMetadata::ExtendLease(int64_t deadline_ms) {
  int64_t cur = lease_deadline_ms.load(std::memory_order_relaxed);
  while (cur < deadline_ms &&
         !lease_deadline_ms.compare_exchange_weak(cur, deadline_ms, std::memory_order_relaxed)) {
  }
}

}  // namespace shelfmark
