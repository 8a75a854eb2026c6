#include "directory/segment_table.h"

#include <algorithm>
#include <string_view>

namespace shelfmark {
namespace {

bool SameSegment(const Segment& a, const Segment& b) {
  return a.id == b.id && a.name == b.name && a.base == b.base && a.size == b.size &&
         a.endpoint == b.endpoint && a.protocol == b.protocol && a.rkey == b.rkey;
}

bool Overlaps(const Segment& a, const Segment& b) {
  return a.endpoint == b.endpoint && a.base < b.base + b.size && b.base < a.base + a.size;
}

// The host part of an endpoint "host:port" ("[v6]:port" keeps its brackets
// off); the whole endpoint when it has no port.
std::string_view EndpointHost(std::string_view endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return endpoint;
  std::string_view host = endpoint.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

bool HonoursPreference(const SegmentEntry& seg, const std::vector<std::string>& preferred,
                       const std::string& prefer_host) {
  if (preferred.empty() && prefer_host.empty()) return true;
  return std::find(preferred.begin(), preferred.end(), seg.segment.name) != preferred.end() ||
         (!prefer_host.empty() && EndpointHost(seg.segment.endpoint) == prefer_host);
}

namespace {

bool ValidSegment(const UUID& owner, const Segment& segment) {
  return !segment.id.is_nil() && !owner.is_nil() && segment.size != 0 && !segment.name.empty() &&
         segment.base + segment.size >= segment.base;
}

}  // namespace

ErrorCode SegmentTable::Mount(const UUID& owner, const Segment& segment) {
  if (!ValidSegment(owner, segment)) return ErrorCode::INVALID_PARAMS;
  WriterLock lock(&mu_);
  auto it = segments_.find(segment.id);
  if (it != segments_.end()) {
    const SegmentEntry& cur = *it->second;
    bool same = cur.owner == owner && SameSegment(cur.segment, segment) && !cur.unmounting;
    return same ? ErrorCode::OK : ErrorCode::SEGMENT_ALREADY_EXISTS;
  }
  for (const SegmentEntry* e : order_) {
    if (Overlaps(e->segment, segment)) return ErrorCode::INVALID_PARAMS;
  }
  auto entry = std::make_unique<SegmentEntry>(owner, segment);
  capacity_.fetch_add(entry->Capacity());
  order_.push_back(entry.get());
  segments_.emplace(segment.id, std::move(entry));
  return ErrorCode::OK;
}

Result<SegmentEntry*> SegmentTable::BeginUnmount(const UUID& owner, const UUID& segment_id) {
  WriterLock lock(&mu_);
  auto it = segments_.find(segment_id);
  if (it == segments_.end() || it->second->unmounting) return ErrorCode::SEGMENT_NOT_FOUND;
  if (it->second->owner != owner) return ErrorCode::ILLEGAL_CLIENT;
  SegmentEntry* entry = it->second.get();
  entry->unmounting = true;
  order_.erase(std::find(order_.begin(), order_.end(), entry));
  return entry;
}

std::vector<SegmentEntry*> SegmentTable::BeginUnmountAll(const UUID& owner) {
  WriterLock lock(&mu_);
  std::vector<SegmentEntry*> out;
  for (auto& [id, entry] : segments_) {
    if (entry->owner == owner && !entry->unmounting) {
      entry->unmounting = true;
      out.push_back(entry.get());
    }
  }
  for (SegmentEntry* e : out) order_.erase(std::find(order_.begin(), order_.end(), e));
  return out;
}

std::vector<SegmentEntry*> SegmentTable::BeginUnmountSuperseded(const UUID& owner,
                                                                const Segment& segment) {
  std::vector<SegmentEntry*> out;
  if (!ValidSegment(owner, segment) || segment.endpoint.empty()) return out;
  WriterLock lock(&mu_);
  if (segments_.contains(segment.id)) return out;  // not a new incarnation: Mount decides
  for (auto& [id, entry] : segments_) {
    if (entry->owner != owner && !entry->unmounting && entry->segment.endpoint == segment.endpoint &&
        entry->segment.protocol == segment.protocol) {
      entry->unmounting = true;
      out.push_back(entry.get());
    }
  }
  for (SegmentEntry* e : out) order_.erase(std::find(order_.begin(), order_.end(), e));
  return out;
}

ErrorCode SegmentTable::BeginDrain(const UUID& owner, const UUID& segment_id) {
  ReaderLock lock(&mu_);
  auto it = segments_.find(segment_id);
  if (it == segments_.end() || it->second->unmounting) return ErrorCode::SEGMENT_NOT_FOUND;
  if (it->second->owner != owner) return ErrorCode::ILLEGAL_CLIENT;
  // Under the segment's lock, so no TryAllocate that saw it open is still
  // running once this returns.
  MutexLock seg_lock(&it->second->mu);
  it->second->draining = true;
  return ErrorCode::OK;
}

void SegmentTable::Erase(SegmentEntry* entry) {
  WriterLock lock(&mu_);
  capacity_.fetch_sub(entry->Capacity());
  {
    MutexLock seg_lock(&entry->mu);
    allocated_.fetch_sub(entry->allocator.allocated_bytes());
  }
  segments_.erase(entry->segment.id);
}

std::vector<SegmentState> SegmentTable::Export() const {
  ReaderLock lock(&mu_);
  std::vector<SegmentState> out;
  out.reserve(order_.size());
  for (SegmentEntry* e : order_) {
    MutexLock seg_lock(&e->mu);
    out.push_back({e->owner, e->segment, e->allocator.alignment(), e->allocator.FreeExtents(),
                   e->draining.load()});
  }
  return out;
}

ErrorCode SegmentTable::Restore(const UUID& owner, const Segment& segment,
                                OffsetAllocator allocator) {
  if (!ValidSegment(owner, segment)) return ErrorCode::INVALID_PARAMS;
  WriterLock lock(&mu_);
  if (segments_.count(segment.id) != 0) return ErrorCode::SEGMENT_ALREADY_EXISTS;
  for (const SegmentEntry* e : order_) {
    if (Overlaps(e->segment, segment)) return ErrorCode::INVALID_PARAMS;
  }
  uint64_t allocated = allocator.allocated_bytes();
  auto entry = std::make_unique<SegmentEntry>(owner, segment, std::move(allocator));
  capacity_.fetch_add(entry->Capacity());
  allocated_.fetch_add(allocated);
  order_.push_back(entry.get());
  segments_.emplace(segment.id, std::move(entry));
  return ErrorCode::OK;
}

SegmentEntry* SegmentTable::Find(const UUID& segment_id) const {
  ReaderLock lock(&mu_);
  auto it = segments_.find(segment_id);
  if (it == segments_.end() || it->second->unmounting) return nullptr;
  return it->second.get();
}

bool SegmentTable::Holds(SegmentEntry* segment, uint64_t offset, uint64_t size) const {
  MutexLock lock(&segment->mu);
  return segment->allocator.IsAllocated(offset, size);
}

bool SegmentTable::HoldsAll(const std::vector<HoldQuery>& queries) const {
  for (size_t i = 0; i < queries.size();) {
    SegmentEntry* seg = queries[i].segment;
    MutexLock lock(&seg->mu);
    for (; i < queries.size() && queries[i].segment == seg; ++i) {
      if (!seg->allocator.IsAllocated(queries[i].offset, queries[i].size)) return false;
    }
  }
  return true;
}

void SegmentTable::Clear() {
  WriterLock lock(&mu_);
  order_.clear();
  segments_.clear();
  next_start_ = 0;
  allocated_ = 0;
  capacity_ = 0;
}

size_t SegmentTable::segment_count() const {
  ReaderLock lock(&mu_);
  return order_.size();
}

std::vector<SegmentEntry*> SegmentTable::OrderCandidates(
    const std::vector<std::string>& preferred, const std::string& prefer_host) {
  std::vector<SegmentEntry*> out;
  auto add = [&out](SegmentEntry* e) {
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  };
  for (const std::string& name : preferred) {
    for (SegmentEntry* e : order_) {
      if (e->segment.name == name) add(e);
    }
  }
  // The rest in round-robin order, those on prefer_host first.
  size_t n = order_.size();
  size_t start = n == 0 ? 0 : next_start_.fetch_add(1, std::memory_order_relaxed) % n;
  if (!prefer_host.empty()) {
    for (size_t i = 0; i < n; ++i) {
      SegmentEntry* e = order_[(start + i) % n];
      if (EndpointHost(e->segment.endpoint) == prefer_host) add(e);
    }
  }
  for (size_t i = 0; i < n; ++i) add(order_[(start + i) % n]);
  return out;
}

bool SegmentTable::TryAllocate(SegmentEntry* seg, uint64_t size, uint64_t* offset) {
  MutexLock lock(&seg->mu);
  if (seg->unmounting || seg->draining) return false;
  auto got = seg->allocator.Allocate(size);
  if (!got) return false;
  *offset = *got;
  allocated_.fetch_add(seg->allocator.AlignedSize(size), std::memory_order_relaxed);
  return true;
}

Result<std::vector<Placement>> SegmentTable::Allocate(
    uint32_t count, uint64_t size, const std::vector<std::string>& preferred,
    const std::string& prefer_host) {
  ReaderLock lock(&mu_);
  std::vector<Placement> placed;
  for (SegmentEntry* seg : OrderCandidates(preferred, prefer_host)) {
    if (placed.size() == count) break;
    uint64_t offset = 0;
    if (TryAllocate(seg, size, &offset)) placed.push_back({seg, offset});
  }
  if (placed.size() < count) {
    for (const Placement& p : placed) Free(p.segment, p.offset, size);
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  return placed;
}

Result<Placement> SegmentTable::AllocateOwned(const UUID& owner, uint64_t size) {
  ReaderLock lock(&mu_);
  for (SegmentEntry* seg : order_) {
    uint64_t offset = 0;
    if (seg->owner == owner && TryAllocate(seg, size, &offset)) return Placement{seg, offset};
  }
  return ErrorCode::NO_AVAILABLE_HANDLE;
}

Result<Placement> SegmentTable::AllocateNamed(std::string_view name, uint64_t size) {
  ReaderLock lock(&mu_);
  bool named = false;
  for (SegmentEntry* seg : order_) {
    if (seg->segment.name != name) continue;
    named = true;
    uint64_t offset = 0;
    if (TryAllocate(seg, size, &offset)) return Placement{seg, offset};
  }
  return named ? ErrorCode::NO_AVAILABLE_HANDLE : ErrorCode::SEGMENT_NOT_FOUND;
}

bool SegmentTable::HasNamed(std::string_view name) const {
  ReaderLock lock(&mu_);
  for (const SegmentEntry* seg : order_) {
    if (seg->segment.name == name && !seg->unmounting.load() && !seg->draining.load()) return true;
  }
  return false;
}

bool SegmentTable::CouldEverPlace(uint32_t count, uint64_t size) const {
  ReaderLock lock(&mu_);
  uint32_t able = 0;
  for (SegmentEntry* seg : order_) {
    // AlignedSize is 0 when rounding up overflows (sizes near 2^64).
    uint64_t need = seg->AlignedSize(size);
    if (!seg->unmounting && !seg->draining && need != 0 && need <= seg->Capacity() &&
        ++able == count)
      return true;
  }
  return false;
}

void SegmentTable::Free(SegmentEntry* segment, uint64_t offset, uint64_t size) {
  MutexLock lock(&segment->mu);
  if (segment->allocator.Free(offset, segment->allocator.AlignedSize(size))) {
    allocated_.fetch_sub(segment->allocator.AlignedSize(size), std::memory_order_relaxed);
  }
}

}  // namespace shelfmark
