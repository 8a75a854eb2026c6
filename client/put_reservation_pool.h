// PutReservationPool: the reservations one thread of a client holds for its
// next one-round-trip puts (MasterClient::ReservePut / CommitPut;
// docs/client.md, "One-round-trip puts"), by the shape they were placed
// for (size, replica count, preferred segments, preferred host).
//
// A reservation is usable only while two things hold, so that a put never
// writes into a range the master may have given to someone else:
//  - its use-by time (half its ttl after the client received it: the
//    master gives it back a whole ttl after it granted it);
//  - the channel connection it was granted on is still the one open and
//    intact (MasterClient::ChannelConnection): a restarted master, which
//    knows no reservation, has ended it.
// One that fails either is dropped, never written.
//
// Thread safety: none; each thread of a client has its own (with its own
// master connection).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace shelfmark {

class PutReservationPool {
 public:
  struct Held {
    PutReservationGrant grant;
    int64_t use_by_ms = 0;
    uint64_t connection = 0;
  };

  // A usable reservation for a put of `size` placed as `config` says;
  // drops the ones of that shape that are not usable any more.
  std::optional<Held> Take(uint64_t size, const PutConfig& config, uint64_t connection,
                           int64_t now_ms);
  // Holds a grant received at `now_ms` over `connection`.
  void Keep(uint64_t size, const PutConfig& config, PutReservationGrant grant,
            uint64_t connection, int64_t now_ms);
  // Holds again one the master kept (a refused commit), as it was.
  void Return(uint64_t size, const PutConfig& config, Held held);
  // Reservations off until `until_ms` (the master refused to grant any:
  // hot standbys, a master too old, no channel).
  void PauseUntil(int64_t until_ms) { paused_until_ms_ = until_ms; }
  bool paused(int64_t now_ms) const { return now_ms < paused_until_ms_; }
  size_t size() const;

 private:
  static std::string Shape(uint64_t size, const PutConfig& config);

  std::map<std::string, std::vector<Held>> by_shape_;
  int64_t paused_until_ms_ = 0;
};

}  // namespace shelfmark
