// ServiceClient: an engine process's side of the host's store service
// (store_service.h; Mooncake's dummy client). No transport, no segment: the
// calls travel over the service's unix socket, and the bytes of the
// zero-copy calls lie in shared memory registered with the service
// (RegisterShm: a memfd sealed against shrinking, e.g. HostMemAllocator's),
// which the service reads and writes in place.
//
// Connect makes the connection and checks the service's proof of the
// cluster token (service_wire.h) before anything else is sent. A call
// whose connection broke (the service exited or restarted) connects again
// first, proving the token again and registering the shared memory again;
// a call that cannot reach the service answers RPC_FAIL, and one whose
// answer does not come within `timeout_ms` answers RPC_FAIL and drops the
// connection (the service finishes it on its side: a put either lands
// whole or not at all). The handshake's refusals keep their codes
// (UNAUTHENTICATED, PERMISSION_DENIED, NO_AVAILABLE_HANDLE); a service that
// fails to prove the token answers UNAUTHENTICATED.
//
// Codes and answers follow python/native/store.h: 0 or a negative
// ErrorCode; sizes or negative codes; 1/0 for existence.
//
// Thread safety: every method may be called from any thread; calls are
// sent one at a time on the one connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/reply_poll.h"
#include "common/result.h"
#include "common/socket_io.h"
#include "common/task_types.h"
#include "common/types.h"
#include "storeservice/ranged_read.h"
#include "storeservice/service_wire.h"

namespace shelfmark::storeservice {

struct ServiceClientOptions {
  std::string socket;         // SocketOf's forms ("@name", a path)
  std::string cluster_token;  // proven to the service, and checked back
  std::string tenant;         // must be the service's
  int timeout_ms = 10'000;    // per call, and for the connection's handshake
  // After a request is sent, how long the caller polls for the answer
  // before it blocks (common/reply_poll.h; 0: it blocks at once).
  int64_t reply_poll_us = DefaultReplyPollMicros();
};

class ServiceClient {
 public:
  static Result<std::unique_ptr<ServiceClient>> Connect(ServiceClientOptions options);
  ~ServiceClient() = default;
  ServiceClient(const ServiceClient&) = delete;
  ServiceClient& operator=(const ServiceClient&) = delete;

  // [base, base + size) of this process is `fd`'s bytes [0, size), mapped
  // shared (the fd is duplicated and kept for reconnections).
  int RegisterShm(uint64_t base, uint64_t size, int fd);
  int UnregisterShm(uint64_t base);

  int Put(std::string_view key, std::string_view value, const PutConfig& config);
  int Get(std::string_view key, std::string* value);
  std::vector<int> BatchPutFrom(const std::vector<Item>& items, const PutConfig& config);
  std::vector<int64_t> BatchGetInto(const std::vector<Item>& items);
  std::vector<int> BatchPutParts(const std::vector<PartsItem>& items, const PutConfig& config);
  std::vector<int64_t> BatchGetIntoParts(const std::vector<PartsItem>& items);
  std::vector<int> BatchIsExist(const std::vector<std::string>& keys);
  std::vector<int> BatchRemove(const std::vector<std::string>& keys, bool force);
  int Remove(std::string_view key, bool force);
  int64_t GetSize(std::string_view key);
  int Health();
  // Values inline, in one frame each way (INVALID_PARAMS for every item
  // when the request would not fit in kMaxFrameBytes).
  std::vector<int> PutBatch(const std::vector<std::string>& keys,
                            const std::vector<std::string_view>& values, const PutConfig& config);
  // Codes per key; *values holds each key's bytes ("" where its code is not 0).
  std::vector<int> GetBatch(const std::vector<std::string>& keys, std::vector<std::string>* values);
  // One key's fragments (ranged_read.h), an answer per fragment.
  std::vector<int64_t> GetIntoRanges(const std::string& key,
                                     const std::vector<Fragment>& fragments);
  int GetReplicas(std::string_view key, std::vector<ReplicaDescriptor>* replicas);
  int64_t RemoveAll(bool force);
  int64_t RemoveByRegex(std::string_view pattern, bool force);
  // Copy and move tasks, run by the service's client (ids as UUID text).
  int CreateTask(const TaskSpec& spec, std::string* id);
  int RunTask(std::string_view id);
  int QueryTask(std::string_view id, TaskInfo* info);
  // Put and get sessions (sessions.h) held by the service for this
  // connection (a reconnection starts without them): answers per key.
  std::vector<int> PutStart(const std::vector<std::string>& keys,
                            const std::vector<uint64_t>& sizes, const PutConfig& config);
  // kPutRanges or kGetRanges.
  std::vector<int64_t> SessionRanges(Op op, const std::vector<RangedItem>& items);
  // kPutEnd, kPutRevoke or kGetStart.
  std::vector<int> SessionKeys(Op op, const std::vector<std::string>& keys);
  int GetEnd(const std::vector<std::string>& keys);

  // Polls made for answers so far (ReplyPoller::polls; tests).
  uint64_t reply_polls() const;

 private:
  struct Shm {
    uint64_t size = 0;
    UniqueFd fd;
  };
  explicit ServiceClient(ServiceClientOptions options)
      : options_(std::move(options)), poller_(options_.reply_poll_us) {}
  // Connects, proves, registers every Shm again; OK or the code.
  ErrorCode Reconnect() REQUIRES(mu_);
  // Sends `request` (with `fd_to_pass`) and reads the answer, connecting
  // first when needed; OK or the code (the connection dropped on failure).
  // `moves`: the bytes the service copies for it (0: none or unknown). A
  // request that moves kSplitCopyBytes or more (common/work_splitter.h:
  // the service splits its copies over its CPUs) is not polled for: its
  // answer outlasts a poll, the spinning caller would hold a CPU the
  // service's copies need, and its certain miss would count against the
  // polls of the small calls between batches (ReplyPoller stops polling
  // after three misses in a row: measured, a one-object get after each
  // batch of 256 x 64 KiB took 85-112 us instead of 40-48).
  ErrorCode Call(std::string_view request, std::string* answer, int fd_to_pass = -1,
                 uint64_t moves = 0) REQUIRES(mu_);
  // Call, then the answer's one value (i32 or i64); the code on failure.
  template <typename T>
  T CallValue(std::string_view request, uint64_t moves = 0);
  // Call, then the answer's n values of Wire (a batch op's), as Out; every
  // item the call's code when it failed.
  template <typename Wire, typename Out>
  std::vector<Out> CallValues(std::string_view request, size_t n, uint64_t moves = 0);
  // Call, then `decode(reader)` of an answer that leads with an i32 code
  // of 0 (its return: OK, else RPC_FAIL for a malformed answer); the
  // code otherwise.
  template <typename Decode>
  int CallDecoded(std::string_view request, Decode decode);

  const ServiceClientOptions options_;
  mutable Mutex mu_;
  UniqueFd fd_ GUARDED_BY(mu_);
  std::optional<FrameReader> reader_ GUARDED_BY(mu_);  // fd_'s answers, while it is valid
  std::map<uint64_t, Shm> shms_ GUARDED_BY(mu_);
  ReplyPoller poller_ GUARDED_BY(mu_);
};

}  // namespace shelfmark::storeservice
