#include "directory/held_ranges.h"

#include <algorithm>

namespace shelfmark {

HeldRangeState HeldRanges::StateOf(const HeldRange& r, int64_t now_ms) {
  const int64_t remaining = std::max<int64_t>(0, r.until_ms - now_ms);
  return {r.id, r.segment_id, r.offset, r.size, std::max(remaining, r.min_remaining_ms)};
}

void HeldRanges::Add(const HeldRange& range, bool track) {
  MutexLock lock(&mu_);
  held_[range.id] = range;
  if (!track) return;
  released_.erase(range.id);
  added_.insert(range.id);
}

void HeldRanges::NoteReleased(uint64_t id, bool track) {
  if (!track) return;
  added_.erase(id);
  released_.insert(id);
}

bool HeldRanges::Release(uint64_t id, bool track) {
  MutexLock lock(&mu_);
  if (held_.erase(id) == 0) return false;
  NoteReleased(id, track);
  return true;
}

size_t HeldRanges::DropSegments(const std::vector<const SegmentEntry*>& segments, bool track) {
  MutexLock lock(&mu_);
  std::vector<uint64_t> dropped;
  for (const auto& [id, r] : held_) {
    if (std::find(segments.begin(), segments.end(), r.segment) != segments.end()) {
      dropped.push_back(id);
    }
  }
  for (uint64_t id : dropped) {
    held_.erase(id);
    NoteReleased(id, track);
  }
  return dropped.size();
}

std::vector<uint64_t> HeldRanges::TakeReleased() {
  MutexLock lock(&mu_);
  std::vector<uint64_t> out(released_.begin(), released_.end());
  released_.clear();
  return out;
}

std::vector<HeldRangeState> HeldRanges::TakeAdded(int64_t now_ms) {
  MutexLock lock(&mu_);
  std::vector<HeldRangeState> out;
  out.reserve(added_.size());
  for (uint64_t id : added_) {
    auto it = held_.find(id);
    if (it != held_.end()) out.push_back(StateOf(it->second, now_ms));
  }
  added_.clear();
  return out;
}

std::vector<HeldRangeState> HeldRanges::Export(int64_t now_ms) const {
  MutexLock lock(&mu_);
  std::vector<HeldRangeState> out;
  out.reserve(held_.size());
  for (const auto& [id, r] : held_) out.push_back(StateOf(r, now_ms));
  return out;
}

void HeldRanges::Clear() {
  MutexLock lock(&mu_);
  held_.clear();
  added_.clear();
  released_.clear();
}

size_t HeldRanges::size() const {
  MutexLock lock(&mu_);
  return held_.size();
}

}  // namespace shelfmark
