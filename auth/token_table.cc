#include "auth/token_table.h"

#include <sstream>

#include "auth/credentials.h"
#include "common/object_key.h"

namespace shelfmark::auth {
namespace {

constexpr std::pair<Role, std::string_view> kRoleNames[] = {
    {kRoleNode, "node"}, {kRoleClient, "client"}, {kRoleAdmin, "admin"}};

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  std::istringstream in{std::string(line)};
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// One line's entry; INVALID_PARAMS with `*why` set when it is malformed.
Result<TokenEntry> ParseEntry(const std::vector<std::string>& words, std::string* why) {
  TokenEntry entry;
  if (words.size() == 1) {
    entry.token = words[0];
    entry.roles = kAllRoles;
    return entry;
  }
  if (words.size() > 3) {
    *why = "expected TOKEN or ROLES TOKEN [tenant=NAME]";
    return ErrorCode::INVALID_PARAMS;
  }
  auto roles = ParseRoles(words[0]);
  if (!roles.ok()) {
    *why = "unknown role in '" + words[0] + "' (node, client, admin)";
    return ErrorCode::INVALID_PARAMS;
  }
  entry.roles = *roles;
  entry.token = words[1];
  if (words.size() == 3) {
    constexpr std::string_view kTenant = "tenant=";
    if (words[2].rfind(kTenant, 0) != 0 ||
        ValidateTenant(std::string_view(words[2]).substr(kTenant.size())) != ErrorCode::OK) {
      *why = "third word must be tenant=NAME with a valid tenant name";
      return ErrorCode::INVALID_PARAMS;
    }
    if (entry.roles != kRoleClient) {
      *why = "tenant= binds client-only tokens (nodes and admins act across tenants)";
      return ErrorCode::INVALID_PARAMS;
    }
    entry.tenant = words[2].substr(kTenant.size());
  }
  return entry;
}

// ParseEntry, then its token's strength.
Result<TokenEntry> ParseLine(const std::vector<std::string>& words, std::string* why) {
  auto entry = ParseEntry(words, why);
  if (!entry.ok()) return entry;
  if (std::string weak = WeakTokenReason(entry->token); !weak.empty()) {
    *why = "token " + weak;
    return ErrorCode::INVALID_PARAMS;
  }
  return entry;
}

}  // namespace

std::string WeakTokenReason(std::string_view token) {
  // Role words first: `admin` alone is a role without its token, whatever its length.
  if (ParseRoles(token).ok()) {
    return "'" + std::string(token) + "' is a role word (a line is TOKEN or ROLES TOKEN)";
  }
  if (token.rfind("tenant=", 0) == 0) return "'" + std::string(token) + "' is a tenant= word";
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) return "holds a byte that is not printable ASCII";
  }
  if (token.size() < kMinTokenBytes) {
    return "is " + std::to_string(token.size()) + " bytes, shorter than " +
           std::to_string(kMinTokenBytes) + " (generate one: openssl rand -base64 32)";
  }
  return "";
}

std::string RoleNames(uint32_t roles) {
  std::string out;
  for (const auto& [bit, name] : kRoleNames) {
    if ((roles & bit) == 0) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out.empty() ? "none" : out;
}

Result<uint32_t> ParseRoles(std::string_view text) {
  uint32_t roles = 0;
  while (true) {
    size_t comma = text.find(',');
    std::string_view name = text.substr(0, comma);
    bool known = false;
    for (const auto& [bit, n] : kRoleNames) {
      if (name == n) {
        roles |= bit;
        known = true;
      }
    }
    if (!known) return ErrorCode::INVALID_PARAMS;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return roles;
}

Result<TokenTable> TokenTable::Parse(std::string_view text, std::string* error) {
  TokenTable table;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::vector<std::string> words = Words(line);
    if (words.empty() || words[0].front() == '#') continue;
    std::string why;
    auto entry = ParseLine(words, &why);
    if (entry.ok()) {
      for (const TokenEntry& e : table.entries_) {
        if (e.token == entry->token) {
          why = "token repeated (each token has one set of roles)";
          entry = ErrorCode::INVALID_PARAMS;
          break;
        }
      }
    }
    if (!entry.ok()) {
      if (error != nullptr) *error = "line " + std::to_string(number) + ": " + why;
      return ErrorCode::INVALID_PARAMS;
    }
    table.entries_.push_back(std::move(*entry));
  }
  if (table.entries_.empty()) {
    if (error != nullptr) *error = "no token in the file";
    return ErrorCode::INVALID_PARAMS;
  }
  return table;
}

Result<TokenTable> TokenTable::Load(const std::string& path, std::string* error,
                                    std::string* warning) {
  auto text = ReadSecretFile(path, warning);
  if (!text.ok()) return text.error();
  return Parse(*text, error);
}

TokenTable TokenTable::Single(std::string token) {
  TokenTable table;
  table.entries_.push_back({std::move(token), kAllRoles, ""});
  return table;
}

const TokenEntry* TokenTable::Identify(std::string_view server_nonce,
                                       std::string_view client_nonce,
                                       std::string_view proof) const {
  for (const TokenEntry& e : entries_) {
    if (ProofMatches(Prove(e.token, kMasterClientLabel, {server_nonce, client_nonce}), proof)) {
      return &e;
    }
  }
  return nullptr;
}

std::string TokenTable::AdminToken() const {
  for (const TokenEntry& e : entries_) {
    if ((e.roles & kRoleAdmin) != 0 && e.tenant.empty()) return e.token;
  }
  return "";
}

}  // namespace shelfmark::auth
