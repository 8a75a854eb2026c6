// A plain HTTP/1.0 GET over a socket (no extra libraries) and reading one
// value out of a Prometheus text page: how tools, benchmarks and tests read
// another process's /health and /metrics (service/http_server.h serves them).
//
// Thread safety: every function is reentrant; none keeps state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/host_port.h"
#include "common/result.h"

namespace shelfmark {

// The value of the first sample of metric `name` in Prometheus text format
// (a line "name value" or "name{labels} value"; comments skipped). nullopt
// when absent or unparsable.
std::optional<double> PrometheusValue(std::string_view page, std::string_view name);

struct HttpReply {
  int status = 0;
  std::string body;
};

// GET http://host:port/path with HTTP/1.0 ("Connection: close"), reading
// until the server closes. RPC_FAIL when the server cannot be reached, the
// reply is malformed or `timeout_ms` passes (connect and each read). A
// non-empty `authorization` is sent as the Authorization header's value
// ("Bearer <token>" for a page behind --metrics_token_file).
Result<HttpReply> HttpGet(const HostPort& where, std::string_view path, int timeout_ms = 5000,
                          std::string_view authorization = {});

}  // namespace shelfmark
