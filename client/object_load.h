// Object load for the demo and operators: put many objects whose bytes are
// a function of their key, then read every one back and say where it was
// served from (`shelfmark-cli fill` / `shelfmark-cli verify`).
//
//  - LoadValue(key, size): deterministic bytes (xorshift stream seeded by
//    the key's hash), so verify needs nothing but the key and the size.
//  - FillObjects: Put of PREFIX-<i> for i in [0, count) with a checksum; a
//    put answered NO_AVAILABLE_HANDLE (memory full until the master's
//    eviction runs) is retried every 50 ms for up to retry_ms; any other
//    error, or a put still failing after retry_ms, stops the fill.
//  - VerifyObjects: for each key one Locate (which replica types the master
//    lists now: not from the location cache) and one Read of that location (Get's rules, into a buffer
//    registered once); the bytes must equal LoadValue. OBJECT_NOT_FOUND
//    counts as evicted (a MEMORY-only object the master evicted is gone by
//    design); any other error or wrong bytes count as failures.
//
// Thread safety: the functions are reentrant; the Client may be shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "client/client.h"

namespace shelfmark {

std::string LoadValue(std::string_view key, uint64_t size);

// Client::Put, retried every 50 ms for up to `retry_ms` while it answers
// NO_AVAILABLE_HANDLE (memory full until eviction runs); counts the retries
// in *retries. The last answer.
ErrorCode PutRetryingWhileFull(Client& client, std::string_view tenant, std::string_view key,
                               std::string_view value, const PutOptions& options,
                               int64_t retry_ms, uint64_t* retries);
std::string LoadKey(std::string_view prefix, uint64_t index);

struct FillReport {
  uint64_t stored = 0;   // puts acknowledged
  uint64_t retries = 0;  // NO_AVAILABLE_HANDLE answers retried
  ErrorCode error = ErrorCode::OK;  // what stopped the fill (OK: all stored)
  std::string failed_key;
};

struct VerifyReport {
  uint64_t memory_only = 0;      // served; only MEMORY replicas listed
  uint64_t memory_and_disk = 0;  // served; MEMORY and LOCAL_DISK replicas
  uint64_t disk_only = 0;        // served from LOCAL_DISK: no MEMORY replica left
  uint64_t evicted = 0;          // OBJECT_NOT_FOUND
  uint64_t wrong_bytes = 0;
  uint64_t errors = 0;           // other failures
  // The first failure (wrong bytes: DATA_CORRUPTED).
  ErrorCode first_error = ErrorCode::OK;
  std::string first_failed_key;
  bool ok() const { return wrong_bytes == 0 && errors == 0; }
};

FillReport FillObjects(Client& client, std::string_view tenant, std::string_view prefix,
                       uint64_t count, uint64_t size, uint32_t replicas, int64_t retry_ms);
VerifyReport VerifyObjects(Client& client, std::string_view tenant, std::string_view prefix,
                           uint64_t count, uint64_t size);

}  // namespace shelfmark
