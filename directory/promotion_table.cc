#include "directory/promotion_table.h"

#include <algorithm>

namespace shelfmark {

ErrorCode PromotionTable::Add(const UUID& client, InflightPromotion promotion, size_t limit) {
  MutexLock lock(&mu_);
  std::vector<InflightPromotion>& mine = by_client_[client];
  for (const InflightPromotion& p : mine) {
    if (p.tenant == promotion.tenant && p.key == promotion.key) {
      return ErrorCode::OBJECT_ALREADY_EXISTS;
    }
  }
  if (mine.size() >= limit) return ErrorCode::NO_AVAILABLE_HANDLE;
  mine.push_back(std::move(promotion));
  ++size_;
  return ErrorCode::OK;
}

std::optional<InflightPromotion> PromotionTable::Take(const UUID& client,
                                                      std::string_view tenant,
                                                      std::string_view key) {
  MutexLock lock(&mu_);
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return std::nullopt;
  std::vector<InflightPromotion>& mine = it->second;
  auto p = std::find_if(mine.begin(), mine.end(), [&](const InflightPromotion& q) {
    return q.tenant == tenant && q.key == key;
  });
  if (p == mine.end()) return std::nullopt;
  InflightPromotion out = std::move(*p);
  mine.erase(p);
  --size_;
  if (mine.empty()) by_client_.erase(it);
  return out;
}

void PromotionTable::TakeExpired(int64_t now_ms,
                                 const std::function<void(const InflightPromotion&)>& release) {
  MutexLock lock(&mu_);
  for (auto it = by_client_.begin(); it != by_client_.end();) {
    size_ -= std::erase_if(it->second, [&](const InflightPromotion& p) {
      if (p.deadline_ms > now_ms) return false;
      release(p);
      return true;
    });
    it = it->second.empty() ? by_client_.erase(it) : std::next(it);
  }
}

size_t PromotionTable::DropSegments(const std::vector<const SegmentEntry*>& segments) {
  MutexLock lock(&mu_);
  size_t dropped = 0;
  for (auto it = by_client_.begin(); it != by_client_.end();) {
    dropped += std::erase_if(it->second, [&](const InflightPromotion& p) {
      return std::find(segments.begin(), segments.end(), p.segment) != segments.end();
    });
    it = it->second.empty() ? by_client_.erase(it) : std::next(it);
  }
  size_ -= dropped;
  return dropped;
}

std::vector<InflightPromotion> PromotionTable::Export() const {
  MutexLock lock(&mu_);
  std::vector<InflightPromotion> out;
  for (const auto& [client, mine] : by_client_) out.insert(out.end(), mine.begin(), mine.end());
  return out;
}

void PromotionTable::Clear() {
  MutexLock lock(&mu_);
  by_client_.clear();
  size_ = 0;
}

size_t PromotionTable::size() const {
  MutexLock lock(&mu_);
  return size_;
}

}  // namespace shelfmark
