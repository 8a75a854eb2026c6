// ObjectStore: where snapshots are kept (a local directory or an S3 bucket).
// Keys are relative paths such as "mooncake_master_snapshot/c1/20260829_103000_123/manifest.txt".
//
// Contracts:
//  - a key is 1..1024 bytes of [A-Za-z0-9._-/], no leading or trailing '/',
//    no empty, "." or ".." component; anything else is INVALID_PARAMS and
//    touches nothing (a key can never leave the store's base);
//  - Put is atomic: a reader sees the old bytes or all the new ones, never a
//    part (local: temp file, fsync, rename, directory fsync; S3: one PUT);
//  - Get of a missing key is FILE_NOT_FOUND; List returns every key that
//    starts with `prefix`, sorted (a prefix that cannot start any valid key,
//    e.g. "../" or "a//", is INVALID_PARAMS); Remove of a missing key is OK;
//  - failures are typed: FILE_WRITE_FAIL / FILE_READ_FAIL (local I/O, e.g. a
//    full disk), STORE_UNAVAILABLE (S3 error status, connection failure or
//    timeout); nothing throws;
//  - Describe() names the store for logs and never includes credentials.
//
// Implementations: LocalStore (local_store.h), S3Store (s3_store.h; its
// last_error() tells which HTTP status or connection error a
// STORE_UNAVAILABLE came from).
//
// Thread safety: one store may be used from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace shelfmark {

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  virtual ErrorCode Put(std::string_view key, std::string_view bytes) = 0;
  virtual Result<std::string> Get(std::string_view key) = 0;
  virtual Result<std::vector<std::string>> List(std::string_view prefix) = 0;
  virtual ErrorCode Remove(std::string_view key) = 0;
  virtual std::string Describe() const = 0;
  // What the most recent failed call (of any thread) ran into, for logs:
  // the operation, the key and the cause ("PUT a/b: No space left on
  // device"); empty until a call fails. Never includes credentials.
  virtual std::string last_error() const = 0;
};

// Puts and removes the object `key`: whether the store can be written at
// all (the master checks its snapshot store at start-up rather than failing
// its first snapshot an interval later). On failure, *error names the store
// and what it ran into.
ErrorCode ProbeWritable(ObjectStore& store, std::string_view key, std::string* error);

// True when `key` satisfies the key contract above.
bool ValidObjectKey(std::string_view key);

// True when `prefix` can start a valid key: empty, a valid key, or a valid
// key followed by '/'. List() takes no other prefix.
bool ValidObjectPrefix(std::string_view prefix);

}  // namespace shelfmark
