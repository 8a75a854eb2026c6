// S3Store: an ObjectStore in an S3 bucket (AWS S3 or any S3-compatible server:
// MinIO, Ceph RGW, s3rver), over libcurl. libcurl signs every request with
// AWS Signature Version 4 (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3"; see
// docs/snapshot.md for what libcurl 7.88 signs and what S3Store supplies).
//
// Requests are path-style: <endpoint>/<bucket>/<prefix><key>. Every request
// carries x-amz-content-sha256 (the hex SHA-256 of the body, signed). Put is
// one PUT; Get is a
// GET (404 NoSuchKey -> FILE_NOT_FOUND); List is ListObjectsV2 (list-type=2)
// following continuation tokens until the listing is complete; Remove is a
// DELETE (a missing key is OK). Every other answer, a connection failure or a
// request running past `timeout_ms` is STORE_UNAVAILABLE, and last_error()
// tells which (HTTP status and S3 error code, or the curl error). A missing
// bucket is STORE_UNAVAILABLE, never FILE_NOT_FOUND.
//
// Keys in the bucket that are not valid object keys (after the prefix) are
// not listed. Credentials never appear in Describe() or last_error().
//
// Thread safety: all methods may be called concurrently; each request uses
// its own curl easy handle (idle handles are pooled so connections are
// reused).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/thread_annotations.h"
#include "snapshot/object_store.h"

namespace shelfmark {

struct S3Config {
  std::string endpoint;  // "http://127.0.0.1:4568", "https://s3.us-east-1.amazonaws.com"
  std::string bucket;
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  std::string prefix;          // prepended to every key; '/' is appended when missing
  int timeout_ms = 30000;      // whole request; also the connect timeout
  int list_page_size = 1000;   // ListObjectsV2 max-keys, 1..1000 (tests force pages)
};

// The configuration from the environment:
//   MOONCAKE_SNAPSHOT_S3_BUCKET     (required)
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (required)
//   AWS_REGION (else AWS_DEFAULT_REGION, else us-east-1)
//   MOONCAKE_SNAPSHOT_S3_ENDPOINT   (http:// or https://host[:port]; default
//                                    https://s3.<region>.amazonaws.com)
//   MOONCAKE_SNAPSHOT_S3_PREFIX     (optional key prefix)
//   MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS (optional, default 30000)
// A missing required variable or a bad value is INVALID_PARAMS, and
// *error_message (when given) names the variable (never a secret's value).
Result<S3Config> S3ConfigFromEnv(std::string* error_message = nullptr);

class S3Store : public ObjectStore {
 public:
  // Validates the configuration (endpoint scheme and form, bucket name,
  // region non-empty and without ':', non-empty credentials, timeout > 0,
  // page size 1..1000, prefix made of key characters); INVALID_PARAMS with
  // *error_message otherwise. Contacts nothing.
  static Result<std::unique_ptr<S3Store>> Open(S3Config config,
                                               std::string* error_message = nullptr);
  ~S3Store() override;
  S3Store(const S3Store&) = delete;
  S3Store& operator=(const S3Store&) = delete;

  ErrorCode Put(std::string_view key, std::string_view bytes) override;
  Result<std::string> Get(std::string_view key) override;
  Result<std::vector<std::string>> List(std::string_view prefix) override;
  ErrorCode Remove(std::string_view key) override;
  std::string Describe() const override;

  // E.g. "GET a/b: HTTP 403 SignatureDoesNotMatch" or "PUT a/b: curl:
  // Timeout was reached".
  std::string last_error() const override;

 private:
  struct Response {
    long status = 0;
    std::string body;
  };

  explicit S3Store(S3Config config);
  // One signed request for <bucket>/<object>[?query] (`query` already in
  // canonical form, see List); false (and last_error set) on a transport
  // failure.
  bool Perform(const std::string& method, const std::string& object, const std::string& query,
               std::string_view body, Response* response);
  // Records "METHOD what: HTTP status Code" for a non-2xx reply.
  void SetHttpError(const std::string& what, const Response& response);
  void SetError(std::string message);
  void* TakeHandle();
  void ReturnHandle(void* handle);

  const S3Config config_;

  mutable Mutex mu_;
  std::string last_error_ GUARDED_BY(mu_);
  std::vector<void*> idle_handles_ GUARDED_BY(mu_);  // CURL* easy handles
};

// How S3Store has libcurl sign (exposed for tests, which check it against
// AWS's published SigV4 examples): sets CURLOPT_AWS_SIGV4
// "aws:amz:<config.region>:s3" and the access key and secret as
// CURLOPT_USERNAME / CURLOPT_PASSWORD on `curl` (a CURL*). libcurl then signs
// the method, the path and query as sent, the Host header, every header in
// CURLOPT_HTTPHEADER and x-amz-date; the payload hash is the caller's
// x-amz-content-sha256 header. False when libcurl refuses an option.
bool SetCurlSigV4(void* curl, const S3Config& config);

// ListObjectsV2 reply parsing (exposed for tests).
struct S3ListPage {
  std::vector<std::string> keys;  // <Contents><Key>, entities decoded
  bool truncated = false;
  std::string next_token;
};
// DATA_CORRUPTED when `xml` is not a ListBucketResult or holds a bad entity.
Result<S3ListPage> ParseListObjectsV2(std::string_view xml);
// XML character data with the five named entities and &#N; / &#xH; decoded;
// an unknown or malformed entity is DATA_CORRUPTED.
Result<std::string> XmlUnescape(std::string_view text);

}  // namespace shelfmark
