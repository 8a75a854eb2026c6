// ServiceSession: what the store service (store_service.h) holds for one
// connected client: the client's shared memory as the service maps it, and
// the requests (service_wire.h, Op) served on the service's Client in the
// session's tenant. Handle answers every request with one answer body;
// nothing a request holds (bytes, descriptors) is trusted:
//   - Register: exactly one descriptor, a memfd (regular file) sealed with
//     F_SEAL_SHRINK, at least `size` bytes long; the client's range
//     [base, base + size) may not wrap or overlap another registration.
//     Else INVALID_PARAMS (descriptors closed).
//   - Addresses in batch calls: each item's [ptr, ptr + size) must lie in
//     one registration, else that item answers INVALID_PARAMS untouched.
//   - Ranged reads (kGetIntoRanges): a fragment whose memory does not
//     translate answers INVALID_PARAMS alone (ranged_read.h).
//   - Tasks (kCreateTask, kRunTask) run on the service's client, which
//     executes them in the session's thread: the client's next answer
//     waits for a task it runs.
//   - Put and get sessions (kPutStart .. kGetEnd, sessions.h) belong to
//     the connection: they end with it (an open put is never completed).
//   - Malformed bodies, unknown ops: INVALID_PARAMS.
// The destructor unregisters (Client::UnregisterBuffer) and unmaps every
// registration: the client's memory is freed once it lets go of its own.
//
// Thread safety: one thread at a time (the connection's).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/page_populator.h"
#include "common/socket_io.h"
#include "common/wire_bytes.h"
#include "storeservice/service_wire.h"
#include "storeservice/sessions.h"

namespace shelfmark::storeservice {

class ServiceSession {
 public:
  // `mapped_bytes` (may be null) counts the bytes mapped, across sessions.
  ServiceSession(Client* client, std::string tenant, std::atomic<uint64_t>* mapped_bytes)
      : client_(client), tenant_(std::move(tenant)), mapped_bytes_(mapped_bytes), sessions_([this] {
          return SessionClient{keep_, client_, tenant_};
        }) {}
  ~ServiceSession();
  ServiceSession(const ServiceSession&) = delete;
  ServiceSession& operator=(const ServiceSession&) = delete;

  // The answer body to one request body and the descriptors that came with it.
  std::string Handle(std::string_view request, std::vector<UniqueFd> fds);

 private:
  struct Mapping {
    char* local = nullptr;  // the service's mapping
    uint64_t size = 0;
    // Its page tables, filled a chunk at a time on first use rather than a
    // fault a page (common/page_populator.h).
    std::unique_ptr<PagePopulator> populator;
  };
  int32_t Register(uint64_t base, uint64_t size, std::vector<UniqueFd>& fds);
  int32_t Unregister(uint64_t base);
  void Unmap(const Mapping& m);
  // The service's address of the client's [ptr, ptr + size), or nullptr;
  // the range's pages are populated for the copy that follows.
  char* Translate(uint64_t ptr, uint64_t size) const;
  // The batch calls move their items' keys into the client's call (no key
  // is copied twice).
  std::string BatchPutFrom(const PutConfig& config, std::vector<Item>& items);
  std::string BatchGetInto(std::vector<Item>& items);
  std::string BatchPutParts(const PutConfig& config, std::vector<PartsItem>& items);
  std::string BatchGetIntoParts(std::vector<PartsItem>& items);
  std::string PutBatch(wire::Reader& r);
  std::string GetBatch(const std::vector<std::string>& keys);
  std::string GetIntoRanges(wire::Reader& r);
  std::string GetReplicas(const std::string& key);
  std::string CreateTask(wire::Reader& r);
  std::string QueryTask(const std::string& id);
  // The put / get sessions' requests (kPutStart .. kGetEnd).
  std::string HandleSessions(Op op, wire::Reader& r);
  // A ranged op's items as Sessions takes them, addresses the service's (0
  // where a piece does not translate: its key answers INVALID_PARAMS).
  std::string SessionRanges(Op op, const std::vector<RangedItem>& items);
  // The service's buffers of every piece of `item`; false when one does not
  // translate (or there is none).
  template <typename Buffer>
  bool TranslatePieces(const PartsItem& item, std::vector<Buffer>* out) const;

  Client* const client_;
  const std::string tenant_;
  std::atomic<uint64_t>* const mapped_bytes_;
  std::map<uint64_t, Mapping> mappings_;  // by the client's base address
  // The connection's sessions live and die with it.
  const std::shared_ptr<int> keep_ = std::make_shared<int>(0);
  Sessions sessions_;
};

}  // namespace shelfmark::storeservice
