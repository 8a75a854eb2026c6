// RunPipelined: the loop of a batch call that hides its keys' cache misses
// (group prefetching). A lookup in a big KeyMap costs two misses one after
// the other, the slot array's line and then the entry's; one key at a time
// they are paid in full. Here key i is visited only after its slot was
// requested kSlotLead keys earlier and its entry (found through the slot,
// by then loaded) kEntryLead keys earlier, so the misses of several keys
// overlap with the work on the current one.
//
// Thread safety: none of its own; the callbacks take whatever locks they
// need (the directory's warm steps take the shard's reader lock for the
// moment of the prefetch: a prefetch issued from a pointer read under the
// lock is harmless even after the lock is dropped).
#pragma once

#include <algorithm>
#include <cstddef>

namespace shelfmark {

inline constexpr size_t kSlotLead = 8;   // keys between a slot's prefetch and the visit
inline constexpr size_t kEntryLead = 4;  // keys between an entry's prefetch and the visit

// Calls visit(i) for i = 0..n-1 in order. Before visit(i), warm_slot(i) and
// then warm_entry(i) were each called exactly once, warm_slot(i) at least
// kSlotLead - kEntryLead calls of warm_entry earlier where n allows.
template <typename WarmSlot, typename WarmEntry, typename Visit>
void RunPipelined(size_t n, WarmSlot&& warm_slot, WarmEntry&& warm_entry, Visit&& visit) {
  for (size_t i = 0; i < std::min(n, kSlotLead); ++i) warm_slot(i);
  for (size_t i = 0; i < std::min(n, kEntryLead); ++i) warm_entry(i);
  for (size_t i = 0; i < n; ++i) {
    if (i + kSlotLead < n) warm_slot(i + kSlotLead);
    if (i + kEntryLead < n) warm_entry(i + kEntryLead);
    visit(i);
  }
}

}  // namespace shelfmark
