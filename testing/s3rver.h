// S3rver: one real S3 server (the npm package s3rver, run by
// scripts/s3rver.sh) on a free loopback port, with one bucket, in a fresh
// TempDir; stopped and removed with the object. The S3 tests (label s3) use
// it; the script installs s3rver with npm on first use.
//
// Thread safety: one thread.
#pragma once

#include <cstdint>
#include <string>

#include "testing/temp_dir.h"

namespace shelfmark::testing {

class S3rver {
 public:
  // The access key and secret s3rver accepts.
  static constexpr const char* kAccessKey = "S3RVER";
  static constexpr const char* kSecretKey = "S3RVER";

  explicit S3rver(const std::string& bucket);
  ~S3rver();
  S3rver(const S3rver&) = delete;
  S3rver& operator=(const S3rver&) = delete;

  // 0 when the server runs; else scripts/s3rver.sh's exit status, which
  // StartFailure() explains.
  int status() const { return status_; }
  std::string StartFailure() const;
  // "http://127.0.0.1:<port>".
  std::string endpoint() const;
  const std::string& bucket() const { return bucket_; }
  void Stop();

 private:
  const std::string bucket_;
  TempDir dir_{"s3rver"};
  uint16_t port_ = 0;
  int status_ = -1;
};

}  // namespace shelfmark::testing
