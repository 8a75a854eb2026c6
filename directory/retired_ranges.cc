#include "directory/retired_ranges.h"

#include <algorithm>

namespace shelfmark {

void RetiredRanges::Add(const RetiredRange& range) {
  MutexLock lock(&mu_);
  ranges_.push_back(range);
  bytes_ += range.bytes;
}

void RetiredRanges::TakeExpired(int64_t now_ms,
                                const std::function<void(const RetiredRange&)>& release) {
  MutexLock lock(&mu_);
  std::erase_if(ranges_, [&](const RetiredRange& r) {
    if (r.until_ms > now_ms) return false;
    release(r);
    bytes_ -= r.bytes;
    return true;
  });
}

size_t RetiredRanges::DropSegments(const std::vector<const SegmentEntry*>& segments) {
  MutexLock lock(&mu_);
  return std::erase_if(ranges_, [&](const RetiredRange& r) {
    if (std::find(segments.begin(), segments.end(), r.segment) == segments.end()) return false;
    bytes_ -= r.bytes;
    return true;
  });
}

std::vector<RetiredRange> RetiredRanges::Export() const {
  MutexLock lock(&mu_);
  return ranges_;
}

void RetiredRanges::Clear() {
  MutexLock lock(&mu_);
  ranges_.clear();
  bytes_ = 0;
}

uint64_t RetiredRanges::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace shelfmark
