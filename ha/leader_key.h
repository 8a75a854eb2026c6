// Where the masters of one cluster meet in etcd (docs/ha.md, "Key layout"):
// the leader key "shelfmark/<cluster_id>/leader", whose value is the
// leader's RPC address "host:port" and whose create_revision is the term.
// Same shape as Mooncake's "mooncake-store/<cluster_id>/master_view": a
// fixed prefix per product, then the cluster id, so clusters (and products)
// share one etcd without meeting. Each master also holds
// "shelfmark/<cluster_id>/members/<its address>" (MemberKey).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shelfmark::ha {

inline constexpr std::string_view kEtcdKeyPrefix = "shelfmark/";
inline constexpr size_t kMaxClusterIdLength = 128;
// The cluster id of a master or client given none (no flag, no environment
// variable; ha/master_address.h, ResolveClusterId): masters and clients
// share it, so a cluster that never names itself still meets in etcd.
inline constexpr std::string_view kDefaultClusterId = "shelfmark";

// 1..128 characters of [A-Za-z0-9._-]: never a '/' (it would nest into
// another cluster's keys).
inline bool ValidClusterId(std::string_view id) {
  if (id.empty() || id.size() > kMaxClusterIdLength) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return id != "." && id != "..";
}

// Precondition: ValidClusterId(cluster_id).
inline std::string LeaderKey(std::string_view cluster_id) {
  return std::string(kEtcdKeyPrefix) + std::string(cluster_id) + "/leader";
}

// "shelfmark/<cluster_id>/last_leader": written with no lease in the
// transaction that creates the leader key, so it outlives the leader; its
// mod_revision is the latest leader's term (the leader key's
// create_revision). Tells a master started afresh that the cluster had a
// leader whose directory it does not hold.
inline std::string LastLeaderKey(std::string_view cluster_id) {
  return std::string(kEtcdKeyPrefix) + std::string(cluster_id) + "/last_leader";
}

// "shelfmark/<cluster_id>/in_sync": the standbys (their published
// addresses) every acknowledgement of the leader of `term` waits for, as
// "<term>\n<address>\n..." (no lease; written only while that term's
// leader key stands). Only they may take over with their copy.
inline std::string InSyncKey(std::string_view cluster_id) {
  return std::string(kEtcdKeyPrefix) + std::string(cluster_id) + "/in_sync";
}

inline std::string EncodeInSync(int64_t term, const std::vector<std::string>& ids) {
  std::string out = std::to_string(term);
  for (const std::string& id : ids) out.append("\n").append(id);
  return out;
}

// False for anything but "<term>\n<id>..." with a positive decimal term.
inline bool DecodeInSync(std::string_view text, int64_t* term, std::vector<std::string>* ids) {
  ids->clear();
  const size_t end = text.find('\n');
  const std::string_view head = text.substr(0, end);
  if (head.empty() || head.size() > 18) return false;
  int64_t value = 0;
  for (char c : head) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value <= 0) return false;
  *term = value;
  for (size_t at = end; at != std::string_view::npos;) {
    const size_t next = text.find('\n', at + 1);
    ids->emplace_back(text.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    at = next;
  }
  return true;
}

// "shelfmark/<cluster_id>/members/<address>": held (on its own lease) by the
// master that publishes `address`, so a second master with the same address
// in the same cluster refuses to start (ha/member_registration.h).
// Precondition: ValidClusterId(cluster_id).
inline std::string MemberKey(std::string_view cluster_id, std::string_view address) {
  return std::string(kEtcdKeyPrefix) + std::string(cluster_id) + "/members/" +
         std::string(address);
}

}  // namespace shelfmark::ha
