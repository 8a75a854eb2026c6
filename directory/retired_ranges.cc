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
  uint64_t released = 0;  // the lambda cannot be seen to hold mu_: sum here
  std::erase_if(ranges_, [&](const RetiredRange& r) {
    if (r.until_ms > now_ms) return false;
    release(r);
    released += r.bytes;
    return true;
  });
  bytes_ -= released;
}

size_t RetiredRanges::DropSegments(const std::vector<const SegmentEntry*>& segments) {
  MutexLock lock(&mu_);
  uint64_t dropped_bytes = 0;
  const size_t dropped = std::erase_if(ranges_, [&](const RetiredRange& r) {
    if (std::find(segments.begin(), segments.end(), r.segment) == segments.end()) return false;
    dropped_bytes += r.bytes;
    return true;
  });
  bytes_ -= dropped_bytes;
  return dropped;
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
