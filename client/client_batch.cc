// Client's batch calls: one master RPC per batch (BatchGet: for the keys
// the location cache does not hold), transfers packed into rounds that fit
// the staging buffer (one Transfer per round), items of a failed round
// retried alone. See client/client.h.
#include <cstring>
#include <utility>

#include "client/client_impl.h"

namespace shelfmark {
namespace {

// Splits `items` (indexes) into rounds whose staging sizes sum to at most
// `capacity`; an item larger than `capacity` gets a round of its own.
std::vector<std::vector<size_t>> PackRounds(const std::vector<size_t>& items,
                                            const std::vector<uint64_t>& sizes,
                                            uint64_t capacity) {
  std::vector<std::vector<size_t>> rounds;
  uint64_t used = capacity;  // forces a first round
  for (size_t i : items) {
    const uint64_t need = StagingSize(sizes[i]);
    if (used + need > capacity || rounds.empty()) {
      rounds.emplace_back();
      used = 0;
    }
    rounds.back().push_back(i);
    used += need;
  }
  return rounds;
}

// Offsets of each item of `round` inside its staging block; returns the total.
uint64_t Layout(const std::vector<size_t>& round, const std::vector<uint64_t>& sizes,
                std::vector<uint64_t>* offsets) {
  uint64_t total = 0;
  for (size_t i : round) {
    offsets->push_back(total);
    total += StagingSize(sizes[i]);
  }
  return total;
}

// Runs `body(round, at)` for each round of `pending` in its own staging
// block, `at[k]` being where item round[k] lies in it; items of a round whose
// block cannot be had get NO_AVAILABLE_HANDLE in *out. (`Impl` is
// Client::Impl, deduced: the name is private to Client.)
template <typename Impl, typename Out, typename Body>
void ForEachRound(Impl* impl, const std::vector<size_t>& pending,
                  const std::vector<uint64_t>& sizes, std::vector<Out>* out, Body body) {
  for (const auto& round : PackRounds(pending, sizes, impl->options.staging_bytes)) {
    std::vector<uint64_t> offsets;
    const uint64_t total = Layout(round, sizes, &offsets);
    StagingBlock block(impl, total);
    if (block.data() == nullptr) {
      for (size_t i : round) (*out)[i] = ErrorCode::NO_AVAILABLE_HANDLE;
      continue;
    }
    std::vector<uint8_t*> at;
    for (uint64_t offset : offsets) at.push_back(block.data() + offset);
    body(round, at);
  }
}

}  // namespace

std::vector<Client::Impl::Located> Client::Impl::LocateAll(
    std::string_view tenant, const std::vector<std::string>& keys,
    std::vector<Result<std::string>>* out) {
  std::vector<Located> found(keys.size());
  std::vector<std::string> missing;
  std::vector<size_t> missing_at;
  std::vector<uint64_t> epochs;  // before the RPC: see LocationCache
  for (size_t i = 0; i < keys.size(); ++i) {
    found[i].location = cache->Lookup(tenant, keys[i]);
    found[i].cached = found[i].location != nullptr;
    if (found[i].cached) continue;
    missing.push_back(keys[i]);
    missing_at.push_back(i);
    epochs.push_back(cache->Epoch(tenant, keys[i]));
  }
  if (missing.empty()) return found;
  const int64_t start = clock->NowMs();
  auto answers = master().BatchGetReplicaList(tenant, missing);
  for (size_t k = 0; k < missing.size(); ++k) {
    const size_t i = missing_at[k];
    if (!answers.ok() || !(*answers)[k].ok()) {
      (*out)[i] = answers.ok() ? (*answers)[k].error() : answers.error();
      continue;
    }
    found[i].location = std::make_shared<const ObjectLocation>(
        Order(tenant, keys[i], std::move((*answers)[k]).value(), start));
    cache->Insert(found[i].location, epochs[k]);
  }
  return found;
}

std::vector<Result<std::string>> Client::BatchGet(std::string_view tenant,
                                                  const std::vector<std::string>& keys) {
  Impl& impl = *impl_;
  std::vector<Result<std::string>> out(keys.size(), ErrorCode::INTERNAL_ERROR);
  const std::vector<Impl::Located> found = impl.LocateAll(tenant, keys, &out);
  std::vector<uint64_t> sizes(keys.size(), 0);
  std::vector<size_t> pending;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (found[i].location == nullptr) continue;  // *out holds the lookup's error
    const ObjectLocation& loc = *found[i].location;
    sizes[i] = loc.info.size;
    if (loc.info.replicas.empty()) {
      out[i] = ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    } else if (loc.info.replicas[0].type != ReplicaType::MEMORY) {
      // LOCAL_DISK only: not an RMA round.
      out[i] = impl.ReadLocated(tenant, keys[i], {}, found[i]);
    } else {
      pending.push_back(i);
    }
  }
  std::vector<size_t> stale;  // cached locations that failed: read afresh after the rounds
  ForEachRound(&impl, pending, sizes, &out,
               [&](const std::vector<size_t>& round, const std::vector<uint8_t*>& at) {
    std::vector<TransferOp> ops;
    for (size_t k = 0; k < round.size(); ++k) {
      const ObjectLocation& loc = *found[round[k]].location;
      ops.push_back(WholeObjectOp(loc.info.replicas[0].memory, at[k], loc.info.size));
    }
    const TransferStatus st =
        impl.transports.Transfer(TransferKind::READ, ops, impl.options.transfer_timeout_ms);
    for (size_t k = 0; k < round.size(); ++k) {
      const size_t i = round[k];
      const ObjectLocation& loc = *found[i].location;
      ErrorCode rc = st.ok() ? impl.CheckRead(loc, at[k]) : st.code;
      // The first replica failed in the batch: the item alone, with failover.
      if (rc != ErrorCode::OK && rc != ErrorCode::LEASE_EXPIRED) rc = impl.Read(loc, at[k]);
      if (rc == ErrorCode::OK) {
        out[i] = std::string(reinterpret_cast<const char*>(at[k]), sizes[i]);
        continue;
      }
      impl.cache->Invalidate(tenant, keys[i]);
      out[i] = rc;
      // Not here: the fresh read needs a staging block of its own.
      if (found[i].cached) stale.push_back(i);
    }
  });
  for (size_t i : stale) out[i] = impl.GetFresh(tenant, keys[i], {});
  return out;
}

std::vector<ErrorCode> Client::BatchPut(std::string_view tenant,
                                        const std::vector<std::string>& keys,
                                        const std::vector<std::string_view>& values,
                                        const PutOptions& options) {
  if (keys.size() != values.size()) {
    return std::vector<ErrorCode>(keys.size(), ErrorCode::INVALID_PARAMS);
  }
  // The batch RPC carries one PutConfig for every key, so per-value
  // checksums go through single puts.
  // TODO(perf): per-item checksums in BatchPutStart.
  if (options.compute_checksum) {
    std::vector<ErrorCode> out;
    for (size_t i = 0; i < keys.size(); ++i) out.push_back(Put(tenant, keys[i], values[i], options));
    return out;
  }
  Impl& impl = *impl_;
  std::vector<uint64_t> sizes;
  for (std::string_view v : values) sizes.push_back(v.size());
  auto started = impl.master().BatchPutStart(tenant, keys, sizes, options.config);
  if (!started.ok()) return std::vector<ErrorCode>(keys.size(), started.error());
  std::vector<ErrorCode> out(keys.size(), ErrorCode::OK);
  std::vector<size_t> pending;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!(*started)[i].ok()) {
      out[i] = (*started)[i].error();
    } else {
      pending.push_back(i);
    }
  }
  ForEachRound(&impl, pending, sizes, &out,
               [&](const std::vector<size_t>& round, const std::vector<uint8_t*>& at) {
    std::vector<TransferOp> ops;
    bool all_memory = true;
    for (size_t k = 0; k < round.size(); ++k) {
      const size_t i = round[k];
      std::memcpy(at[k], values[i].data(), sizes[i]);
      for (const ReplicaDescriptor& r : *(*started)[i]) {
        all_memory &= r.type == ReplicaType::MEMORY;
        ops.push_back(WholeObjectOp(r.memory, at[k], sizes[i]));
      }
    }
    TransferStatus st;
    if (all_memory) {
      st = impl.transports.Transfer(TransferKind::WRITE, ops, impl.options.transfer_timeout_ms);
    }
    if (all_memory && st.ok()) return;
    // The round failed as a whole: each item alone, so only bad ones fail.
    for (size_t k = 0; k < round.size(); ++k) {
      const size_t i = round[k];
      out[i] = impl.WriteReplicas(*(*started)[i], at[k], sizes[i]);
    }
  });
  std::vector<std::string> done, failed;
  std::vector<size_t> done_at;
  for (size_t i : pending) {
    if (out[i] == ErrorCode::OK) {
      done.push_back(keys[i]);
      done_at.push_back(i);
    } else {
      failed.push_back(keys[i]);
    }
  }
  if (!failed.empty()) (void)impl.master().BatchPutRevoke(tenant, failed);
  if (!done.empty()) {
    auto ended = impl.master().BatchPutEnd(tenant, done);
    for (size_t k = 0; k < done_at.size(); ++k) {
      out[done_at[k]] = ended.ok() ? (*ended)[k] : ended.error();
      // A new object: as in Put.
      if (out[done_at[k]] == ErrorCode::OK) impl.cache->Invalidate(tenant, done[k]);
    }
  }
  return out;
}

}  // namespace shelfmark
