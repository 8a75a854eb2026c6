// Mooncake's admin pages on the master's HTTP port, with Mooncake's paths,
// query parameters and answer shapes (docs/metrics.md, "Admin pages", lists
// each one and every difference from Mooncake, with the reason):
//
//   /query_key?key=K      one JSON line per COMPLETE MEMORY replica of K
//   /get_all_keys         one key a line
//   /get_all_segments     one mounted segment's name a line
//   /get_segments_detail  JSON {"total_segments", "segments": [...]}
//   /query_segment?segment=NAME   used and capacity bytes of the name's segments
//   /role  /ha_status     "leader"/"standby", and the HA state, as text
//   /leader               JSON {"present", "leader_address", "view_version"}
//   /metrics/summary      one human-readable line of role and figures
//
// Keys are the default tenant's only (as Mooncake's pages, which know that
// tenant only): the HTTP port's token is a scrape token, which must not
// reveal the names in other tenants. Every page reads the directory without
// changing it: /query_key grants no lease.
//
// A parameter the page does not take, a missing or empty one, a bad %
// escape or a parameter given twice is answered 400 with a JSON error
// naming it. While this master does not serve (an HA standby), the data
// pages answer 503, as Mooncake's standby does; the role pages answer.
//
// Thread safety: AdminPages::Serve from any thread (the Directory is
// thread-safe); the role source is called on the HTTP server's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "directory/directory.h"
#include "service/http_server.h"

namespace shelfmark {

class MasterHa;

// What the role pages say of this master.
struct AdminRole {
  bool ha = false;       // started with --enable_ha
  bool serving = true;   // the RPC gate is open: this master leads and serves
  bool elected = false;  // HA: the election names this master leader
  std::string leader_address;  // HA: the leader the election knows ("" none)
  int64_t term = 0;            // HA: that leader's term (Mooncake's view_version)
};
using AdminRoleSource = std::function<AdminRole()>;

// The role of `ha`, read at each request; null `ha`: a master without HA,
// always the serving leader. `ha` must outlive the source's use.
AdminRoleSource AdminRoleOf(const MasterHa* ha);

class AdminPages {
 public:
  // `directory` must outlive the pages.
  AdminPages(Directory& directory, AdminRoleSource role);

  // The paths served, for installing.
  static std::vector<std::string> Paths();
  // The answer of GET `path`?`query` (`query` raw, as HttpRequest holds it);
  // 404 for a path not in Paths().
  HttpResponse Serve(std::string_view path, std::string_view query) const;

 private:
  Directory& directory_;
  AdminRoleSource role_;
};

// Installs every page of AdminPages::Paths() on `http` (before Start); with
// a non-empty `bearer_token` (--metrics_token_file) each one answers 401
// without it, as /metrics does. `directory` must outlive `http`'s serving.
void AddAdminPages(HttpServer& http, Directory& directory, AdminRoleSource role,
                   const std::string& bearer_token);

}  // namespace shelfmark
