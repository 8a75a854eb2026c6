// LocalStore: an ObjectStore in a local directory. Key "a/b/c" is the file
// <base>/a/b/c.
//
// Contracts (beyond object_store.h):
//  - Open() takes an existing absolute directory; anything else is
//    INVALID_PARAMS;
//  - Put writes "<leaf>~tmp.<pid>.<random>" beside the target (a name that is
//    never a valid key, so List and Get can never see it), writes everything,
//    fsyncs, closes, renames it over the key and fsyncs the directory; missing
//    parent directories are created and each new one's parent fsynced. Any
//    failure (short write, ENOSPC, EIO, a path component that is a file) is
//    FILE_WRITE_FAIL and removes the temp file; the old value stays;
//  - paths are walked one component at a time from a descriptor of the base
//    with O_NOFOLLOW: a symbolic link inside the tree is never followed and
//    is not an object (Get through or of one is FILE_NOT_FOUND, List skips
//    it, Remove through a linked directory is a no-op and Remove of a link
//    unlinks the link, never its target; Put through a linked directory is
//    FILE_WRITE_FAIL); Get of a FIFO or device file is FILE_OPEN_FAIL;
//  - List walks the tree under the prefix's directory and returns regular
//    files whose relative path is a valid key, '/'-separated and sorted;
//    leftover temp files of a crashed Put are skipped; an invalid prefix
//    (not the start of any valid key) is INVALID_PARAMS;
//  - Remove unlinks the file, fsyncs its directory and removes the parent
//    directories it leaves empty, up to (not including) the base; those of
//    a missing key too (a failed Put can leave its directories empty).
//  - A key component must also fit the file system's NAME_MAX (255 bytes)
//    together with the temp suffix (about 30 bytes); longer ones fail with
//    FILE_WRITE_FAIL.
//
// Thread safety: all methods may be called concurrently, also from several
// processes on the same directory (a Put racing a Remove that prunes its
// directory retries the directory creation).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "snapshot/object_store.h"

namespace shelfmark {

class LocalStore : public ObjectStore {
 public:
  static Result<std::unique_ptr<LocalStore>> Open(std::string base);
  ~LocalStore() override;
  LocalStore(const LocalStore&) = delete;
  LocalStore& operator=(const LocalStore&) = delete;

  ErrorCode Put(std::string_view key, std::string_view bytes) override;
  Result<std::string> Get(std::string_view key) override;
  Result<std::vector<std::string>> List(std::string_view prefix) override;
  ErrorCode Remove(std::string_view key) override;
  std::string Describe() const override;
  // E.g. "PUT a/b: No space left on device" (Put and Remove record theirs).
  std::string last_error() const override;

  const std::string& base() const { return base_; }

  // The temp file name Put uses for `leaf` (the key's last component).
  static std::string TempName(std::string_view leaf);

 private:
  LocalStore(std::string base, int base_fd) : base_(std::move(base)), base_fd_(base_fd) {}

  // Records "OP key: strerror(err)" as last_error() and returns `code`.
  ErrorCode Failed(std::string_view op, std::string_view key, int err, ErrorCode code);

  std::string base_;
  int base_fd_;  // O_DIRECTORY descriptor of base_, for *at() walks
  mutable Mutex error_mu_;
  std::string last_error_ GUARDED_BY(error_mu_);
};

}  // namespace shelfmark
