#include "directory/ghost_keys.h"

namespace shelfmark {

void GhostKeys::Add(uint64_t hash, size_t limit) {
  if (set_.insert(hash).second) order_.push_back(hash);
  // A taken hash still in `order_` leaves the set when its turn comes (or,
  // re-added meanwhile, a little early: a ghost is a hint, not a promise).
  while (set_.size() > limit && !order_.empty()) {
    set_.erase(order_.front());
    order_.pop_front();
  }
  while (order_.size() > 2 * limit + 16) {  // taken hashes never pile up
    set_.erase(order_.front());
    order_.pop_front();
  }
}

bool GhostKeys::Take(uint64_t hash) { return set_.erase(hash) > 0; }

void GhostKeys::Clear() {
  order_.clear();
  set_.clear();
}

}  // namespace shelfmark
