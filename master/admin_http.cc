#include "master/admin_http.h"

#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <utility>

#include "ha/leader_election.h"
#include "master/master_ha.h"
#include "service/http_query.h"

namespace shelfmark {
namespace {

// Mooncake's content types: its text pages say Prometheus's text version
// (whatever they hold), its role pages plain UTF-8 text.
constexpr const char* kMooncakeText = "text/plain; version=0.0.4";
constexpr const char* kPlainText = "text/plain; charset=utf-8";
constexpr const char* kJson = "application/json; charset=utf-8";

// A JSON string literal of `s`: quotes, backslashes and control bytes
// escaped; other bytes as they are (keys and names are the operator's).
std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Mooncake's error object: {"success":false,"error_code":N,"error_message":"..."}.
HttpResponse JsonError(int status, ErrorCode code, std::string_view message) {
  return {status, kJson,
          "{\"success\":false,\"error_code\":" + std::to_string(static_cast<int>(code)) +
              ",\"error_message\":" + JsonString(message) + "}"};
}

struct PageContext {
  Directory& directory;
  const AdminRole& role;
  const QueryParams& params;
};

// The value of required parameter `name`; null after filling *refusal when
// it is missing or empty.
const std::string* Required(const PageContext& c, const char* name, HttpResponse* refusal) {
  auto it = c.params.find(name);
  if (it != c.params.end() && !it->second.empty()) return &it->second;
  *refusal = JsonError(400, ErrorCode::INVALID_PARAMS,
                       std::string("missing query parameter '") + name + "' (?" + name + "=...)");
  return nullptr;
}

// Mooncake's AllocatedBuffer descriptor, one JSON object.
std::string DescriptorJson(const MemoryDescriptor& m) {
  return "{\"size_\":" + std::to_string(m.size) +
         ",\"buffer_address_\":" + std::to_string(m.buffer_address) +
         ",\"protocol_\":" + JsonString(m.protocol) +
         ",\"transport_endpoint_\":" + JsonString(m.endpoint) + "}";
}

HttpResponse QueryKey(const PageContext& c) {
  HttpResponse refusal;
  const std::string* key = Required(c, "key", &refusal);
  if (key == nullptr) return refusal;
  Result<ObjectInfo> info = c.directory.Stat("", *key);
  if (!info.ok() && info.error() == ErrorCode::INVALID_KEY) {
    return JsonError(400, ErrorCode::INVALID_KEY, "key: " + std::string(ErrorCodeName(info.error())));
  }
  if (!info.ok()) return {404, kMooncakeText, std::string(ErrorCodeName(info.error()))};
  std::string body;
  bool complete = false;
  for (const ReplicaDescriptor& r : info->replicas) {
    if (r.status != ReplicaStatus::COMPLETE) continue;
    complete = true;  // a COMPLETE disk replica makes the key readable too
    if (r.type == ReplicaType::MEMORY) body += DescriptorJson(r.memory) + "\n";
  }
  // As a read finds it: no COMPLETE replica yet is "not ready", not absent.
  if (!complete) return {404, kMooncakeText, std::string(ErrorCodeName(ErrorCode::REPLICA_IS_NOT_READY))};
  return {200, kMooncakeText, std::move(body)};
}

HttpResponse GetAllKeys(const PageContext& c) {
  std::string body;
  for (const std::string& key : c.directory.ListKeys("", "", std::numeric_limits<size_t>::max())) {
    body += key + "\n";
  }
  return {200, kMooncakeText, std::move(body)};
}

uint64_t UsedBytes(const SegmentState& s) {
  uint64_t free = 0;
  for (const auto& [offset, size] : s.free_extents) free += size;
  return free < s.segment.size ? s.segment.size - free : 0;
}

HttpResponse GetAllSegments(const PageContext& c) {
  std::string body;
  for (const SegmentState& s : c.directory.ExportSegmentTable().segments) {
    body += s.segment.name + "\n";
  }
  return {200, kMooncakeText, std::move(body)};
}

std::string SegmentDetailJson(const SegmentState& s) {
  const uint64_t used = UsedBytes(s);
  const uint64_t size = s.segment.size;
  char base[32], gib[64], percent[32];
  std::snprintf(base, sizeof(base), "0x%" PRIx64, s.segment.base);
  std::snprintf(gib, sizeof(gib), "%g GiB", static_cast<double>(size) / (1024.0 * 1024 * 1024));
  std::snprintf(percent, sizeof(percent), "%g",
                size > 0 ? static_cast<double>(used) / static_cast<double>(size) * 100.0 : 0.0);
  return "{\"segment_name\":" + JsonString(s.segment.name) +
         ",\"segment_id\":" + JsonString(s.segment.id.ToString()) +
         ",\"client_id\":" + JsonString(s.owner.ToString()) +
         ",\"base_address\":" + JsonString(base) + ",\"size_bytes\":" + std::to_string(size) +
         ",\"size_human\":" + JsonString(gib) +
         ",\"te_endpoint\":" + JsonString(s.segment.endpoint) +
         ",\"protocol\":" + JsonString(s.segment.protocol) +
         // Mooncake's name for a segment in its graceful unmount's grace period.
         ",\"status\":" + (s.draining ? "\"GRACEFULLY_UNMOUNTING\"" : "\"OK\"") +
         ",\"allocator_used_bytes\":" + std::to_string(used) +
         ",\"allocator_capacity_bytes\":" + std::to_string(size) +
         ",\"allocator_usage_percent\":" + percent + "}";
}

HttpResponse GetSegmentsDetail(const PageContext& c) {
  const std::vector<SegmentState> segments = c.directory.ExportSegmentTable().segments;
  std::string list;
  for (const SegmentState& s : segments) {
    list += (list.empty() ? "" : ",") + SegmentDetailJson(s);
  }
  return {200, kJson,
          "{\"total_segments\":" + std::to_string(segments.size()) + ",\"segments\":[" + list + "]}"};
}

// Every segment of that name counts (a node may mount several).
HttpResponse QuerySegment(const PageContext& c) {
  HttpResponse refusal;
  const std::string* name = Required(c, "segment", &refusal);
  if (name == nullptr) return refusal;
  uint64_t used = 0, capacity = 0;
  bool found = false;
  for (const SegmentState& s : c.directory.ExportSegmentTable().segments) {
    if (s.segment.name != *name) continue;
    found = true;
    used += UsedBytes(s);
    capacity += s.segment.size;
  }
  if (!found) return {404, kMooncakeText, std::string(ErrorCodeName(ErrorCode::SEGMENT_NOT_FOUND))};
  return {200, kMooncakeText,
          *name + "\nUsed(bytes): " + std::to_string(used) +
              "\nCapacity(bytes) : " + std::to_string(capacity) + "\n"};
}

// Mooncake's role names: "leader" while elected (serving or still loading
// the standby copy), "standby" otherwise.
const char* RoleName(const AdminRole& r) { return r.serving || r.elected ? "leader" : "standby"; }

// Mooncake's runtime states this master can be in.
const char* StateName(const AdminRole& r) {
  if (r.serving) return "serving";
  return r.elected ? "leader_warmup" : "standby";
}

HttpResponse Role(const PageContext& c) { return {200, kPlainText, RoleName(c.role)}; }

HttpResponse HaStatus(const PageContext& c) { return {200, kPlainText, StateName(c.role)}; }

HttpResponse Leader(const PageContext& c) {
  if (c.role.leader_address.empty()) return {200, kJson, "{\"present\":false}"};
  return {200, kJson,
          "{\"present\":true,\"leader_address\":" + JsonString(c.role.leader_address) +
              ",\"view_version\":" + std::to_string(c.role.term) + "}"};
}

std::string Bytes(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  char out[32];
  std::snprintf(out, sizeof(out), "%.2f %s", value, units[unit]);
  return out;
}

// Mooncake's line: role, state, readiness, the master's figures in
// master={...}, HA figures in ha={...}, then the leader when one is known.
HttpResponse MetricsSummary(const PageContext& c) {
  const DirectoryStats stats = c.directory.Stats();
  std::string master = "Storage: " + Bytes(stats.allocated_bytes) + " / " +
                       Bytes(stats.total_capacity_bytes);
  if (stats.total_capacity_bytes > 0) {
    char percent[32];
    std::snprintf(percent, sizeof(percent), " (%.1f%%)",
                  static_cast<double>(stats.allocated_bytes) /
                      static_cast<double>(stats.total_capacity_bytes) * 100.0);
    master += percent;
  }
  master += " | Keys: " + std::to_string(stats.key_count) +
            " | Clients: " + std::to_string(stats.client_count) +
            " | Segments: " + std::to_string(stats.segment_count) +
            " | Evicted: keys=" + std::to_string(stats.evicted_objects) +
            ", size=" + Bytes(stats.evicted_bytes);
  std::string line = std::string("role=") + RoleName(c.role) + ", state=" + StateName(c.role) +
                     ", service_ready=" + (c.role.serving ? "true" : "false") + ", master={" +
                     master + "}, ha={" + (c.role.ha ? "enabled" : "disabled") + "}";
  if (!c.role.leader_address.empty()) {
    line += ", leader=" + c.role.leader_address + ", view_version=" + std::to_string(c.role.term);
  }
  return {200, kMooncakeText, std::move(line)};
}

struct Page {
  const char* path;
  std::vector<std::string> params;  // the query parameters it takes
  bool needs_service;               // answers 503 while this master does not serve
  HttpResponse (*answer)(const PageContext&);
};

const std::vector<Page>& Pages() {
  static const std::vector<Page> pages = {
      {"/query_key", {"key"}, true, QueryKey},
      {"/get_all_keys", {}, true, GetAllKeys},
      {"/get_all_segments", {}, true, GetAllSegments},
      {"/get_segments_detail", {}, true, GetSegmentsDetail},
      {"/query_segment", {"segment"}, true, QuerySegment},
      {"/role", {}, false, Role},
      {"/ha_status", {}, false, HaStatus},
      {"/leader", {}, false, Leader},
      {"/metrics/summary", {}, false, MetricsSummary},
  };
  return pages;
}

// A parameter the page does not take: a typo would otherwise be answered
// as if the parameter were missing.
std::string UnknownParameter(const Page& page, const QueryParams& params) {
  for (const auto& [name, value] : params) {
    bool known = false;
    for (const std::string& p : page.params) known = known || p == name;
    if (!known) return name;
  }
  return "";
}

}  // namespace

AdminRoleSource AdminRoleOf(const MasterHa* ha) {
  if (ha == nullptr) return [] { return AdminRole{}; };
  return [ha] {
    AdminRole role;
    role.ha = true;
    role.serving = ha->serving();
    const ha::LeaderView view = ha->view();
    role.elected = view.role == ha::Role::kLeader;
    role.leader_address = view.leader_address;
    role.term = view.term;
    return role;
  };
}

AdminPages::AdminPages(Directory& directory, AdminRoleSource role)
    : directory_(directory), role_(std::move(role)) {}

std::vector<std::string> AdminPages::Paths() {
  std::vector<std::string> paths;
  for (const Page& page : Pages()) paths.emplace_back(page.path);
  return paths;
}

HttpResponse AdminPages::Serve(std::string_view path, std::string_view query) const {
  for (const Page& page : Pages()) {
    if (path != page.path) continue;
    QueryParams params;
    std::string error;
    if (!ParseQuery(query, &params, &error)) return JsonError(400, ErrorCode::INVALID_PARAMS, error);
    if (std::string unknown = UnknownParameter(page, params); !unknown.empty()) {
      std::string takes;
      for (const std::string& p : page.params) takes += (takes.empty() ? "" : ", ") + p;
      return JsonError(400, ErrorCode::INVALID_PARAMS,
                       "unknown query parameter '" + unknown + "' (" + page.path +
                           " takes: " + (takes.empty() ? "none" : takes) + ")");
    }
    const AdminRole role = role_();
    if (page.needs_service && !role.serving) {
      return JsonError(503, ErrorCode::NOT_LEADER, "service plane is not active");
    }
    return page.answer(PageContext{directory_, role, params});
  }
  return {404, kPlainText, "404 Not Found\n"};
}

void AddAdminPages(HttpServer& http, Directory& directory, AdminRoleSource role,
                   const std::string& bearer_token) {
  auto pages = std::make_shared<const AdminPages>(directory, std::move(role));
  for (const std::string& path : AdminPages::Paths()) {
    http.HandleRequest(path, [pages, path](const HttpRequest& request) {
      return pages->Serve(path, request.query);
    });
    if (!bearer_token.empty()) http.Protect(path, bearer_token);
  }
}

}  // namespace shelfmark
