#include "ha/etcd_client.h"

#include <curl/curl.h>

#include <mutex>
#include <utility>

namespace shelfmark::ha {
namespace {

// A call without an answer of its own (put, revoke).
struct Empty {};

Result<Empty> DecodeNothing(std::string_view body) {
  const ErrorCode code = etcdwire::DecodeEmpty(body);
  if (code != ErrorCode::OK) return code;
  return Empty{};
}

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string* body;
  size_t limit;
};

// Appends what curl received; refusing more than the limit makes curl fail
// the transfer (CURLE_WRITE_ERROR).
size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t bytes = size * n;
  if (sink->body->size() + bytes > sink->limit) return 0;
  sink->body->append(data, bytes);
  return bytes;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.substr(0, 7) == "http://") s.remove_prefix(7);
  while (!s.empty() && s.back() == '/') s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Result<std::vector<HostPort>> ParseEtcdEndpoints(std::string_view text) {
  std::vector<HostPort> out;
  while (!text.empty()) {
    const size_t cut = text.find_first_of(";,");
    const std::string item = Trim(text.substr(0, cut));
    text = cut == std::string_view::npos ? std::string_view() : text.substr(cut + 1);
    if (item.empty()) continue;
    std::optional<HostPort> hp = ParseHostPort(item);
    if (!hp) return ErrorCode::INVALID_PARAMS;
    out.push_back(std::move(*hp));
  }
  if (out.empty()) return ErrorCode::INVALID_PARAMS;
  return out;
}

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  GlobalInitOnce();
}

std::string EtcdClient::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

ErrorCode EtcdClient::Fail(ErrorCode code, std::string text) {
  MutexLock lock(&mu_);
  last_error_ = std::string(ErrorCodeName(code)) + ": " + std::move(text);
  return code;
}

std::string EtcdClient::PostOnce(const HostPort& endpoint, std::string_view path,
                                 const std::string& body, Reply* reply) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return "curl_easy_init failed";
  const std::string url = "http://" + endpoint.ToString() + std::string(path);
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  Sink sink{&reply->body, options_.max_reply_bytes};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROXY, "");  // never an $http_proxy of the environment
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.request_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply->status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc == CURLE_WRITE_ERROR) {
    return "reply larger than " + std::to_string(options_.max_reply_bytes) + " bytes";
  }
  if (rc != CURLE_OK) return std::string("curl: ") + curl_easy_strerror(rc);
  return "";
}

Result<EtcdClient::Reply> EtcdClient::Post(std::string_view path, const std::string& body) {
  const size_t n = options_.endpoints.size();
  if (n == 0) return Fail(ErrorCode::INVALID_PARAMS, "no etcd endpoints");
  const size_t first = preferred_.load() % n;
  std::string failures;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (first + i) % n;
    const HostPort& endpoint = options_.endpoints[index];
    Reply reply;
    std::string error = PostOnce(endpoint, path, body, &reply);
    if (error.empty() && reply.status < 500) {
      preferred_.store(index);
      reply.endpoint = endpoint.ToString();
      return reply;
    }
    if (error.empty()) error = "HTTP " + std::to_string(reply.status);
    failures += (failures.empty() ? "" : "; ") + endpoint.ToString() + ": " + error;
  }
  return Fail(ErrorCode::ETCD_OPERATION_ERROR,
              "POST " + std::string(path) + " reached no etcd endpoint (" + failures + ")");
}

template <typename T, typename Decode>
Result<T> EtcdClient::Call(std::string_view path, const std::string& body, Decode decode) {
  Result<Reply> reply = Post(path, body);
  if (!reply.ok()) return reply.error();
  const std::string where = "etcd " + reply->endpoint + " POST " + std::string(path);
  std::optional<etcdwire::GatewayError> gateway = etcdwire::DecodeGatewayError(reply->body);
  if (reply->status != 200 || gateway) {
    const ErrorCode code = gateway && gateway->grpc_code == 5 ? ErrorCode::ETCD_KEY_NOT_EXIST
                                                              : ErrorCode::ETCD_OPERATION_ERROR;
    return Fail(code, where + ": HTTP " + std::to_string(reply->status) + ": " +
                          (gateway ? gateway->message : "not an etcd gateway reply"));
  }
  Result<T> out = decode(reply->body);
  if (!out.ok()) {
    Fail(out.error(), where + ": reply is not what etcd's JSON gateway sends (" +
                          std::to_string(reply->body.size()) + " bytes)");
  }
  return out;
}

Result<EtcdLease> EtcdClient::LeaseGrant(int64_t ttl_s) {
  return Call<EtcdLease>("/v3/lease/grant", etcdwire::LeaseGrantRequest(ttl_s),
                         etcdwire::DecodeLeaseGrant);
}

Result<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t lease_id) {
  Result<EtcdLease> lease = Call<EtcdLease>(
      "/v3/lease/keepalive", etcdwire::LeaseIdRequest(lease_id), etcdwire::DecodeKeepAlive);
  if (!lease.ok()) return lease.error();
  if (lease->ttl_s <= 0) {
    return Fail(ErrorCode::ETCD_KEY_NOT_EXIST,
                "lease " + std::to_string(lease_id) + " is unknown to etcd (expired or revoked)");
  }
  return lease->ttl_s;
}

ErrorCode EtcdClient::LeaseRevoke(int64_t lease_id) {
  return Call<Empty>("/v3/lease/revoke", etcdwire::LeaseIdRequest(lease_id), DecodeNothing).error();
}

Result<std::optional<EtcdKeyValue>> EtcdClient::Get(std::string_view key) {
  return Call<std::optional<EtcdKeyValue>>("/v3/kv/range", etcdwire::RangeRequest(key),
                                           etcdwire::DecodeRange);
}

ErrorCode EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease) {
  return Call<Empty>("/v3/kv/put", etcdwire::PutRequest(key, value, lease), DecodeNothing).error();
}

Result<EtcdCreateResult> EtcdClient::CreateIfAbsent(std::string_view key, std::string_view value,
                                                    int64_t lease, std::string_view record_key) {
  return Call<EtcdCreateResult>("/v3/kv/txn",
                                etcdwire::CreateIfAbsentRequest(key, value, lease, record_key),
                                etcdwire::DecodeCreateIfAbsent);
}

ErrorCode EtcdClient::GuardedTxn(const std::string& request, int64_t create_revision,
                                 const char* what) {
  Result<bool> done = Call<bool>("/v3/kv/txn", request, etcdwire::DecodeTxnSucceeded);
  if (!done.ok()) return done.error();
  if (!*done) {
    return Fail(ErrorCode::ETCD_TRANSACTION_FAIL,
                std::string(what) + " no longer created at revision " +
                    std::to_string(create_revision));
  }
  return ErrorCode::OK;
}

ErrorCode EtcdClient::PutIfCreatedAt(std::string_view guard_key, int64_t guard_create_revision,
                                     std::string_view key, std::string_view value) {
  return GuardedTxn(
      etcdwire::PutIfCreatedAtRequest(guard_key, guard_create_revision, key, value),
      guard_create_revision, "put guarded by a key");
}

ErrorCode EtcdClient::DeleteIfCreatedAt(std::string_view key, int64_t create_revision) {
  return GuardedTxn(etcdwire::DeleteIfCreatedAtRequest(key, create_revision), create_revision,
                    "delete of a key");
}

}  // namespace shelfmark::ha
