// Client's batch puts (Client::Impl::BatchPutWith): in one master round trip
// when this thread holds, or can be granted, a reservation for every item
// (BatchPutReserved: write, then BatchCommitPut, which renews them), else in
// two (BatchPutTwoSteps: BatchPutStart, write, BatchPutEnd). Either way an
// object is visible only once its bytes are written (docs/client.md,
// "One-round-trip puts").
#include <numeric>
#include <optional>
#include <utility>

#include "client/client_impl.h"

namespace shelfmark {
namespace {

template <typename T>
std::vector<T> Pick(const std::vector<T>& all, const std::vector<size_t>& items) {
  std::vector<T> out;
  out.reserve(items.size());
  for (size_t i : items) out.push_back(all[i]);
  return out;
}

}  // namespace

std::vector<ErrorCode> Client::Impl::BatchPutWith(std::string_view tenant,
                                                  const std::vector<std::string>& keys,
                                                  const std::vector<uint64_t>& sizes,
                                                  const PutConfig& config,
                                                  const std::vector<uint64_t>& checksums,
                                                  const BatchWriter& write,
                                                  const std::vector<uint64_t>* end_checksums) {
  const BatchPutCall call{tenant, keys, sizes, config, checksums, write, end_checksums};
  std::vector<ErrorCode> out(keys.size(), ErrorCode::OK);
  const std::vector<size_t> rest = BatchPutReserved(call, &out);
  if (!rest.empty()) BatchPutTwoSteps(call, rest, &out);
  return out;
}

bool Client::Impl::TakeReservations(const BatchPutCall& call,
                                    std::vector<PutReservationPool::Held>* held) {
  MasterClient& m = master();
  PutReservationPool& pool = reservations();
  const int64_t now = clock->NowMs();
  const uint64_t connection = m.ChannelConnection();
  std::vector<std::optional<PutReservationPool::Held>> taken(call.keys.size());
  std::vector<size_t> missing;
  for (size_t i = 0; i < taken.size(); ++i) {
    taken[i] = pool.Take(call.sizes[i], call.config, connection, now);
    if (!taken[i]) missing.push_back(i);
  }
  auto give_back = [&] {
    for (size_t i = 0; i < taken.size(); ++i) {
      if (taken[i]) pool.Return(call.sizes[i], call.config, std::move(*taken[i]));
    }
    return false;
  };
  if (!missing.empty()) {
    if (pool.paused(now)) return give_back();
    auto grants = m.BatchReservePut(call.tenant, Pick(call.sizes, missing), call.config);
    if (!grants.ok()) {
      PauseReservations(grants.error(), now);
      return give_back();
    }
    const uint64_t granted_on = m.ChannelConnection();
    for (size_t k = 0; k < missing.size(); ++k) {
      pool.Keep(call.sizes[missing[k]], call.config, std::move((*grants)[k]), granted_on, now);
    }
    // Those taken before were granted on a connection that has ended
    // since (the call reconnected): not usable, dropped.
    if (granted_on != connection && missing.size() < taken.size()) return false;
    for (size_t i : missing) taken[i] = pool.Take(call.sizes[i], call.config, granted_on, now);
    for (size_t i : missing) {
      if (!taken[i]) return give_back();  // (none when the connection ended meanwhile)
    }
  }
  held->clear();
  for (auto& h : taken) held->push_back(std::move(*h));
  return true;
}

std::vector<size_t> Client::Impl::BatchPutReserved(const BatchPutCall& call,
                                                   std::vector<ErrorCode>* out) {
  std::vector<size_t> all(call.keys.size());
  std::iota(all.begin(), all.end(), size_t{0});
  std::vector<PutReservationPool::Held> held;
  if (!options.reserve_puts || !options.reserve_batch_puts || !options.lookup_channel ||
      !ReservableConfig(call.config) || all.empty() || !TakeReservations(call, &held)) {
    return all;
  }
  StartedReplicas placed;
  placed.reserve(held.size());
  for (const PutReservationPool::Held& h : held) placed.emplace_back(h.grant.replicas);
  call.write(all, placed, out);
  // A failed write (its reservation may lie in a segment that went since)
  // leaves the reservation to its deadline; the item goes in two steps,
  // placed anew.
  std::vector<size_t> rest, written;
  for (size_t i : all) {
    if ((*out)[i] == ErrorCode::OK) {
      written.push_back(i);
    } else {
      (*out)[i] = ErrorCode::OK;
      rest.push_back(i);
    }
  }
  if (written.empty()) return rest;
  std::vector<uint64_t> ids, sums;
  for (size_t i : written) {
    ids.push_back(held[i].grant.id);
    if (call.end_checksums != nullptr) {
      sums.push_back((*call.end_checksums)[i]);
    } else if (!call.checksums.empty()) {
      sums.push_back(call.checksums[i]);
    }
  }
  MasterClient& m = master();
  auto committed =
      m.BatchCommitPut(call.tenant, Pick(call.keys, written), ids, sums, call.config, true);
  PutReservationPool& pool = reservations();
  for (size_t k = 0; k < written.size(); ++k) {
    const size_t i = written[k];
    const ErrorCode rc = committed.ok()
                             ? ((*committed)[k].ok() ? ErrorCode::OK : (*committed)[k].error())
                             : committed.error();
    if (rc == ErrorCode::OK) {
      if (const auto& next = (*committed)[k].value()) {
        pool.Keep(call.sizes[i], call.config, *next, m.ChannelConnection(), clock->NowMs());
      }
      reserved_puts.fetch_add(1, std::memory_order_relaxed);
      cache->Invalidate(call.tenant, call.keys[i]);  // a new object, as in Put
    } else if (std::optional<ErrorCode> answer =
                   CommitRefused(rc, call.sizes[i], call.config, std::move(held[i]))) {
      (*out)[i] = *answer;
    } else {
      rest.push_back(i);
    }
  }
  return rest;
}

void Client::Impl::BatchPutTwoSteps(const BatchPutCall& call, const std::vector<size_t>& items,
                                    std::vector<ErrorCode>* out) {
  const std::vector<std::string> keys = Pick(call.keys, items);
  const std::vector<uint64_t> checksums =
      call.checksums.empty() ? std::vector<uint64_t>{} : Pick(call.checksums, items);
  auto started =
      master().BatchPutStart(call.tenant, keys, Pick(call.sizes, items), call.config, checksums);
  if (!started.ok()) {
    for (size_t i : items) (*out)[i] = started.error();
    return;
  }
  // The writer takes indexes into the whole call: each started item at its place.
  StartedReplicas placed(call.keys.size(), ErrorCode::INVALID_PARAMS);
  std::vector<size_t> pending;
  for (size_t k = 0; k < items.size(); ++k) {
    if (!(*started)[k].ok()) {
      (*out)[items[k]] = (*started)[k].error();
      continue;
    }
    placed[items[k]] = std::move((*started)[k]);
    pending.push_back(items[k]);
  }
  call.write(pending, placed, out);
  std::vector<std::string> done, failed;
  std::vector<size_t> done_at;
  std::vector<uint64_t> done_checksums;
  for (size_t i : pending) {
    if ((*out)[i] == ErrorCode::OK) {
      done.push_back(call.keys[i]);
      done_at.push_back(i);
      if (call.end_checksums != nullptr) done_checksums.push_back((*call.end_checksums)[i]);
    } else {
      failed.push_back(call.keys[i]);
    }
  }
  if (!failed.empty()) (void)master().BatchPutRevoke(call.tenant, failed);
  if (done.empty()) return;
  auto ended = master().BatchPutEnd(call.tenant, done, done_checksums);
  for (size_t k = 0; k < done_at.size(); ++k) {
    (*out)[done_at[k]] = ended.ok() ? (*ended)[k] : ended.error();
    // A new object: a cached location of the key would be of a removed one.
    if ((*out)[done_at[k]] == ErrorCode::OK) cache->Invalidate(call.tenant, done[k]);
  }
}

}  // namespace shelfmark
