// Whether a range of this process's address space is mapped with the access
// a call needs: RegisterBuffer's check (client/client.h), so memory that
// would fault when a read lands in it (unmapped, PROT_READ, PROT_NONE) is
// refused with a code instead of killing the process later.
//
// The answer comes from /proc/self/maps (see mapped_range.cc for why this
// source and not a probe). It holds for the moment it was read: memory the
// caller unmaps or mprotects afterwards is the caller's contract to keep.
#pragma once

#include <cstdint>
#include <string_view>

namespace shelfmark {

enum class RangeAccess {
  kRead,       // readable (puts read from it)
  kReadWrite,  // readable and writable (gets write into it)
};

// True when every byte of [begin, end) lies in mappings of `maps` (the text
// of a /proc/<pid>/maps file, ascending, one mapping a line) that grant
// `access`. An empty range (begin == end) is true; begin > end is false, as
// is a line that does not parse before the range is covered.
bool MapsCover(std::string_view maps, uint64_t begin, uint64_t end, RangeAccess access);

// MapsCover over this process's /proc/self/maps for [addr, addr + size).
// False for a null addr, a range that wraps past the top of the address
// space, or when /proc/self/maps cannot be read (a process without procfs
// cannot prove its memory, so its registrations are refused).
bool MappedWith(const void* addr, uint64_t size, RangeAccess access);

}  // namespace shelfmark
