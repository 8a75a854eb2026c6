#include "client/put_reservation_pool.h"

#include <utility>

namespace shelfmark {

std::string PutReservationPool::Shape(uint64_t size, const PutConfig& config) {
  // Length-prefixed fields: no two shapes spell the same key.
  std::string key = std::to_string(size) + '/' + std::to_string(config.replica_num) + '/';
  auto add = [&key](const std::string& s) { key += std::to_string(s.size()) + ':' + s; };
  add(config.prefer_host);
  for (const std::string& s : config.preferred_segments) add(s);
  return key;
}

std::optional<PutReservationPool::Held> PutReservationPool::Take(uint64_t size,
                                                                 const PutConfig& config,
                                                                 uint64_t connection,
                                                                 int64_t now_ms) {
  auto it = by_shape_.find(Shape(size, config));
  if (it == by_shape_.end()) return std::nullopt;
  std::vector<Held>& held = it->second;
  std::optional<Held> out;
  while (!held.empty() && !out) {
    Held h = std::move(held.back());
    held.pop_back();
    if (connection != 0 && h.connection == connection && now_ms < h.use_by_ms) out = std::move(h);
  }
  if (held.empty()) by_shape_.erase(it);
  return out;
}

void PutReservationPool::Keep(uint64_t size, const PutConfig& config, PutReservationGrant grant,
                              uint64_t connection, int64_t now_ms) {
  const int64_t use_by = now_ms + grant.ttl_ms / 2;
  by_shape_[Shape(size, config)].push_back({std::move(grant), use_by, connection});
}

void PutReservationPool::Return(uint64_t size, const PutConfig& config, Held held) {
  by_shape_[Shape(size, config)].push_back(std::move(held));
}

size_t PutReservationPool::size() const {
  size_t n = 0;
  for (const auto& [shape, held] : by_shape_) n += held.size();
  return n;
}

}  // namespace shelfmark
