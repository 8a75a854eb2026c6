// ChangedKeys: a shard's (tenant, key) pairs changed since the change feed
// last took them (directory/change_feed.h). With hot standbys every
// mutation appends one under the shard's write lock (a put twice: its
// start and its end), so the pairs go into one byte buffer that keeps its
// capacity from take to take: no allocation per change, where a vector of
// string pairs cost a malloc and a free of each key.
//
// Thread safety: none of its own (the shard's lock guards it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shelfmark {

class ChangedKeys {
 public:
  void Add(std::string_view tenant, std::string_view key) {
    refs_.push_back(Ref{bytes_.size(), tenant.size(), key.size()});
    bytes_.append(tenant);
    bytes_.append(key);
  }
  size_t size() const { return refs_.size(); }  // with repeats
  bool empty() const { return refs_.empty(); }

  struct Pair {
    std::string_view tenant;
    std::string_view key;
    auto operator<=>(const Pair&) const = default;
  };
  // Each distinct pair added since the last Clear, in (tenant, key) order.
  // The views are valid until the next Add or Clear.
  std::vector<Pair> Distinct() const {
    std::vector<Pair> pairs;
    pairs.reserve(refs_.size());
    for (const Ref& r : refs_) {
      pairs.push_back({{bytes_.data() + r.offset, r.tenant_size},
                       {bytes_.data() + r.offset + r.tenant_size, r.key_size}});
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    return pairs;
  }
  // Forgets every pair; the buffers keep their capacity.
  void Clear() {
    refs_.clear();
    bytes_.clear();
  }

 private:
  struct Ref {
    size_t offset;  // of the tenant's bytes; the key's follow
    size_t tenant_size;
    size_t key_size;
  };
  std::string bytes_;
  std::vector<Ref> refs_;
};

}  // namespace shelfmark
