// The data clients of the tools that move bytes (shelfmark-cli put/get,
// shelfmark-perf read/get): a Client with the binary's linked rdma plugin
// (transport/rdma_plugin.h) filled into its options.
//
//  - CreateDataClient: such a Client, or nullptr after a message on stderr;
//  - PrintTransferCounters: one stderr line per engine of such a client,
//    "<program>: rdma reads posted: N, writes posted: N, bytes read: N,
//    bytes written: N, connects: N, same-host reads: N (B bytes), same-host
//    writes: N (B bytes)" (the same-host ones: copies through a node's
//    mapped segment, ucx only; "<program>: ucx: no transfer counters" for an
//    engine that keeps none).
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "client/client.h"
#include "transport/rdma_plugin.h"

namespace shelfmark {

// A Client for `options` with the linked rdma plugin. `program` prefixes the
// messages on stderr; nullptr after one (--protocol=rdma in a build without
// the verbs engine, or Client::Create failing).
inline std::unique_ptr<Client> CreateDataClient(ClientOptions options, std::string_view program) {
  const RdmaPlugin rdma = LinkedRdmaPlugin();
  options.rdma_factory = rdma.factory;
  options.rdma_device_present = rdma.device_present;
  options.engine_counters = rdma.counters;
  const std::string protocol = options.protocol;
  if (protocol == "rdma" && !rdma.factory) {
    std::fprintf(stderr, "%.*s: flag --protocol=rdma: this build has no verbs engine\n",
                 static_cast<int>(program.size()), program.data());
    return nullptr;
  }
  auto client = Client::Create(std::move(options));
  if (!client.ok()) {
    std::fprintf(stderr, "%.*s: --protocol=%s: cannot open the engines: %s\n",
                 static_cast<int>(program.size()), program.data(), protocol.c_str(),
                 std::string(ErrorCodeName(client.error())).c_str());
    return nullptr;
  }
  return std::move(client).value();
}

inline void PrintTransferCounters(const Client& client, std::string_view program) {
  const int n = static_cast<int>(program.size());
  for (const char* protocol : {"rdma", "ucx", "loopback"}) {
    if (client.engine(protocol) == nullptr) continue;
    std::optional<EngineCounters> c = client.TransferCounters(protocol);
    if (!c) {
      std::fprintf(stderr, "%.*s: %s: no transfer counters\n", n, program.data(), protocol);
      continue;
    }
    std::fprintf(stderr,
                 "%.*s: %s reads posted: %" PRIu64 ", writes posted: %" PRIu64
                 ", bytes read: %" PRIu64 ", bytes written: %" PRIu64 ", connects: %" PRIu64
                 ", same-host reads: %" PRIu64 " (%" PRIu64 " bytes), same-host writes: %" PRIu64
                 " (%" PRIu64 " bytes)\n",
                 n, program.data(), protocol, c->reads_posted, c->writes_posted, c->bytes_read,
                 c->bytes_written, c->connects, c->local_reads, c->local_bytes_read,
                 c->local_writes, c->local_bytes_written);
  }
}

}  // namespace shelfmark
