#include "storeservice/ranged_read.h"

namespace shelfmark::storeservice {
namespace {

constexpr int64_t kInvalid = static_cast<int64_t>(ErrorCode::INVALID_PARAMS);

int64_t Code(ErrorCode code) { return static_cast<int64_t>(code); }

}  // namespace

RangeAnswers ShapeRanges(
    bool open, const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
    const RangeLists& dst_offsets, const RangeLists& src_offsets, const RangeLists& lengths,
    const std::function<uint64_t(uint64_t)>& room,
    const std::function<std::vector<int64_t>(const std::string&, const std::vector<Fragment>&)>&
        read_key) {
  RangeAnswers out(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out[i].resize(keys[i].size());
    for (size_t j = 0; j < keys[i].size(); ++j) {
      // A key with no fragments answers none (Mooncake's shape).
      const size_t n = i < lengths.size() && j < lengths[i].size() ? lengths[i][j].size() : 1;
      out[i][j].assign(n, kInvalid);
    }
  }
  const bool shape_ok = ptrs.size() == keys.size() && dst_offsets.size() == keys.size() &&
                        src_offsets.size() == keys.size() && lengths.size() == keys.size();
  if (!open || !shape_ok) return out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (dst_offsets[i].size() != keys[i].size() || src_offsets[i].size() != keys[i].size() ||
        lengths[i].size() != keys[i].size()) {
      continue;
    }
    const uint64_t buffer_room = room(ptrs[i]);
    for (size_t j = 0; j < keys[i].size(); ++j) {
      const auto& dst = dst_offsets[i][j];
      const auto& src = src_offsets[i][j];
      const auto& len = lengths[i][j];
      if (dst.size() != len.size() || src.size() != len.size() || len.empty()) continue;
      std::vector<Fragment> fragments;
      for (size_t k = 0; k < len.size(); ++k) {
        const bool fits = dst[k] <= buffer_room && len[k] <= buffer_room - dst[k];
        fragments.push_back(Fragment{src[k], len[k], fits ? ptrs[i] + dst[k] : 0});
      }
      std::vector<int64_t> answers = read_key(keys[i][j], fragments);
      if (answers.size() == len.size()) out[i][j] = std::move(answers);
    }
  }
  return out;
}

std::vector<int64_t> ReadFragments(Client& client, std::string_view tenant, const std::string& key,
                                   const std::vector<ReadRange>& fragments,
                                   const std::vector<bool>& readable) {
  std::vector<int64_t> out(fragments.size(), kInvalid);
  auto read = [&](const std::vector<size_t>& which) {
    std::vector<ReadRange> ranges;
    for (size_t k : which) ranges.push_back(fragments[k]);
    const ErrorCode rc = client.GetIntoRanges(tenant, key, ranges);
    for (size_t k : which) {
      out[k] = rc == ErrorCode::OK ? static_cast<int64_t>(fragments[k].length) : Code(rc);
    }
    return rc;
  };
  std::vector<size_t> valid;
  for (size_t k = 0; k < fragments.size(); ++k) {
    if (readable[k]) valid.push_back(k);
  }
  if (valid.empty() || read(valid) != ErrorCode::INVALID_PARAMS) return out;
  auto size = client.GetSize(tenant, key);
  if (!size.ok()) return out;
  std::vector<size_t> inside;
  for (size_t k : valid) {
    const ReadRange& f = fragments[k];
    if (f.offset > *size || f.length > *size - f.offset) {
      out[k] = Code(ErrorCode::BUFFER_OVERFLOW);
    } else {
      inside.push_back(k);
    }
  }
  if (!inside.empty()) read(inside);
  return out;
}

}  // namespace shelfmark::storeservice
