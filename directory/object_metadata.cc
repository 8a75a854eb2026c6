#include "directory/object_metadata.h"

#include <algorithm>
#include <cstring>
#include <utility>

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

void ReplicaList::swap(ReplicaList& other) noexcept {
  // The union holds either the inline replica or the heap pointer; its
  // bytes move as they are, with the size and capacity that say which.
  unsigned char tmp[sizeof(inline_)];
  std::memcpy(tmp, static_cast<void*>(&inline_), sizeof(inline_));
  std::memcpy(static_cast<void*>(&inline_), static_cast<void*>(&other.inline_), sizeof(inline_));
  std::memcpy(static_cast<void*>(&other.inline_), tmp, sizeof(inline_));
  std::swap(size_, other.size_);
  std::swap(cap_, other.cap_);
}

void SwapVersions(ObjectMetadata& a, ObjectMetadata& b) {
  std::swap(a.writer, b.writer);
  std::swap(a.size, b.size);
  std::swap(a.checksum, b.checksum);
  const int64_t lease = a.lease_deadline_ms.load();
  a.lease_deadline_ms = b.lease_deadline_ms.load();
  b.lease_deadline_ms = lease;
  std::swap(a.group, b.group);
  std::swap(a.put_start_s, b.put_start_s);
  std::swap(a.soft_pin_deadline_s, b.soft_pin_deadline_s);
  a.replicas.swap(b.replicas);
  std::swap(a.data_type, b.data_type);
  std::swap(a.has_checksum, b.has_checksum);
  std::swap(a.hard_pin, b.hard_pin);
  std::swap(a.has_pending, b.has_pending);
  std::swap(a.offload_queued_stamp, b.offload_queued_stamp);
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

void ObjectMetadata::StartUses(uint64_t tick, uint32_t uses) {
  use_stamp.store((tick << 2) | std::min(uses, kMaxUses), std::memory_order_relaxed);
}

void ObjectMetadata::NoteUse(uint64_t tick) {
  StartUses(tick, uses() + 1);
}

void ObjectMetadata::ExtendLease(int64_t deadline_ms) {
  int64_t cur = lease_deadline_ms.load(std::memory_order_relaxed);
  while (cur < deadline_ms &&
         !lease_deadline_ms.compare_exchange_weak(cur, deadline_ms, std::memory_order_relaxed)) {
  }
}

}  // namespace shelfmark
