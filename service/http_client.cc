#include "service/http_client.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "common/socket_io.h"

namespace shelfmark {
namespace {
constexpr size_t kMaxReplyBytes = 64u << 20;  // not a metrics page
}  // namespace

std::optional<double> PrometheusValue(std::string_view page, std::string_view name) {
  size_t pos = 0;
  while (pos < page.size()) {
    size_t eol = page.find('\n', pos);
    if (eol == std::string_view::npos) eol = page.size();
    std::string_view line = page.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line.front() == '#') continue;
    if (line.substr(0, name.size()) != name || line.size() == name.size()) continue;
    std::string_view rest = line.substr(name.size());
    if (rest.front() == '{') {
      size_t close = rest.find('}');
      if (close == std::string_view::npos) continue;
      rest = rest.substr(close + 1);
    } else if (rest.front() != ' ' && rest.front() != '\t') {
      continue;  // a longer metric name sharing the prefix
    }
    size_t start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos) return std::nullopt;
    rest = rest.substr(start);
    std::string value(rest.substr(0, rest.find_first_of(" \t\r")));  // drop a timestamp
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

Result<HttpReply> HttpGet(const HostPort& where, std::string_view path, int timeout_ms,
                          std::string_view authorization) {
  UniqueFd fd = ConnectTcp(where, timeout_ms);
  if (!fd.valid()) return ErrorCode::RPC_FAIL;
  std::string request = "GET " + std::string(path) + " HTTP/1.0\r\nHost: " + where.ToString() +
                        "\r\nConnection: close\r\n";
  if (!authorization.empty()) request += "Authorization: " + std::string(authorization) + "\r\n";
  request += "\r\n";
  std::string raw;
  if (!SendAll(fd.get(), request, timeout_ms) ||
      !ReceiveAll(fd.get(), &raw, kMaxReplyBytes, timeout_ms)) {
    return ErrorCode::RPC_FAIL;
  }
  // "HTTP/1.x NNN reason\r\n" headers "\r\n\r\n" body
  if (raw.compare(0, 5, "HTTP/") != 0) return ErrorCode::RPC_FAIL;
  size_t space = raw.find(' ');
  size_t header_end = raw.find("\r\n\r\n");
  if (space == std::string::npos || header_end == std::string::npos || space + 4 > raw.size()) {
    return ErrorCode::RPC_FAIL;
  }
  HttpReply reply;
  auto [end, ec] = std::from_chars(raw.data() + space + 1, raw.data() + space + 4, reply.status);
  if (ec != std::errc() || end != raw.data() + space + 4) return ErrorCode::RPC_FAIL;
  reply.body = raw.substr(header_end + 4);
  return reply;
}

}  // namespace shelfmark
