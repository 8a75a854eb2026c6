#include "snapshot/s3_store.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include "common/utf8.h"

namespace shelfmark {
namespace {

constexpr size_t kMaxIdleHandles = 8;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool PrefixChars(std::string_view s) {
  return s.empty() || ValidObjectKey(s);
}

bool ValidBucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              (c >= 'A' && c <= 'Z') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// "http(s)://host[:port][/]" -> host[:port]; empty when malformed.
std::string EndpointHost(std::string_view endpoint) {
  std::string_view rest;
  if (endpoint.starts_with("http://")) {
    rest = endpoint.substr(7);
  } else if (endpoint.starts_with("https://")) {
    rest = endpoint.substr(8);
  } else {
    return "";
  }
  if (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.empty()) return "";
  for (char c : rest) {
    // No path, query, user info or whitespace: only a host and a port.
    if (c == '/' || c == '?' || c == '#' || c == '@' || c <= ' ' || c == 127) return "";
  }
  return std::string(rest);
}

// "<tag>" or "</tag>". Built by appending: GCC 12 at -O3 (Release) reports a
// false -Wrestrict for "<" + std::string(tag) + ">".
std::string XmlTag(std::string_view opening, std::string_view tag) {
  std::string text(opening);
  text.append(tag);
  text.push_back('>');
  return text;
}

// The text between the first <tag> and the following </tag> at or after
// `*pos`; advances *pos past it. False when absent.
bool NextElement(std::string_view xml, std::string_view tag, size_t* pos,
                 std::string_view* inner) {
  std::string open = XmlTag("<", tag);
  std::string close = XmlTag("</", tag);
  size_t start = xml.find(open, *pos);
  if (start == std::string_view::npos) return false;
  start += open.size();
  size_t end = xml.find(close, start);
  if (end == std::string_view::npos) return false;
  *inner = xml.substr(start, end - start);
  *pos = end + close.size();
  return true;
}

std::string ElementText(std::string_view xml, std::string_view tag) {
  size_t pos = 0;
  std::string_view inner;
  if (!NextElement(xml, tag, &pos, &inner)) return "";
  auto text = XmlUnescape(inner);
  return text.ok() ? std::move(text.value()) : std::string(inner);
}

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Lower-case hex SHA-256 of `data` (x-amz-content-sha256); libcurl 7.88 does
// not compute it for a request body.
std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

// RFC 3986 encoding of a query value (unreserved characters stay, the rest is
// %XX upper case), as SigV4's canonical query string needs it.
std::string QueryEscape(std::string_view value) {
  if (value.empty()) return "";  // (a length of 0 would make curl use strlen)
  char* escaped = curl_easy_escape(nullptr, value.data(), static_cast<int>(value.size()));
  if (escaped == nullptr) return "";
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

bool Success(long status) { return status >= 200 && status < 300; }

}  // namespace

Result<std::string> XmlUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out.push_back(text[i]);
      continue;
    }
    size_t semi = text.find(';', i);
    if (semi == std::string_view::npos) return ErrorCode::DATA_CORRUPTED;
    std::string_view entity = text.substr(i + 1, semi - i - 1);
    if (entity == "amp") {
      out.push_back('&');
    } else if (entity == "lt") {
      out.push_back('<');
    } else if (entity == "gt") {
      out.push_back('>');
    } else if (entity == "quot") {
      out.push_back('"');
    } else if (entity == "apos") {
      out.push_back('\'');
    } else if (entity.size() >= 2 && entity[0] == '#') {
      bool hex = entity[1] == 'x' || entity[1] == 'X';
      std::string_view digits = entity.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cp,
                                       hex ? 16 : 10);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
          cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return ErrorCode::DATA_CORRUPTED;
      }
      AppendUtf8(cp, &out);
    } else {
      return ErrorCode::DATA_CORRUPTED;
    }
    i = semi;
  }
  return out;
}

Result<S3ListPage> ParseListObjectsV2(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) return ErrorCode::DATA_CORRUPTED;
  S3ListPage page;
  size_t pos = 0;
  std::string_view contents;
  while (NextElement(xml, "Contents", &pos, &contents)) {
    size_t key_pos = 0;
    std::string_view key;
    if (!NextElement(contents, "Key", &key_pos, &key)) return ErrorCode::DATA_CORRUPTED;
    auto text = XmlUnescape(key);
    if (!text.ok()) return text.error();
    page.keys.push_back(std::move(text.value()));
  }
  size_t tpos = 0;
  std::string_view truncated;
  if (NextElement(xml, "IsTruncated", &tpos, &truncated)) page.truncated = truncated == "true";
  size_t npos = 0;
  std::string_view token;
  if (NextElement(xml, "NextContinuationToken", &npos, &token)) {
    auto text = XmlUnescape(token);
    if (!text.ok()) return text.error();
    page.next_token = std::move(text.value());
  }
  if (page.truncated && page.next_token.empty()) return ErrorCode::DATA_CORRUPTED;
  return page;
}

Result<S3Config> S3ConfigFromEnv(std::string* error_message) {
  auto fail = [&](std::string message) -> Result<S3Config> {
    if (error_message) *error_message = std::move(message);
    return ErrorCode::INVALID_PARAMS;
  };
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  S3Config config;
  config.bucket = env("MOONCAKE_SNAPSHOT_S3_BUCKET");
  if (config.bucket.empty()) return fail("MOONCAKE_SNAPSHOT_S3_BUCKET is not set");
  config.access_key = env("AWS_ACCESS_KEY_ID");
  if (config.access_key.empty()) return fail("AWS_ACCESS_KEY_ID is not set");
  config.secret_key = env("AWS_SECRET_ACCESS_KEY");
  if (config.secret_key.empty()) return fail("AWS_SECRET_ACCESS_KEY is not set");
  config.region = env("AWS_REGION");
  if (config.region.empty()) config.region = env("AWS_DEFAULT_REGION");
  if (config.region.empty()) config.region = "us-east-1";
  config.endpoint = env("MOONCAKE_SNAPSHOT_S3_ENDPOINT");
  if (config.endpoint.empty()) {
    config.endpoint = "https://s3." + config.region + ".amazonaws.com";
  } else if (EndpointHost(config.endpoint).empty()) {
    return fail("MOONCAKE_SNAPSHOT_S3_ENDPOINT must be http://host[:port] or https://host[:port]");
  }
  config.prefix = env("MOONCAKE_SNAPSHOT_S3_PREFIX");
  std::string timeout = env("MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS");
  if (!timeout.empty()) {
    int value = 0;
    auto [end, ec] = std::from_chars(timeout.data(), timeout.data() + timeout.size(), value);
    if (ec != std::errc() || end != timeout.data() + timeout.size() || value <= 0) {
      return fail("MOONCAKE_SNAPSHOT_S3_TIMEOUT_MS must be a positive number of milliseconds");
    }
    config.timeout_ms = value;
  }
  return config;
}

Result<std::unique_ptr<S3Store>> S3Store::Open(S3Config config, std::string* error_message) {
  auto fail = [&](std::string message) -> Result<std::unique_ptr<S3Store>> {
    if (error_message) *error_message = std::move(message);
    return ErrorCode::INVALID_PARAMS;
  };
  if (EndpointHost(config.endpoint).empty()) {
    return fail("S3 endpoint must be http://host[:port] or https://host[:port]");
  }
  if (!ValidBucket(config.bucket)) return fail("S3 bucket name must be 3..63 of [a-z0-9.-]");
  if (config.region.empty() || config.region.find(':') != std::string::npos) {
    return fail("S3 region must be non-empty and without ':'");
  }
  if (config.access_key.empty() || config.secret_key.empty()) {
    return fail("S3 access key and secret key are required");
  }
  if (config.timeout_ms <= 0) return fail("S3 timeout_ms must be > 0");
  if (config.list_page_size < 1 || config.list_page_size > 1000) {
    return fail("S3 list_page_size must be 1..1000");
  }
  while (config.prefix.ends_with('/')) config.prefix.pop_back();
  if (!PrefixChars(config.prefix)) return fail("S3 prefix must be made of object key components");
  if (!config.prefix.empty()) config.prefix.push_back('/');
  GlobalInitOnce();
  return std::unique_ptr<S3Store>(new S3Store(std::move(config)));
}

S3Store::S3Store(S3Config config) : config_(std::move(config)) {}

bool SetCurlSigV4(void* handle, const S3Config& config) {
  CURL* curl = static_cast<CURL*>(handle);
  std::string provider = "aws:amz:" + config.region + ":s3";
  return curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str()) == CURLE_OK &&
         curl_easy_setopt(curl, CURLOPT_USERNAME, config.access_key.c_str()) == CURLE_OK &&
         curl_easy_setopt(curl, CURLOPT_PASSWORD, config.secret_key.c_str()) == CURLE_OK;
}

S3Store::~S3Store() {
  for (void* handle : idle_handles_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

std::string S3Store::Describe() const {
  return "s3:" + config_.endpoint + (config_.endpoint.ends_with('/') ? "" : "/") +
         config_.bucket + "/" + config_.prefix;
}

std::string S3Store::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

void S3Store::SetError(std::string message) {
  MutexLock lock(&mu_);
  last_error_ = std::move(message);
}

void S3Store::SetHttpError(const std::string& what, const Response& response) {
  std::string code = ElementText(response.body, "Code");
  std::string message = ElementText(response.body, "Message");
  std::string text = what + ": HTTP " + std::to_string(response.status);
  if (!code.empty()) text += " " + code;
  if (!message.empty()) text += " (" + message + ")";
  SetError(std::move(text));
}

void* S3Store::TakeHandle() {
  {
    MutexLock lock(&mu_);
    if (!idle_handles_.empty()) {
      void* handle = idle_handles_.back();
      idle_handles_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void S3Store::ReturnHandle(void* handle) {
  curl_easy_reset(static_cast<CURL*>(handle));
  MutexLock lock(&mu_);
  if (idle_handles_.size() < kMaxIdleHandles) {
    idle_handles_.push_back(handle);
    return;
  }
  lock.unlock();
  curl_easy_cleanup(static_cast<CURL*>(handle));
}

bool S3Store::Perform(const std::string& method, const std::string& object,
                      const std::string& query, std::string_view body, Response* response) {
  // libcurl signs the path and query exactly as sent, so both must already be
  // canonical. The path needs no encoding: bucket names and object keys are
  // made of [A-Za-z0-9._-] and '/' (ValidBucket, ValidObjectKey), all RFC 3986
  // unreserved.
  std::string url = config_.endpoint;
  if (url.ends_with('/')) url.pop_back();
  url += "/" + config_.bucket + "/" + object;
  if (!query.empty()) url += "?" + query;

  // Only headers that are sent: libcurl 7.88 signs every CURLOPT_HTTPHEADER
  // entry, even "Expect:" (which removes a header instead of sending one),
  // and takes the payload hash from x-amz-content-sha256. No Date header:
  // libcurl would take it for the signing time.
  std::vector<std::string> lines = {"x-amz-content-sha256: " + Sha256Hex(body)};
  if (method == "PUT") lines.emplace_back("Content-Type: application/octet-stream");
  curl_slist* headers = nullptr;
  for (const std::string& line : lines) {
    curl_slist* longer = curl_slist_append(headers, line.c_str());
    if (longer == nullptr) {
      curl_slist_free_all(headers);
      SetError(method + " " + object + ": out of memory");
      return false;
    }
    headers = longer;
  }

  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) {
    curl_slist_free_all(headers);
    SetError(method + " " + object + ": curl_easy_init failed");
    return false;
  }
  response->body.clear();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config_.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response->body);
  if (method == "PUT") {
    // The body from memory, not copied (it outlives curl_easy_perform).
    // libcurl adds "Expect: 100-continue" (unsigned) only above 1 MiB.
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  if (method != "GET") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  const bool signing = SetCurlSigV4(curl, config_);
  CURLcode rc = signing ? curl_easy_perform(curl) : CURLE_OK;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response->status);
  curl_slist_free_all(headers);
  ReturnHandle(curl);
  if (!signing) {
    SetError(method + " " + object + ": libcurl refused the SigV4 signing options");
    return false;
  }
  if (rc != CURLE_OK) {
    SetError(method + " " + object + ": curl: " + curl_easy_strerror(rc));
    return false;
  }
  return true;
}

ErrorCode S3Store::Put(std::string_view key, std::string_view bytes) {
  if (!ValidObjectKey(key)) return ErrorCode::INVALID_PARAMS;
  std::string object = config_.prefix + std::string(key);
  Response response;
  if (!Perform("PUT", object, "", bytes, &response)) return ErrorCode::STORE_UNAVAILABLE;
  if (!Success(response.status)) {
    SetHttpError("PUT " + object, response);
    return ErrorCode::STORE_UNAVAILABLE;
  }
  return ErrorCode::OK;
}

Result<std::string> S3Store::Get(std::string_view key) {
  if (!ValidObjectKey(key)) return ErrorCode::INVALID_PARAMS;
  std::string object = config_.prefix + std::string(key);
  Response response;
  if (!Perform("GET", object, "", "", &response)) return ErrorCode::STORE_UNAVAILABLE;
  if (Success(response.status)) return std::move(response.body);
  if (response.status == 404 && ElementText(response.body, "Code") != "NoSuchBucket") {
    return ErrorCode::FILE_NOT_FOUND;
  }
  SetHttpError("GET " + object, response);
  return ErrorCode::STORE_UNAVAILABLE;
}

Result<std::vector<std::string>> S3Store::List(std::string_view prefix) {
  if (!ValidObjectPrefix(prefix)) return ErrorCode::INVALID_PARAMS;
  const std::string full_prefix = config_.prefix + std::string(prefix);
  std::vector<std::string> keys;
  std::string token;
  while (true) {
    // SigV4's canonical query string: parameters sorted by name, values
    // RFC 3986 encoded (libcurl signs the query as sent).
    std::string query;
    if (!token.empty()) query = "continuation-token=" + QueryEscape(token) + "&";
    query += "list-type=2&max-keys=" + std::to_string(config_.list_page_size) +
             "&prefix=" + QueryEscape(full_prefix);
    Response response;
    if (!Perform("GET", "", query, "", &response)) return ErrorCode::STORE_UNAVAILABLE;
    const std::string what = "LIST " + full_prefix;
    if (!Success(response.status)) {
      SetHttpError(what, response);
      return ErrorCode::STORE_UNAVAILABLE;
    }
    auto page = ParseListObjectsV2(response.body);
    if (!page.ok()) {
      SetError(what + ": unreadable ListObjectsV2 reply");
      return ErrorCode::STORE_UNAVAILABLE;
    }
    for (std::string& object : page->keys) {
      if (!object.starts_with(full_prefix)) continue;
      std::string key = object.substr(config_.prefix.size());
      if (ValidObjectKey(key)) keys.push_back(std::move(key));
    }
    if (!page->truncated) break;
    if (page->next_token == token) {
      SetError(what + ": the continuation token did not advance");
      return ErrorCode::STORE_UNAVAILABLE;
    }
    token = std::move(page->next_token);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

ErrorCode S3Store::Remove(std::string_view key) {
  if (!ValidObjectKey(key)) return ErrorCode::INVALID_PARAMS;
  std::string object = config_.prefix + std::string(key);
  Response response;
  if (!Perform("DELETE", object, "", "", &response)) return ErrorCode::STORE_UNAVAILABLE;
  if (Success(response.status)) return ErrorCode::OK;
  if (response.status == 404 && ElementText(response.body, "Code") != "NoSuchBucket") {
    return ErrorCode::OK;
  }
  SetHttpError("DELETE " + object, response);
  return ErrorCode::STORE_UNAVAILABLE;
}

}  // namespace shelfmark
