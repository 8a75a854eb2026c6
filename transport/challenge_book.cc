#include "transport/challenge_book.h"

#include <algorithm>

namespace shelfmark {
namespace {

const Clock& DefaultClock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace

ChallengeBook::ChallengeBook(const Clock* clock, size_t capacity, int64_t lifetime_ms)
    : clock_(clock != nullptr ? clock : &DefaultClock()),
      capacity_(std::max<size_t>(1, capacity)),
      lifetime_ms_(lifetime_ms) {}

ChallengeBook::Challenge ChallengeBook::Issue(std::string context) {
  Challenge challenge;
  challenge.nonce = auth::NewNonce();
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mu_);
  // Lifetimes are equal, so the oldest challenges expire first.
  while (!order_.empty() && (by_ticket_.size() >= capacity_ ||
                             by_ticket_.at(order_.front()).expires_ms <= now)) {
    ForgetLocked(by_ticket_.find(order_.front()));
  }
  do {
    auth::RandomBytes(&challenge.ticket, sizeof(challenge.ticket));
  } while (challenge.ticket == 0 || by_ticket_.count(challenge.ticket) != 0);
  order_.push_back(challenge.ticket);
  by_ticket_.emplace(challenge.ticket, Entry{Issued{challenge.nonce, std::move(context)},
                                             now + lifetime_ms_, std::prev(order_.end())});
  return challenge;
}

std::optional<ChallengeBook::Issued> ChallengeBook::Take(uint64_t ticket) {
  const int64_t now = clock_->NowMs();
  MutexLock lock(&mu_);
  auto it = by_ticket_.find(ticket);
  if (it == by_ticket_.end()) return std::nullopt;
  std::optional<Issued> issued;
  if (it->second.expires_ms > now) issued = std::move(it->second.issued);
  ForgetLocked(it);
  return issued;
}

size_t ChallengeBook::outstanding() const {
  MutexLock lock(&mu_);
  return by_ticket_.size();
}

void ChallengeBook::ForgetLocked(std::unordered_map<uint64_t, Entry>::iterator it) {
  order_.erase(it->second.position);
  by_ticket_.erase(it);
}

}  // namespace shelfmark
