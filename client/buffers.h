// The caller-memory value types of the zero-copy calls (client/client.h):
// a piece of an object to write, a piece of memory to read into, and a
// range of an object to read. The memory is the caller's and must stay
// valid (and registered, see Client::RegisterBuffer) for the call.
#pragma once

#include <cstdint>

namespace shelfmark {

// Read-only bytes a put takes its value (or one part of it) from.
struct ConstBuffer {
  const void* data = nullptr;
  uint64_t size = 0;
};

// Memory a get lands an object (or one piece of it) in.
struct MutableBuffer {
  void* data = nullptr;
  uint64_t size = 0;
};

// [offset, offset + length) of an object, read into dst (length bytes).
struct ReadRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  void* dst = nullptr;
};

}  // namespace shelfmark
