// Client's batch calls: one master RPC per batch (BatchGet: for the keys
// the location cache does not hold), transfers packed into rounds that fit
// the staging buffer (one Transfer per round), items of a failed round
// retried alone. See client/client.h.
#include <cstring>
#include <memory>
#include <optional>
#include <span>
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
// block cannot be had get its error in *out (StagingBlock::error). (`Impl` is
// Client::Impl, deduced: the name is private to Client.)
template <typename Impl, typename Out, typename Body>
void ForEachRound(Impl* impl, const std::vector<size_t>& pending,
                  const std::vector<uint64_t>& sizes, std::vector<Out>* out, Body body) {
  for (const auto& round : PackRounds(pending, sizes, impl->options.staging_bytes)) {
    std::vector<uint64_t> offsets;
    const uint64_t total = Layout(round, sizes, &offsets);
    StagingBlock block(impl, total);
    if (block.data() == nullptr) {
      for (size_t i : round) (*out)[i] = block.error();
      continue;
    }
    std::vector<uint8_t*> at;
    for (uint64_t offset : offsets) at.push_back(block.data() + offset);
    body(round, at);
  }
}

}  // namespace

std::vector<Result<Client::Impl::Located>> Client::Impl::LocateAll(
    std::string_view tenant, const std::vector<std::string>& keys) {
  std::vector<Result<Located>> found(keys.size(), ErrorCode::INTERNAL_ERROR);
  std::vector<std::string> missing;
  std::vector<size_t> missing_at;
  std::vector<uint64_t> epochs;  // before the RPC: see LocationCache
  for (size_t i = 0; i < keys.size(); ++i) {
    if (auto hit = cache->Lookup(tenant, keys[i])) {
      found[i] = Located{std::move(hit), /*cached=*/true};
      continue;
    }
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
      found[i] = answers.ok() ? (*answers)[k].error() : answers.error();
      continue;
    }
    auto loc = std::make_shared<const ObjectLocation>(
        Order(tenant, keys[i], std::move((*answers)[k]).value(), start));
    cache->Insert(loc, epochs[k]);
    found[i] = Located{std::move(loc), /*cached=*/false};
  }
  return found;
}

std::vector<ErrorCode> Client::Impl::ReadBatch(std::string_view tenant,
                                               const std::vector<BatchRead>& items,
                                               std::vector<size_t>* stale) {
  std::vector<TransferOp> ops;
  std::vector<std::optional<uint64_t>> sums(items.size());  // the copies' checksums
  for (size_t k = 0; k < items.size(); ++k) {
    const ObjectLocation& loc = *items[k].found->location;
    const size_t first = ops.size();
    AppendOps(items[k].plan, loc.info.replicas[0].memory, &ops);
    AskChecksum(loc, items[k].plan, std::span(ops).subspan(first), &sums[k]);
  }
  const TransferStatus st = Move(TransferKind::READ, ops);
  std::vector<ErrorCode> rc;
  for (size_t k = 0; k < items.size(); ++k) {
    const BatchRead& item = items[k];
    const ObjectLocation& loc = *item.found->location;
    ErrorCode code = st.ok() ? CheckRead(loc, item.plan, sums[k]) : st.code;
    // The first replica failed in the batch: the item alone, with failover.
    if (code != ErrorCode::OK && code != ErrorCode::LEASE_EXPIRED) code = Read(loc, item.plan);
    if (code != ErrorCode::OK) {
      cache->Invalidate(tenant, loc.key);
      if (item.found->cached) stale->push_back(item.index);
    }
    rc.push_back(code);
  }
  return rc;
}

namespace {

// Whether a batch read can take the item's first replica in its round
// (MEMORY); else the item is read alone (LOCAL_DISK only, or none).
bool FirstReplicaIsMemory(const ObjectLocation& loc) {
  return !loc.info.replicas.empty() && loc.info.replicas[0].type == ReplicaType::MEMORY;
}

}  // namespace

std::vector<Result<std::string>> Client::BatchGet(std::string_view tenant,
                                                  const std::vector<std::string>& keys) {
  Impl& impl = *impl_;
  std::vector<Result<std::string>> out(keys.size(), ErrorCode::INTERNAL_ERROR);
  const auto found = impl.LocateAll(tenant, keys);
  auto to_string = [&](const ObjectLocation& loc) { return impl.ReadToString(loc); };
  std::vector<uint64_t> sizes(keys.size(), 0);
  std::vector<size_t> pending;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!found[i].ok()) {
      out[i] = found[i].error();
    } else if (!FirstReplicaIsMemory(*found[i]->location)) {
      out[i] = impl.ReadFound<std::string>(tenant, keys[i], {}, *found[i], to_string);
    } else {
      sizes[i] = found[i]->location->info.size;
      pending.push_back(i);
    }
  }
  std::vector<size_t> stale;  // cached locations that failed: read afresh after the rounds
  ForEachRound(&impl, pending, sizes, &out,
               [&](const std::vector<size_t>& round, const std::vector<uint8_t*>& at) {
    std::vector<Impl::BatchRead> items;
    for (size_t k = 0; k < round.size(); ++k) {
      const MutableBuffer slot{at[k], sizes[round[k]]};
      items.push_back({round[k], &*found[round[k]], ScatterPlan({&slot, 1}, sizes[round[k]]).value()});
    }
    const std::vector<ErrorCode> rc = impl.ReadBatch(tenant, items, &stale);
    for (size_t k = 0; k < round.size(); ++k) {
      const size_t i = round[k];
      if (rc[k] == ErrorCode::OK) {
        out[i] = std::string(reinterpret_cast<const char*>(at[k]), sizes[i]);
      } else {
        out[i] = rc[k];
      }
    }
  });
  // Not in the rounds: the fresh read needs a staging block of its own.
  for (size_t i : stale) out[i] = impl.ReadFresh<std::string>(tenant, keys[i], {}, to_string);
  return out;
}

std::vector<Result<uint64_t>> Client::BatchGetInto(std::string_view tenant,
                                                   const std::vector<std::string>& keys,
                                                   const std::vector<MutableBuffer>& dsts) {
  std::vector<std::vector<MutableBuffer>> parts;
  for (const MutableBuffer& dst : dsts) parts.push_back({dst});
  return BatchGetIntoParts(tenant, keys, parts);
}

std::vector<Result<uint64_t>> Client::BatchGetIntoParts(
    std::string_view tenant, const std::vector<std::string>& keys,
    const std::vector<std::vector<MutableBuffer>>& parts) {
  Impl& impl = *impl_;
  if (keys.size() != parts.size()) {
    return std::vector<Result<uint64_t>>(keys.size(), ErrorCode::INVALID_PARAMS);
  }
  std::vector<Result<uint64_t>> out(keys.size(), ErrorCode::INTERNAL_ERROR);
  const auto found = impl.LocateAll(tenant, keys);
  auto into = [&](size_t i) {
    return [&impl, &parts, i](const ObjectLocation& loc) { return impl.ReadInto(loc, parts[i]); };
  };
  std::vector<Impl::BatchRead> items;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!found[i].ok()) {
      out[i] = found[i].error();
      continue;
    }
    if (ErrorCode rc = impl.CheckRegistered(parts[i]); rc != ErrorCode::OK) {
      out[i] = rc;
      continue;
    }
    const ObjectLocation& loc = *found[i]->location;
    auto plan = ScatterPlan(parts[i], loc.info.size);
    if (!plan.ok()) {
      out[i] = plan.error();
    } else if (!FirstReplicaIsMemory(loc)) {
      out[i] = impl.ReadFound<uint64_t>(tenant, keys[i], {}, *found[i], into(i));
    } else {
      items.push_back({i, &*found[i], std::move(plan).value()});
    }
  }
  std::vector<size_t> stale;
  const std::vector<ErrorCode> rc = impl.ReadBatch(tenant, items, &stale);
  for (size_t k = 0; k < items.size(); ++k) {
    const size_t i = items[k].index;
    if (rc[k] == ErrorCode::OK) {
      out[i] = found[i]->location->info.size;
    } else {
      out[i] = rc[k];
    }
  }
  for (size_t i : stale) out[i] = impl.ReadFresh<uint64_t>(tenant, keys[i], {}, into(i));
  return out;
}

void Client::Impl::WriteBatch(const std::vector<size_t>& items,
                              const std::vector<const TransferPlan*>& plans,
                              const StartedReplicas& started, std::vector<ErrorCode>* out,
                              std::vector<std::optional<uint64_t>>* sums) {
  std::vector<TransferOp> ops;
  bool all_memory = true;
  for (size_t k = 0; k < items.size(); ++k) {
    const size_t first = ops.size();
    for (const ReplicaDescriptor& r : *started[items[k]]) {
      all_memory &= r.type == ReplicaType::MEMORY;
      AppendOps(*plans[k], r.memory, &ops);
    }
    if (sums != nullptr) {
      AskWriteChecksum(*plans[k], std::span(ops).subspan(first), &(*sums)[k]);
    }
  }
  if (all_memory && Move(TransferKind::WRITE, ops).ok()) return;
  // The batch failed as a whole: each item alone, so only bad ones fail.
  for (size_t k = 0; k < items.size(); ++k) {
    (*out)[items[k]] =
        WriteReplicas(*started[items[k]], *plans[k], sums != nullptr ? &(*sums)[k] : nullptr);
  }
}

std::vector<ErrorCode> Client::BatchPut(std::string_view tenant,
                                        const std::vector<std::string>& keys,
                                        const std::vector<std::string_view>& values,
                                        const PutOptions& options) {
  if (keys.size() != values.size()) {
    return std::vector<ErrorCode>(keys.size(), ErrorCode::INVALID_PARAMS);
  }
  Impl& impl = *impl_;
  if (impl.staging == nullptr) return std::vector<ErrorCode>(keys.size(), ErrorCode::INVALID_PARAMS);
  std::vector<uint64_t> sizes, checksums;
  for (std::string_view v : values) {
    sizes.push_back(v.size());
    if (options.compute_checksum) checksums.push_back(ObjectChecksum(v));
  }
  return impl.BatchPutWith(
      tenant, keys, sizes, options.config, checksums,
      [&](const std::vector<size_t>& pending, const Impl::StartedReplicas& started,
          std::vector<ErrorCode>* out) {
        ForEachRound(&impl, pending, sizes, out,
                     [&](const std::vector<size_t>& round, const std::vector<uint8_t*>& at) {
          std::vector<TransferPlan> plans;
          std::vector<const TransferPlan*> plan_of;
          plans.reserve(round.size());
          for (size_t k = 0; k < round.size(); ++k) {
            std::memcpy(at[k], values[round[k]].data(), sizes[round[k]]);
            const ConstBuffer staged{at[k], sizes[round[k]]};
            plans.push_back(GatherPlan({&staged, 1}).value());
            plan_of.push_back(&plans.back());
          }
          impl.WriteBatch(round, plan_of, started, out);
        });
      });
}

std::vector<ErrorCode> Client::BatchPutFrom(std::string_view tenant,
                                            const std::vector<std::string>& keys,
                                            const std::vector<ConstBuffer>& buffers,
                                            const PutOptions& options) {
  std::vector<std::vector<ConstBuffer>> parts;
  for (const ConstBuffer& b : buffers) parts.push_back({b});
  return BatchPutParts(tenant, keys, parts, options);
}

std::vector<ErrorCode> Client::BatchPutParts(std::string_view tenant,
                                             const std::vector<std::string>& keys,
                                             const std::vector<std::vector<ConstBuffer>>& parts,
                                             const PutOptions& options) {
  if (keys.size() != parts.size()) {
    return std::vector<ErrorCode>(keys.size(), ErrorCode::INVALID_PARAMS);
  }
  Impl& impl = *impl_;
  // Bad items fail alone, before the RPC: only the good ones are started.
  std::vector<ErrorCode> out(keys.size(), ErrorCode::OK);
  std::vector<TransferPlan> plans;
  std::vector<size_t> good;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto plan = GatherPlan(parts[i]);
    out[i] = impl.CheckRegistered(parts[i]);
    if (out[i] == ErrorCode::OK && !plan.ok()) out[i] = plan.error();
    if (out[i] != ErrorCode::OK) continue;
    good.push_back(i);
    plans.push_back(std::move(plan).value());
  }
  if (good.empty()) return out;
  std::vector<std::string> good_keys;
  std::vector<uint64_t> sizes;
  for (size_t k = 0; k < good.size(); ++k) {
    good_keys.push_back(keys[good[k]]);
    sizes.push_back(PlanBytes(plans[k]));
  }
  // The checksums travel with BatchPutEnd: computed as the bytes are copied
  // where they are copied by memcpy, else after the write.
  std::vector<uint64_t> end_checksums(good.size());
  const std::vector<ErrorCode> answers = impl.BatchPutWith(
      tenant, good_keys, sizes, options.config, {},
      [&](const std::vector<size_t>& pending, const Impl::StartedReplicas& started,
          std::vector<ErrorCode>* rc) {
        std::vector<const TransferPlan*> plan_of;
        for (size_t k : pending) plan_of.push_back(&plans[k]);
        std::vector<std::optional<uint64_t>> sums(pending.size());
        impl.WriteBatch(pending, plan_of, started, rc, options.compute_checksum ? &sums : nullptr);
        if (!options.compute_checksum) return;
        for (size_t j = 0; j < pending.size(); ++j) {
          end_checksums[pending[j]] = Impl::WrittenChecksum(plans[pending[j]], sums[j]);
        }
      },
      options.compute_checksum ? &end_checksums : nullptr);
  for (size_t k = 0; k < good.size(); ++k) out[good[k]] = answers[k];
  return out;
}

}  // namespace shelfmark
