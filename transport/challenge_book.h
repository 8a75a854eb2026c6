// ChallengeBook: the challenges a node issued and not yet saw answered, for
// the data plane's handshakes (docs/transport.md, "Proving the cluster
// token"). A node hands a peer a fresh random nonce under a random ticket;
// the peer's proof must be made over that nonce and name the ticket. Take()
// forgets a ticket the first time it is named, so a recorded proof never
// verifies again: its ticket is gone, and no new one carries the same nonce.
//
// Invariants: at most `capacity` challenges are outstanding (issuing one
// more forgets the oldest); a challenge older than `lifetime_ms` is never
// returned; tickets are never 0 and never reused while outstanding.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "auth/proof.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace shelfmark {

class ChallengeBook {
 public:
  static constexpr size_t kDefaultCapacity = 4096;
  static constexpr int64_t kDefaultLifetimeMs = 30'000;

  struct Challenge {
    uint64_t ticket = 0;
    auth::Nonce nonce{};
  };
  // What Take() gives back: the nonce issued under the ticket and the bytes
  // remembered with it.
  struct Issued {
    auth::Nonce nonce{};
    std::string context;
  };

  // `clock` (nullptr: the steady clock) outlives the book.
  explicit ChallengeBook(const Clock* clock = nullptr, size_t capacity = kDefaultCapacity,
                         int64_t lifetime_ms = kDefaultLifetimeMs);
  ChallengeBook(const ChallengeBook&) = delete;
  ChallengeBook& operator=(const ChallengeBook&) = delete;

  // A fresh challenge, remembered with `context` (what the answer will be
  // checked against besides the nonce, e.g. the peer's own nonce).
  Challenge Issue(std::string context = {});
  // The challenge issued under `ticket` when it is outstanding and not
  // expired; nullopt otherwise. Either way the ticket is forgotten.
  std::optional<Issued> Take(uint64_t ticket);
  size_t outstanding() const;

 private:
  struct Entry {
    Issued issued;
    int64_t expires_ms = 0;
    std::list<uint64_t>::iterator position;  // in order_
  };
  void ForgetLocked(std::unordered_map<uint64_t, Entry>::iterator it) REQUIRES(mu_);

  const Clock* const clock_;
  const size_t capacity_;
  const int64_t lifetime_ms_;
  mutable Mutex mu_;
  std::unordered_map<uint64_t, Entry> by_ticket_ GUARDED_BY(mu_);
  std::list<uint64_t> order_ GUARDED_BY(mu_);  // oldest first
};

}  // namespace shelfmark
