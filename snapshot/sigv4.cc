#include "snapshot/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>

namespace shelfmark::sigv4 {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trims the value and collapses inner runs of spaces to one (SigV4 "Trimall").
std::string TrimAll(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

Pairs CanonicalHeaders(const Pairs& headers) {
  Pairs out;
  out.reserve(headers.size());
  for (const auto& [name, value] : headers) out.emplace_back(Lower(name), TrimAll(value));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return Hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  return out;
}

std::string AmzDate(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string CanonicalQueryString(const Pairs& query) {
  Pairs encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(UriEncode(name, false), UriEncode(value, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string SignedHeaders(const Pairs& headers) {
  std::string out;
  for (const auto& [name, value] : CanonicalHeaders(headers)) {
    if (!out.empty()) out.push_back(';');
    out += name;
  }
  return out;
}

std::string CanonicalRequest(const Request& request) {
  std::string out = request.method + "\n" + request.path + "\n" +
                    CanonicalQueryString(request.query) + "\n";
  for (const auto& [name, value] : CanonicalHeaders(request.headers)) {
    out += name + ":" + value + "\n";
  }
  out += "\n" + SignedHeaders(request.headers) + "\n" + request.payload_hash;
  return out;
}

std::string CredentialScope(std::string_view amz_date, const Credentials& creds) {
  return std::string(amz_date.substr(0, 8)) + "/" + creds.region + "/" + creds.service +
         "/aws4_request";
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + std::string(scope) + "\n" +
         Sha256Hex(canonical_request);
}

std::string SigningKey(const Credentials& creds, std::string_view date) {
  std::string key = HmacSha256("AWS4" + creds.secret_key, date);
  key = HmacSha256(key, creds.region);
  key = HmacSha256(key, creds.service);
  return HmacSha256(key, "aws4_request");
}

std::string Signature(const Request& request, const Credentials& creds,
                      std::string_view amz_date) {
  std::string to_sign =
      StringToSign(amz_date, CredentialScope(amz_date, creds), CanonicalRequest(request));
  return Hex(HmacSha256(SigningKey(creds, amz_date.substr(0, 8)), to_sign));
}

std::string AuthorizationHeader(const Request& request, const Credentials& creds,
                                std::string_view amz_date) {
  return "AWS4-HMAC-SHA256 Credential=" + creds.access_key + "/" +
         CredentialScope(amz_date, creds) + ",SignedHeaders=" + SignedHeaders(request.headers) +
         ",Signature=" + Signature(request, creds, amz_date);
}

}  // namespace shelfmark::sigv4
