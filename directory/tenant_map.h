// TenantMap: a shard's tenant -> TenantState map, with the default tenant's
// state one pointer away. Most deployments use only the default tenant, and
// every keyed call finds its tenant first: through the KeyMap that is a slot
// line and an entry line per shard, two misses in a row before the object's
// own, in each of a batch's pipelined steps. The cached pointer lies beside
// the shard's lock, so the default tenant costs no miss of its own.
//
// Contract: the same as KeyMap<TenantState> for every call it has (entries
// do not move, so the cached pointer stays valid until its tenant is erased
// or the map is moved from). Thread safety: none of its own; the shard's
// lock guards it like the map.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include "common/object_key.h"
#include "directory/key_map.h"

namespace shelfmark {

// State: a shard keeps TenantState (directory/shard.h, TenantMap).
template <typename State>
class BasicTenantMap {
 public:
  BasicTenantMap() = default;
  BasicTenantMap(const BasicTenantMap&) = delete;
  BasicTenantMap& operator=(const BasicTenantMap&) = delete;
  BasicTenantMap(BasicTenantMap&& other) noexcept { *this = std::move(other); }
  BasicTenantMap& operator=(BasicTenantMap&& other) noexcept {
    map_ = std::move(other.map_);  // drops this map's entries, leaves `other` empty
    default_ = std::exchange(other.default_, nullptr);
    return *this;
  }

  State* Find(std::string_view tenant) { return IsDefault(tenant) ? default_ : map_.Find(tenant); }
  const State* Find(std::string_view tenant) const {
    return IsDefault(tenant) ? default_ : map_.Find(tenant);
  }
  std::pair<State*, bool> TryEmplace(std::string_view tenant) {
    if (IsDefault(tenant) && default_ != nullptr) return {default_, false};
    auto r = map_.TryEmplace(tenant);
    if (IsDefault(tenant)) default_ = r.first;
    return r;
  }
  bool Erase(std::string_view tenant) {
    if (IsDefault(tenant)) default_ = nullptr;
    return map_.Erase(tenant);
  }
  // f(std::string_view tenant, State& state); f must not insert or erase.
  template <typename F>
  void ForEach(F&& f) {
    map_.ForEach(std::forward<F>(f));
  }
  template <typename F>
  void ForEach(F&& f) const {
    map_.ForEach(std::forward<F>(f));
  }
  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }

 private:
  static bool IsDefault(std::string_view tenant) { return tenant == kDefaultTenant; }

  KeyMap<State> map_;
  State* default_ = nullptr;  // map_.Find(kDefaultTenant), kept by TryEmplace and Erase
};

}  // namespace shelfmark
