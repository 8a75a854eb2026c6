#include "storeservice/sessions.h"

#include <utility>

namespace shelfmark::storeservice {
namespace {

constexpr int kOk = 0;
int Code(ErrorCode code) { return static_cast<int>(code); }

const int kInvalid = Code(ErrorCode::INVALID_PARAMS);

// The pieces of key i line up: ptrs, sizes and offsets of one length.
bool Shaped(const std::vector<std::vector<uint64_t>>& ptrs,
            const std::vector<std::vector<uint64_t>>& sizes,
            const std::vector<std::vector<uint64_t>>& offsets, size_t i) {
  return ptrs[i].size() == sizes[i].size() && offsets[i].size() == sizes[i].size();
}

uint64_t Total(const std::vector<uint64_t>& sizes) {
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  return total;
}

// Per key of a ranged call: its bytes, or `code(i)` when negative.
template <typename Move>
std::vector<int64_t> PerKey(const std::vector<std::string>& keys,
                            const std::vector<std::vector<uint64_t>>& ptrs,
                            const std::vector<std::vector<uint64_t>>& sizes,
                            const std::vector<std::vector<uint64_t>>& offsets, const Move& move) {
  std::vector<int64_t> out(keys.size(), kInvalid);
  if (ptrs.size() != keys.size() || sizes.size() != keys.size() ||
      offsets.size() != keys.size()) {
    return out;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!Shaped(ptrs, sizes, offsets, i)) continue;
    const int rc = move(i);
    out[i] = rc == kOk ? static_cast<int64_t>(Total(sizes[i])) : rc;
  }
  return out;
}

bool SameClient(const std::weak_ptr<void>& owner, const SessionClient& ref) {
  return ref.client != nullptr && !owner.expired() && owner.lock() == ref.keep;
}

}  // namespace

template <typename Session>
const Session* Sessions::Find(std::map<std::string, Session>& table, const std::string& key,
                              const SessionClient& ref) {
  auto it = table.find(key);
  if (it == table.end()) return nullptr;
  if (!SameClient(it->second.owner, ref)) {
    table.erase(it);  // started on a client that is gone (close or a new setup)
    return nullptr;
  }
  return &it->second;
}

std::vector<int> Sessions::PutStart(const std::vector<std::string>& keys,
                                    const std::vector<uint64_t>& sizes, const PutConfig& config) {
  std::vector<int> out(keys.size(), kInvalid);
  const SessionClient ref = client_of_();
  if (ref.client == nullptr || sizes.size() != keys.size()) return out;
  std::vector<std::string> fresh_keys;
  std::vector<uint64_t> fresh_sizes;
  std::vector<size_t> fresh;  // indexes into keys
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (Find(puts_, keys[i], ref) != nullptr) {
        out[i] = Code(ErrorCode::OBJECT_ALREADY_EXISTS);
        continue;
      }
      fresh.push_back(i);
      fresh_keys.push_back(keys[i]);
      fresh_sizes.push_back(sizes[i]);
    }
  }
  if (fresh.empty()) return out;
  auto started = ref.client->StartPuts(ref.tenant, fresh_keys, fresh_sizes, config);
  MutexLock lock(&mu_);
  for (size_t k = 0; k < fresh.size(); ++k) {
    const size_t i = fresh[k];
    if (!started[k].ok()) {
      out[i] = Code(started[k].error());
      continue;
    }
    puts_[keys[i]] = PutSession{ref.keep, std::move(started[k]).value(), sizes[i]};
    out[i] = kOk;
  }
  return out;
}

std::vector<int64_t> Sessions::PutRanges(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<uint64_t>>& ptrs,
                                         const std::vector<std::vector<uint64_t>>& sizes,
                                         const std::vector<std::vector<uint64_t>>& offsets) {
  const SessionClient ref = client_of_();
  return PerKey(keys, ptrs, sizes, offsets, [&](size_t i) {
    PutSession session;
    {
      MutexLock lock(&mu_);
      const PutSession* found = Find(puts_, keys[i], ref);
      if (found == nullptr) return kInvalid;
      session = *found;
    }
    std::vector<ConstBuffer> parts;
    for (size_t j = 0; j < ptrs[i].size(); ++j) {
      parts.push_back(ConstBuffer{reinterpret_cast<const void*>(ptrs[i][j]), sizes[i][j]});
    }
    return Code(ref.client->WriteAt(session.replicas, session.size, parts, offsets[i]));
  });
}

template <typename Finish>
std::vector<int> Sessions::FinishPuts(const std::vector<std::string>& keys,
                                      const Finish& finish) {
  std::vector<int> out(keys.size(), kInvalid);
  const SessionClient ref = client_of_();
  if (ref.client == nullptr) return out;
  std::vector<std::string> open;
  std::vector<size_t> which;
  {
    MutexLock lock(&mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (Find(puts_, keys[i], ref) == nullptr) continue;
      open.push_back(keys[i]);
      which.push_back(i);
    }
  }
  if (open.empty()) return out;
  const std::vector<ErrorCode> done = finish(*ref.client, ref.tenant, open);
  MutexLock lock(&mu_);
  for (size_t k = 0; k < which.size(); ++k) {
    out[which[k]] = Code(done[k]);
    // A failed End or Revoke keeps the session: the caller may try again.
    if (done[k] == ErrorCode::OK) puts_.erase(open[k]);
  }
  return out;
}

std::vector<int> Sessions::PutEnd(const std::vector<std::string>& keys) {
  return FinishPuts(keys, [](Client& c, const std::string& tenant,
                             const std::vector<std::string>& open) {
    return c.EndPuts(tenant, open);
  });
}

std::vector<int> Sessions::PutRevoke(const std::vector<std::string>& keys) {
  return FinishPuts(keys, [](Client& c, const std::string& tenant,
                             const std::vector<std::string>& open) {
    return c.RevokePuts(tenant, open);
  });
}

std::vector<int> Sessions::GetStart(const std::vector<std::string>& keys) {
  std::vector<int> out(keys.size(), kInvalid);
  const SessionClient ref = client_of_();
  if (ref.client == nullptr) return out;
  GetOptions fresh;
  fresh.use_location_cache = false;  // a session's lease starts now
  for (size_t i = 0; i < keys.size(); ++i) {
    auto location = ref.client->Locate(ref.tenant, keys[i], fresh);
    if (!location.ok()) {
      out[i] = Code(location.error());
      continue;
    }
    MutexLock lock(&mu_);
    gets_[keys[i]] = GetSession{ref.keep, std::move(location).value()};  // a new start replaces
    out[i] = kOk;
  }
  return out;
}

std::vector<int64_t> Sessions::GetRanges(const std::vector<std::string>& keys,
                                         const std::vector<std::vector<uint64_t>>& ptrs,
                                         const std::vector<std::vector<uint64_t>>& sizes,
                                         const std::vector<std::vector<uint64_t>>& offsets) {
  const SessionClient ref = client_of_();
  return PerKey(keys, ptrs, sizes, offsets, [&](size_t i) {
    ObjectLocation location;
    {
      MutexLock lock(&mu_);
      const GetSession* found = Find(gets_, keys[i], ref);
      if (found == nullptr) return kInvalid;
      location = found->location;
    }
    std::vector<ReadRange> ranges;
    for (size_t j = 0; j < ptrs[i].size(); ++j) {
      ranges.push_back(ReadRange{offsets[i][j], sizes[i][j], reinterpret_cast<void*>(ptrs[i][j])});
    }
    return Code(ref.client->ReadRanges(location, ranges));
  });
}

int Sessions::GetEnd(const std::vector<std::string>& keys) {
  MutexLock lock(&mu_);
  for (const std::string& key : keys) gets_.erase(key);
  return kOk;
}

}  // namespace shelfmark::storeservice
