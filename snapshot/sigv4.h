// AWS Signature Version 4 (header-based, "AWS4-HMAC-SHA256"): the canonical
// request, the string to sign, the signing key and the Authorization header,
// as pure functions over an explicit request and timestamp, so they can be
// checked against AWS's published examples. SHA-256 and HMAC come from
// OpenSSL libcrypto.
//
// Contracts: nothing here allocates global state or fails; every function is
// thread-safe. Hex output is lower case. `Request::path` is the canonical URI
// as sent (already URI-encoded, S3 style: no double encoding); query names
// and values are raw and are encoded here (RFC 3986 unreserved characters
// stay, everything else is %XX upper case), in the canonical order (sorted by
// encoded name, then value). The same encoding must be used for the URL that
// is sent: CanonicalQueryString() serves both.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shelfmark::sigv4 {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;        // "GET", "PUT", ...
  std::string path;          // canonical URI, e.g. "/bucket/a/b.txt"
  Pairs query;               // raw name/value pairs
  Pairs headers;             // every header to sign (name case and spacing free)
  std::string payload_hash;  // hex SHA-256 of the body (x-amz-content-sha256)
};

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string region;   // "us-east-1"
  std::string service;  // "s3"
};

// Lower-case hex of `bytes`.
std::string Hex(std::string_view bytes);
// Hex SHA-256 of `data` (the payload hash of an S3 request).
std::string Sha256Hex(std::string_view data);
// Raw (32-byte) HMAC-SHA256 of `data` under `key`.
std::string HmacSha256(std::string_view key, std::string_view data);
// RFC 3986 encoding; '/' stays when `keep_slash` (object key paths).
std::string UriEncode(std::string_view text, bool keep_slash);

// "20130524T000000Z" for a UTC time.
std::string AmzDate(std::time_t t);

// name=value&... sorted, encoded.
std::string CanonicalQueryString(const Pairs& query);
// "host;range;x-amz-date": lower-case names, sorted, ';'-joined.
std::string SignedHeaders(const Pairs& headers);
// METHOD\nPATH\nQUERY\nHEADERS\n\nSIGNED\nPAYLOADHASH (header values trimmed,
// inner runs of spaces collapsed).
std::string CanonicalRequest(const Request& request);
// "20130524/us-east-1/s3/aws4_request" (date = first 8 characters of amz_date).
std::string CredentialScope(std::string_view amz_date, const Credentials& creds);
// AWS4-HMAC-SHA256\nDATE\nSCOPE\nhex(sha256(canonical request)).
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
// HMAC chain "AWS4"+secret -> date -> region -> service -> "aws4_request" (raw).
std::string SigningKey(const Credentials& creds, std::string_view date);
// Hex signature of `request` at `amz_date`.
std::string Signature(const Request& request, const Credentials& creds,
                      std::string_view amz_date);
// "AWS4-HMAC-SHA256 Credential=AK/SCOPE,SignedHeaders=...,Signature=..."
std::string AuthorizationHeader(const Request& request, const Credentials& creds,
                                std::string_view amz_date);

}  // namespace shelfmark::sigv4
