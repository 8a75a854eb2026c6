#include "python/native/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

#include "client/client.h"
#include "common/socket_io.h"
#include "embedded/embedded_client.h"
#include "embedded/ssd_tier_metrics.h"
#include "service/http_server.h"
#include "service/metrics.h"
#include "storeservice/ranged_read.h"

namespace shelfmark::python {
namespace {

constexpr int kOk = 0;
int Code(ErrorCode code) { return static_cast<int>(code); }

// The key probed by HealthCheck (and by Setup): any answer of the master,
// found or not, proves it is up.
constexpr std::string_view kHealthKey = "__shelfmark_health_check__";

// A local buffer smaller than this is raised to it (the Client refuses
// staging buffers under 64 bytes; a few KiB would only make every call wait
// for blocks). 0 stays 0: no staging at all.
constexpr uint64_t kMinStagingBytes = 64 << 10;

// Where other clients reach this store's segment: Mooncake's
// local_hostname as an IPv4 address ("" and "localhost": 127.0.0.1; a name:
// its first IPv4 address); nullopt when it names none.
std::optional<std::string> ListenIp(const std::string& hostname) {
  if (hostname.empty() || hostname == "localhost") return std::string("127.0.0.1");
  in_addr parsed{};
  if (inet_pton(AF_INET, hostname.c_str(), &parsed) == 1) return hostname;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (getaddrinfo(hostname.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  char text[INET_ADDRSTRLEN] = {};
  const auto* address = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  const bool ok = inet_ntop(AF_INET, &address->sin_addr, text, sizeof(text)) != nullptr;
  freeaddrinfo(found);
  return ok ? std::optional<std::string>(text) : std::nullopt;
}

// Mooncake's local_hostname: "host" or "host:port". The port is the name
// part that makes segments of one host distinct (Mooncake's own RPC port);
// nullopt port when none is given; false for a port that is not 1..65535.
struct HostPort {
  std::string host;
  std::optional<uint16_t> port;
};
bool SplitHostPort(const std::string& text, HostPort* out) {
  const size_t colon = text.rfind(':');
  // No colon, or more than one (an IPv6 literal without a port).
  if (colon == std::string::npos || text.find(':') != colon) {
    *out = HostPort{text, std::nullopt};
    return true;
  }
  const std::string digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const int port = std::stoi(digits);
  if (port < 1 || port > 65535) return false;
  *out = HostPort{text.substr(0, colon), static_cast<uint16_t>(port)};
  return true;
}

// Mooncake picks its port at random in this range when local_hostname names
// none; so does the store, and holds it (a bound TCP socket on `ip`, never
// listening) until Close, so two stores on one host never share a name.
constexpr int kFirstRandomPort = 12300;
constexpr int kLastRandomPort = 14300;

// A port of that range free on `ip` and the socket that holds it; nullopt
// when every one is taken.
std::optional<std::pair<uint16_t, int>> ReservePort(const std::string& ip) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip.c_str(), &address.sin_addr) != 1) return std::nullopt;
  const int span = kLastRandomPort - kFirstRandomPort + 1;
  const int start = static_cast<int>(std::random_device{}() % span);
  for (int i = 0; i < span; ++i) {
    const auto port = static_cast<uint16_t>(kFirstRandomPort + (start + i) % span);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::nullopt;
    address.sin_port = htons(port);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
      return std::make_pair(port, fd);
    }
    close(fd);
  }
  return std::nullopt;
}

std::vector<int> Codes(const std::vector<ErrorCode>& codes) {
  std::vector<int> out;
  out.reserve(codes.size());
  for (ErrorCode c : codes) out.push_back(Code(c));
  return out;
}

// Sizes read, or negative codes.
std::vector<int64_t> Sizes(const std::vector<Result<uint64_t>>& answers) {
  std::vector<int64_t> out;
  out.reserve(answers.size());
  for (const Result<uint64_t>& a : answers) {
    out.push_back(a.ok() ? static_cast<int64_t>(*a) : Code(a.error()));
  }
  return out;
}

// The registered pieces of each key: ptrs[i][j], sizes[i][j] as buffers;
// false when the shapes differ.
template <typename Buffer, typename Pointer>
bool Pieces(const std::vector<std::vector<uint64_t>>& ptrs,
            const std::vector<std::vector<uint64_t>>& sizes, size_t keys,
            std::vector<std::vector<Buffer>>* out) {
  if (ptrs.size() != keys || sizes.size() != keys) return false;
  out->resize(keys);
  for (size_t i = 0; i < keys; ++i) {
    if (ptrs[i].size() != sizes[i].size()) return false;
    for (size_t j = 0; j < ptrs[i].size(); ++j) {
      (*out)[i].push_back(Buffer{reinterpret_cast<Pointer>(ptrs[i][j]), sizes[i][j]});
    }
  }
  return true;
}

// Every put form of the store carries the object's checksum (XXH3-64):
// whole reads verify it, and so does the node before an SSD read's bytes
// leave it.
PutOptions MakePutOptions(const PutConfig& config) {
  PutOptions options;
  options.config = config;
  options.compute_checksum = true;
  return options;
}

}  // namespace

struct Store::Impl {
  ~Impl() {
    if (port_fd >= 0) close(port_fd);
  }
  StoreOptions options;
  // "host:port": what hostname() answers and the hosted segment's name.
  std::string name;
  std::string listen_ip;  // the host's address (ListenIp)
  int port_fd = -1;  // holds a randomly chosen port (ReservePort); -1: none
  // Hosts the segment (global_segment_bytes > 0) and owns the Client;
  // destroyed (unmounting the segment) with the last call holding it.
  std::unique_ptr<EmbeddedClient> embedded;
  Client* client = nullptr;

  Mutex buffers_mu;
  std::map<uint64_t, uint64_t> buffers GUARDED_BY(buffers_mu);  // start -> size

  bool staging() const { return options.local_buffer_bytes > 0; }
  const std::string& tenant() const { return options.tenant; }

  // The registered bytes from ptr to the end of the buffer holding it (0
  // when none holds it).
  uint64_t Room(uint64_t ptr) {
    MutexLock lock(&buffers_mu);
    auto it = buffers.upper_bound(ptr);
    if (it == buffers.begin()) return 0;
    --it;
    const uint64_t end = it->first + it->second;
    return ptr <= end ? end - ptr : 0;
  }

  // [ptr, ptr + size) lies inside one registered buffer.
  bool Registered(uint64_t ptr, uint64_t size) {
    const uint64_t room = Room(ptr);
    return room > 0 && size <= room;
  }

  // The bytes of registered memory, or nullopt.
  std::optional<std::string_view> View(uint64_t ptr, uint64_t size) {
    if (size == 0 || !Registered(ptr, size)) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(ptr), size);
  }

  size_t RegisteredBuffers() {
    MutexLock lock(&buffers_mu);
    return buffers.size();
  }

  // The client HTTP server (StoreOptions::http_server): declared last, so it
  // stops before anything its handlers read goes.
  std::unique_ptr<MetricsRegistry> metrics;
  std::unique_ptr<HttpServer> http;
  uint16_t http_port = 0;

  // Starts it on options.http_port; OK or INVALID_PARAMS (port not bound).
  ErrorCode ServeHttp();

  // The Client checks that [ptr, ptr + size) lies in registered memory.
  int64_t GetInto(const std::string& key, uint64_t ptr, uint64_t size) {
    auto read = client->GetInto(tenant(), key, reinterpret_cast<void*>(ptr), size);
    return read.ok() ? static_cast<int64_t>(*read) : Code(read.error());
  }
};

ErrorCode Store::Impl::ServeHttp() {
  metrics = std::make_unique<MetricsRegistry>();
  metrics->AddGauge("shelfmark_store_segment_bytes",
                    "Bytes of the segment this store hosts (global_segment_size).",
                    [this] { return static_cast<double>(options.global_segment_bytes); });
  metrics->AddCounterFunc("shelfmark_store_local_copies_total",
                          "Replicas read or written by memcpy in this store's own segment.",
                          [this] { return static_cast<double>(client->local_stats().copies); });
  metrics->AddCounterFunc("shelfmark_store_local_copy_bytes_total",
                          "Bytes of those replicas.",
                          [this] { return static_cast<double>(client->local_stats().bytes); });
  metrics->AddGauge("shelfmark_store_registered_buffers",
                    "Buffers registered with register_buffer.",
                    [this] { return static_cast<double>(RegisteredBuffers()); });
  if (embedded->disk_stats()) AddSsdTierMetrics(*metrics, SsdTierMetricsOf::kStore, *embedded);
  http = std::make_unique<HttpServer>();
  http->Handle("/health", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
  http->Handle("/metrics", [this] {
    HttpResponse r;
    r.body = metrics->RenderPrometheus();
    return r;
  });
  http->Handle("/metrics/summary", [this] {
    const LocalCopyStats copies = client->local_stats();
    std::string body = "segment " + name + " " + std::to_string(options.global_segment_bytes) +
                       " bytes\nlocal copies " + std::to_string(copies.copies) + " (" +
                       std::to_string(copies.bytes) + " bytes)\nregistered buffers " +
                       std::to_string(RegisteredBuffers()) + "\n";
    return HttpResponse{200, "text/plain; charset=utf-8", std::move(body)};
  });
  auto port = http->Start(options.http_port);
  if (!port.ok()) return port.error();
  http_port = *port;
  return ErrorCode::OK;
}

Store::Store(RdmaPlugin rdma) : rdma_(std::move(rdma)) {}

Store::~Store() { Close(); }

std::shared_ptr<Store::Impl> Store::Acquire() const {
  MutexLock lock(&mu_);
  return impl_;
}

int Store::Setup(const StoreOptions& options) {
  Close();
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  if (options.protocol == "rdma" && !rdma_.factory) return Code(ErrorCode::INVALID_PARAMS);
  HostPort where;
  if (!SplitHostPort(options.local_hostname, &where)) return Code(ErrorCode::INVALID_PARAMS);
  // The engines listen at local_hostname's host, so that the segment
  // (setup's, or one AllocateAndMountSegment adds later) is reachable.
  // Without a setup segment, a host with no IPv4 address is only reported
  // (no segment can be added) and the name's port is reserved on loopback.
  auto listen_ip = ListenIp(where.host);
  if (!listen_ip && options.global_segment_bytes > 0) return Code(ErrorCode::INVALID_PARAMS);
  const std::string reserve_ip = listen_ip.value_or("127.0.0.1");
  if (!where.port) {
    auto reserved = ReservePort(reserve_ip);
    if (!reserved) return Code(ErrorCode::INVALID_PARAMS);
    where.port = reserved->first;
    impl->port_fd = reserved->second;
  }
  impl->name = (where.host.empty() ? reserve_ip : where.host) + ":" + std::to_string(*where.port);
  impl->listen_ip = reserve_ip;
  EmbeddedOptions eo;
  eo.master = options.master;
  eo.cluster_id = options.cluster_id;
  eo.follow_leader_hints = options.follow_leader_hints;
  eo.protocol = options.protocol;
  eo.device = options.device;
  eo.listen_ip = listen_ip.value_or("127.0.0.1");
  eo.listen = listen_ip.has_value();
  eo.cluster_token = options.cluster_token;
  eo.master_token = options.master_token;
  eo.segment_size = options.global_segment_bytes;
  eo.segment_name = impl->name;  // what preferred_segment names (get_hostname)
  eo.staging_bytes =
      options.local_buffer_bytes == 0 ? 0 : std::max(options.local_buffer_bytes, kMinStagingBytes);
  eo.rpc_timeout_ms = options.rpc_timeout_ms;
  eo.mount_timeout_ms = options.rpc_timeout_ms;
  eo.transfer_timeout_ms = options.transfer_timeout_ms;
  eo.rdma_factory = rdma_.factory;
  eo.rdma_device_present = rdma_.device_present;
  eo.engine_counters = rdma_.counters;
  eo.enable_ssd_offload = options.enable_ssd_offload;
  eo.ssd_offload_path = options.ssd_offload_path;
  auto embedded = EmbeddedClient::Create(std::move(eo));
  if (!embedded.ok()) return Code(embedded.error());
  impl->embedded = std::move(embedded).value();
  impl->client = impl->embedded->client();
  if (options.check_master) {
    auto probe = impl->client->Exist(impl->tenant(), kHealthKey);
    if (!probe.ok()) return Code(probe.error());
  }
  if (options.http_server) {
    if (ErrorCode rc = impl->ServeHttp(); rc != ErrorCode::OK) return Code(rc);
  }
  MutexLock lock(&mu_);
  impl_ = std::move(impl);
  return kOk;
}

int Store::Close() {
  std::shared_ptr<Impl> impl;
  {
    MutexLock lock(&mu_);
    impl = std::move(impl_);
    impl_.reset();
  }
  return kOk;  // the client goes with the last call holding it
}

bool Store::is_open() const { return Acquire() != nullptr; }

std::string Store::hostname() const {
  auto impl = Acquire();
  return impl ? impl->name : std::string();
}

uint16_t Store::http_port() const {
  auto impl = Acquire();
  return impl ? impl->http_port : 0;
}

std::string Store::listen_ip() const {
  auto impl = Acquire();
  return impl ? impl->listen_ip : std::string();
}

uint64_t Store::global_segment_bytes() const {
  auto impl = Acquire();
  return impl ? impl->options.global_segment_bytes : 0;
}

std::map<std::string, uint64_t> Store::DiskStats() const {
  auto impl = Acquire();
  if (impl == nullptr) return {};
  std::optional<SsdTierStats> s = impl->embedded->disk_stats();
  if (!s) return {};
  const NodeCounters n = impl->embedded->node_counters();
  return {{"objects", s->objects},
          {"used_bytes", s->used_bytes},
          {"capacity_bytes", s->capacity_bytes},
          {"corrupt_records", s->corrupt_records},
          {"disk_requests", s->served.requests},
          {"disk_served_bytes", s->served.bytes_served},
          {"disk_errors", s->served.errors},
          {"offloaded", n.offloaded},
          {"disk_reported", n.disk_reported}};
}

#define SHELFMARK_STORE_OR(impl, value)    \
  auto impl = Acquire();                   \
  if (impl == nullptr) return value

std::pair<uint64_t, uint64_t> Store::LocalCopies() const {
  auto impl = Acquire();
  if (impl == nullptr) return {0, 0};
  const LocalCopyStats stats = impl->client->local_stats();
  return {stats.copies, stats.bytes};
}

Store::ClientRef Store::client() const {
  auto impl = Acquire();
  if (impl == nullptr) return {};
  return ClientRef{impl, impl->client, impl->tenant()};
}

int Store::HealthCheck() {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto probe = impl->client->Exist(impl->tenant(), kHealthKey);
  return probe.ok() ? kOk : Code(probe.error());
}

// --- writes ----------------------------------------------------------------

int Store::Put(const std::string& key, const char* data, uint64_t size, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (!impl->staging()) return Code(ErrorCode::NO_AVAILABLE_HANDLE);
  return Code(impl->client->Put(impl->tenant(), key, std::string_view(data, size),
                                MakePutOptions(config)));
}

// The parts are Python objects, not registered memory: joined and put
// through the staging buffer like put's bytes.
int Store::PutParts(const std::string& key, const std::vector<const char*>& datas,
                    const std::vector<uint64_t>& sizes, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (!impl->staging()) return Code(ErrorCode::NO_AVAILABLE_HANDLE);
  if (datas.size() != sizes.size()) return Code(ErrorCode::INVALID_PARAMS);
  std::string value;
  for (size_t i = 0; i < datas.size(); ++i) value.append(datas[i], sizes[i]);
  return Code(impl->client->Put(impl->tenant(), key, value, MakePutOptions(config)));
}

std::vector<int> Store::PutBatch(const std::vector<std::string>& keys,
                                 const std::vector<const char*>& datas,
                                 const std::vector<uint64_t>& sizes, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (!impl->staging()) return std::vector<int>(keys.size(), Code(ErrorCode::NO_AVAILABLE_HANDLE));
  if (datas.size() != keys.size() || sizes.size() != keys.size()) {
    return std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  std::vector<std::string_view> values;
  values.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) values.emplace_back(datas[i], sizes[i]);
  std::vector<int> out;
  for (ErrorCode rc : impl->client->BatchPut(impl->tenant(), keys, values, MakePutOptions(config))) {
    out.push_back(Code(rc));
  }
  return out;
}

int Store::PutFrom(const std::string& key, uint64_t ptr, uint64_t size, const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  // The Client checks that the bytes lie in registered memory.
  if (size == 0) return Code(ErrorCode::INVALID_PARAMS);
  return Code(impl->client->PutFrom(impl->tenant(), key, reinterpret_cast<const void*>(ptr), size,
                                    MakePutOptions(config)));
}

std::vector<int> Store::BatchPutFrom(const std::vector<std::string>& keys,
                                     const std::vector<uint64_t>& ptrs,
                                     const std::vector<uint64_t>& sizes,
                                     const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) {
    return std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  std::vector<ConstBuffer> buffers;
  buffers.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    buffers.push_back(ConstBuffer{reinterpret_cast<const void*>(ptrs[i]), sizes[i]});
  }
  return Codes(impl->client->BatchPutFrom(impl->tenant(), keys, buffers, MakePutOptions(config)));
}

std::vector<int> Store::BatchPutFromMultiBuffers(const std::vector<std::string>& keys,
                                                 const std::vector<std::vector<uint64_t>>& ptrs,
                                                 const std::vector<std::vector<uint64_t>>& sizes,
                                                 const PutConfig& config) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<std::vector<ConstBuffer>> parts;
  if (!Pieces<ConstBuffer, const void*>(ptrs, sizes, keys.size(), &parts)) {
    return std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  return Codes(impl->client->BatchPutParts(impl->tenant(), keys, parts, MakePutOptions(config)));
}

// --- reads -----------------------------------------------------------------

int Store::Get(const std::string& key, std::string* value) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (!impl->staging()) return Code(ErrorCode::NO_AVAILABLE_HANDLE);
  auto bytes = impl->client->Get(impl->tenant(), key);
  if (!bytes.ok()) return Code(bytes.error());
  *value = std::move(bytes).value();
  return kOk;
}

std::vector<int> Store::GetBatch(const std::vector<std::string>& keys,
                                 std::vector<std::string>* values) {
  values->assign(keys.size(), std::string());
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (!impl->staging()) return std::vector<int>(keys.size(), Code(ErrorCode::NO_AVAILABLE_HANDLE));
  std::vector<int> out;
  auto answers = impl->client->BatchGet(impl->tenant(), keys);
  for (size_t i = 0; i < answers.size(); ++i) {
    out.push_back(Code(answers[i].error()));
    if (answers[i].ok()) (*values)[i] = std::move(answers[i]).value();
  }
  return out;
}

int64_t Store::GetInto(const std::string& key, uint64_t ptr, uint64_t size) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  return impl->GetInto(key, ptr, size);
}

std::vector<int64_t> Store::BatchGetInto(const std::vector<std::string>& keys,
                                         const std::vector<uint64_t>& ptrs,
                                         const std::vector<uint64_t>& sizes) {
  SHELFMARK_STORE_OR(impl, std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  if (ptrs.size() != keys.size() || sizes.size() != keys.size()) {
    return std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  std::vector<MutableBuffer> dsts;
  dsts.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    dsts.push_back(MutableBuffer{reinterpret_cast<void*>(ptrs[i]), sizes[i]});
  }
  return Sizes(impl->client->BatchGetInto(impl->tenant(), keys, dsts));
}

std::vector<int64_t> Store::BatchGetIntoMultiBuffers(
    const std::vector<std::string>& keys, const std::vector<std::vector<uint64_t>>& ptrs,
    const std::vector<std::vector<uint64_t>>& sizes) {
  SHELFMARK_STORE_OR(impl, std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<std::vector<MutableBuffer>> parts;
  if (!Pieces<MutableBuffer, void*>(ptrs, sizes, keys.size(), &parts)) {
    return std::vector<int64_t>(keys.size(), Code(ErrorCode::INVALID_PARAMS));
  }
  return Sizes(impl->client->BatchGetIntoParts(impl->tenant(), keys, parts));
}

std::vector<std::vector<std::vector<int64_t>>> Store::GetIntoRanges(
    const std::vector<uint64_t>& ptrs, const std::vector<std::vector<std::string>>& keys,
    const std::vector<std::vector<std::vector<uint64_t>>>& dst_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& src_offsets,
    const std::vector<std::vector<std::vector<uint64_t>>>& lengths) {
  auto impl = Acquire();
  auto read_key = [&](const std::string& key, const std::vector<storeservice::Fragment>& f) {
    std::vector<ReadRange> ranges;
    std::vector<bool> readable;
    for (const storeservice::Fragment& k : f) {
      ranges.push_back(ReadRange{k.src_offset, k.length, reinterpret_cast<void*>(k.dst)});
      readable.push_back(k.dst != 0 && k.length > 0 && impl->Registered(k.dst, k.length));
    }
    return storeservice::ReadFragments(*impl->client, impl->tenant(), key, ranges, readable);
  };
  auto room = [&](uint64_t ptr) { return impl->Room(ptr); };
  return storeservice::ShapeRanges(impl != nullptr, ptrs, keys, dst_offsets, src_offsets, lengths,
                                   room, read_key);
}

// `iters` runs of call() timed by steady_clock, then of after() untimed
// (what resets the state a call changed); ns per call, or empty when a call
// answers false (the bench cannot tell a failed call's time from a real one).
template <typename Call, typename After>
static std::vector<int64_t> TimeCalls(int iters, Call call, After after) {
  std::vector<int64_t> ns;
  ns.reserve(std::max(iters, 0));
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const bool ok = call();
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count());
    if (!ok) return {};
    after();
  }
  return ns;
}

std::vector<int64_t> Store::TimeBatchGetInto(const std::vector<std::string>& keys,
                                             const std::vector<uint64_t>& ptrs,
                                             const std::vector<uint64_t>& sizes, int iters) {
  auto call = [&] {
    const std::vector<int64_t> got = BatchGetInto(keys, ptrs, sizes);
    for (size_t k = 0; k < got.size(); ++k) {
      if (got[k] != static_cast<int64_t>(sizes[k])) return false;
    }
    return true;
  };
  return TimeCalls(iters, call, [] {});
}

std::vector<int64_t> Store::TimePutFrom(const std::string& key, uint64_t ptr, uint64_t size,
                                        const PutConfig& config, int iters) {
  return TimeCalls(
      iters, [&] { return PutFrom(key, ptr, size, config) == kOk; },
      [&] { Remove(key, /*force=*/true); });
}

std::vector<int64_t> Store::TimeGetInto(const std::string& key, uint64_t ptr, uint64_t size,
                                        int iters) {
  return TimeCalls(
      iters, [&] { return GetInto(key, ptr, size) == static_cast<int64_t>(size); }, [] {});
}

std::vector<int64_t> Store::TimeIsExist(const std::string& key, int iters) {
  return TimeCalls(
      iters, [&] { return IsExist(key) >= 0; }, [] {});
}

// --- registered memory -----------------------------------------------------

int Store::RegisterBuffer(uint64_t ptr, uint64_t size) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (ptr == 0 || size == 0 || ptr > UINT64_MAX - size) return Code(ErrorCode::INVALID_PARAMS);
  {
    // Overlapping registrations would make UnregisterBuffer ambiguous.
    MutexLock lock(&impl->buffers_mu);
    auto next = impl->buffers.lower_bound(ptr);
    if (next != impl->buffers.end() && next->first < ptr + size) {
      return Code(ErrorCode::INVALID_PARAMS);
    }
    if (next != impl->buffers.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > ptr) return Code(ErrorCode::INVALID_PARAMS);
    }
    impl->buffers.emplace(ptr, size);
  }
  const ErrorCode rc = impl->client->RegisterBuffer(reinterpret_cast<void*>(ptr), size);
  if (rc != ErrorCode::OK) {
    MutexLock lock(&impl->buffers_mu);
    impl->buffers.erase(ptr);
  }
  return Code(rc);
}

int Store::UnregisterBuffer(uint64_t ptr) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  {
    MutexLock lock(&impl->buffers_mu);
    if (impl->buffers.erase(ptr) == 0) return Code(ErrorCode::INVALID_PARAMS);
  }
  impl->client->UnregisterBuffer(reinterpret_cast<void*>(ptr));
  return kOk;
}

bool Store::IsRegistered(uint64_t ptr, uint64_t size) const {
  auto impl = Acquire();
  return impl != nullptr && impl->Registered(ptr, size);
}

// --- metadata --------------------------------------------------------------

int Store::IsExist(const std::string& key) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto exists = impl->client->Exist(impl->tenant(), key);
  if (!exists.ok()) return Code(exists.error());
  return *exists ? 1 : 0;
}

std::vector<int> Store::BatchIsExist(const std::vector<std::string>& keys) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  std::vector<int> out;
  for (const Result<bool>& exists : impl->client->BatchExist(impl->tenant(), keys)) {
    out.push_back(exists.ok() ? (*exists ? 1 : 0) : Code(exists.error()));
  }
  return out;
}

// Like Mooncake's query, the lookup takes a read lease.
int64_t Store::GetSize(const std::string& key) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto size = impl->client->GetSize(impl->tenant(), key);
  return size.ok() ? static_cast<int64_t>(*size) : Code(size.error());
}

int Store::GetReplicas(const std::string& key, std::vector<ReplicaInfo>* replicas) {
  replicas->clear();
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto location = impl->client->Locate(impl->tenant(), key);
  if (!location.ok()) return Code(location.error());
  for (const ReplicaDescriptor& r : location->info.replicas) replicas->push_back(ReplicaInfoOf(r));
  return kOk;
}

ReplicaInfo ReplicaInfoOf(const ReplicaDescriptor& r) {
  ReplicaInfo info;
  info.status = ReplicaStatusName(r.status);
  info.memory = r.type == ReplicaType::MEMORY;
  if (info.memory) {
    info.endpoint = r.memory.endpoint;
    info.protocol = r.memory.protocol;
    info.buffer_address = r.memory.buffer_address;
    info.size = r.memory.size;
    info.segment_id = r.memory.segment_id.ToString();
  } else {
    info.endpoint = r.disk.endpoint;
    info.size = r.disk.object_size;
  }
  return info;
}

int Store::Remove(const std::string& key, bool force) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  return Code(impl->client->Remove(impl->tenant(), key, force));
}

std::vector<int> Store::BatchRemove(const std::vector<std::string>& keys, bool force) {
  SHELFMARK_STORE_OR(impl, std::vector<int>(keys.size(), Code(ErrorCode::INVALID_PARAMS)));
  return Codes(impl->client->BatchRemove(impl->tenant(), keys, force));
}

int64_t Store::RemoveAll(bool force) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto removed = impl->client->RemoveAll(impl->tenant(), force);
  return removed.ok() ? static_cast<int64_t>(*removed) : Code(removed.error());
}

int64_t Store::RemoveByRegex(const std::string& pattern, bool force) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto removed = impl->client->RemoveByRegex(impl->tenant(), pattern, force);
  return removed.ok() ? static_cast<int64_t>(*removed) : Code(removed.error());
}

// --- segments --------------------------------------------------------------

int Store::AllocateAndMountSegment(uint64_t size, const std::string& protocol, std::string* id) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  auto mounted = impl->embedded->MountSegment(size, protocol);
  if (!mounted.ok()) return Code(mounted.error());
  *id = mounted->id.ToString();
  return kOk;
}

// The segments named by `ids` of the kind `file_backed`, unmounted (all or
// none; after grace_ms, drained meanwhile).
static int Unmount(EmbeddedClient& embedded, const std::vector<std::string>& ids, bool file_backed,
                   int64_t grace_ms) {
  std::vector<UUID> parsed;
  for (const std::string& text : ids) {
    auto id = UUID::Parse(text);
    if (!id) return Code(ErrorCode::INVALID_PARAMS);
    parsed.push_back(*id);
  }
  return Code(embedded.UnmountSegments(parsed, file_backed, grace_ms));
}

int Store::UnmountAndFreeSegments(const std::vector<std::string>& ids, int64_t grace_ms) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  return Unmount(*impl->embedded, ids, /*file_backed=*/false, grace_ms);
}

int Store::MountSegment(const std::string& path, uint64_t offset, uint64_t size,
                        const std::string& protocol, std::string* id) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  if (size == 0 || offset % static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) != 0 ||
      offset > UINT64_MAX - size) {
    return Code(ErrorCode::INVALID_PARAMS);
  }
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CLOEXEC));
  struct stat st {};
  // A mapping past the file's end would fault on the first put into it.
  if (!fd.valid() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < offset + size) {
    return Code(ErrorCode::INVALID_PARAMS);
  }
  auto mounted = impl->embedded->MountFileSegment(fd.get(), offset, size, protocol);
  if (!mounted.ok()) return Code(mounted.error());
  *id = mounted->id.ToString();
  return kOk;
}

int Store::UnmountSegments(const std::vector<std::string>& ids, int64_t grace_ms) {
  SHELFMARK_STORE_OR(impl, Code(ErrorCode::INVALID_PARAMS));
  return Unmount(*impl->embedded, ids, /*file_backed=*/true, grace_ms);
}

#undef SHELFMARK_STORE_OR

}  // namespace shelfmark::python
