#include "directory/put_reservations.h"

#include <algorithm>

namespace shelfmark {

ErrorCode PutReservations::Add(PutReservation&& reservation, size_t limit) {
  MutexLock lock(&mu_);
  size_t& held = per_client_[reservation.client];
  if (held >= limit) {
    if (held == 0) per_client_.erase(reservation.client);
    return ErrorCode::NO_AVAILABLE_HANDLE;
  }
  ++held;
  bytes_ += BytesOf(reservation);
  const uint64_t id = reservation.id;
  by_id_.emplace(id, std::move(reservation));
  return ErrorCode::OK;
}

uint64_t PutReservations::BytesOf(const PutReservation& r) {
  return r.size * r.placed.size();
}

void PutReservations::ForgetLocked(const PutReservation& r) {
  bytes_ -= BytesOf(r);
  auto it = per_client_.find(r.client);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
}

std::optional<PutReservation> PutReservations::Take(const UUID& client, uint64_t id) {
  MutexLock lock(&mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.client != client) return std::nullopt;
  PutReservation out = std::move(it->second);
  by_id_.erase(it);
  ForgetLocked(out);
  return out;
}

template <typename Pick>
size_t PutReservations::EraseIfLocked(Pick&& pick, const Release& release) {
  size_t erased = 0;
  for (auto it = by_id_.begin(); it != by_id_.end();) {
    if (!pick(it->second)) {
      ++it;
      continue;
    }
    release(it->second);
    ForgetLocked(it->second);
    it = by_id_.erase(it);
    ++erased;
  }
  return erased;
}

void PutReservations::TakeExpired(int64_t now_ms, const Release& release) {
  MutexLock lock(&mu_);
  EraseIfLocked([now_ms](const PutReservation& r) { return r.deadline_ms <= now_ms; }, release);
}

void PutReservations::TakeClients(const std::vector<UUID>& clients, const Release& release) {
  MutexLock lock(&mu_);
  auto gone = [&clients](const PutReservation& r) {
    return std::find(clients.begin(), clients.end(), r.client) != clients.end();
  };
  EraseIfLocked(gone, release);
}

size_t PutReservations::DropSegments(const std::vector<const SegmentEntry*>& segments,
                                     const Release& release) {
  auto in = [&segments](const Placement& p) {
    return std::find(segments.begin(), segments.end(), p.segment) != segments.end();
  };
  MutexLock lock(&mu_);
  return EraseIfLocked(
      [&in](const PutReservation& r) { return std::any_of(r.placed.begin(), r.placed.end(), in); },
      [&](const PutReservation& r) {
        PutReservation rest = r;  // without the ranges that go with their segment
        rest.placed.clear();
        rest.held_ids.clear();
        for (size_t i = 0; i < r.placed.size(); ++i) {
          if (in(r.placed[i])) continue;
          rest.placed.push_back(r.placed[i]);
          if (i < r.held_ids.size()) rest.held_ids.push_back(r.held_ids[i]);
        }
        release(rest);
      });
}

std::vector<PutReservation> PutReservations::Export() const {
  MutexLock lock(&mu_);
  std::vector<PutReservation> out;
  out.reserve(by_id_.size());
  for (const auto& [id, r] : by_id_) out.push_back(r);
  return out;
}

void PutReservations::Clear() {
  MutexLock lock(&mu_);
  by_id_.clear();
  per_client_.clear();
  bytes_ = 0;
}

uint64_t PutReservations::bytes() const {
  MutexLock lock(&mu_);
  return bytes_;
}

size_t PutReservations::size() const {
  MutexLock lock(&mu_);
  return by_id_.size();
}

size_t PutReservations::held_by(const UUID& client) const {
  MutexLock lock(&mu_);
  auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

}  // namespace shelfmark
