// Mooncake's get_into_ranges, shared by the embedded store
// (python/native/store.h) and the store service (service_session.h): the
// answers' shape, and one key's fragments read one-sided into registered
// memory.
//
// Shape (RangeAnswers): per buffer i, per key j, one answer per fragment
// (its length or a negative code). Where the lists' shapes do not match,
// or the store is closed, every answer is INVALID_PARAMS (one per key when
// the key's lengths are missing); a key with no fragments answers none.
//
// Thread safety: free functions; reentrant (the Client's own rules apply).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "client/buffers.h"
#include "client/client.h"

namespace shelfmark::storeservice {

using RangeAnswers = std::vector<std::vector<std::vector<int64_t>>>;
using RangeLists = std::vector<std::vector<std::vector<uint64_t>>>;

// One fragment as the caller named it: `dst` is the buffer's address plus
// the fragment's offset, 0 when the fragment does not lie inside the
// registration that holds the buffer (never registered memory).
struct Fragment {
  uint64_t src_offset = 0;
  uint64_t length = 0;
  uint64_t dst = 0;
};

// The answers of get_into_ranges(ptrs, keys, dst_offsets, src_offsets,
// lengths); `room(ptr)` is the registered bytes from ptr to the end of the
// registration holding it (0 when none), so a fragment past its own
// buffer's registration is refused even where another registration follows
// it; `read_key(key, fragments)` answers each well-shaped key's fragments
// (one answer per fragment) and is not called when !open.
RangeAnswers ShapeRanges(
    bool open, const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
    const RangeLists& dst_offsets, const RangeLists& src_offsets, const RangeLists& lengths,
    const std::function<uint64_t(uint64_t)>& room,
    const std::function<std::vector<int64_t>(const std::string&, const std::vector<Fragment>&)>&
        read_key);

// One key's fragments read into `fragments[k].dst` (ReadRange, memory
// registered with `client`), answers per fragment. A fragment with
// readable[k] false (outside registered memory) is INVALID_PARAMS alone;
// when the read is refused as INVALID_PARAMS (a fragment past the object's
// end), the object's size sorts those out as BUFFER_OVERFLOW and the rest
// are read again.
std::vector<int64_t> ReadFragments(Client& client, std::string_view tenant, const std::string& key,
                                   const std::vector<ReadRange>& fragments,
                                   const std::vector<bool>& readable);

}  // namespace shelfmark::storeservice
