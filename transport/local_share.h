// Same-host one-sided reads: a node offers its segment (memory backed by a
// memfd) to clients on its own host, which map it read-only and read
// MEMORY replicas with memcpy: no transport, no work by the node's CPU.
//
// LocalShareServer (node side): an abstract unix socket (its name is random
// and published with the worker address, ucx_address_server.h). A client
// sends {magic "SMLS", version, cluster token}; a right token is answered
// {magic, version, accepted 1, segment base, size} with two descriptors
// attached (SCM_RIGHTS): the segment's memfd and a pidfd of the node; a wrong
// one gets accepted 0 and no descriptors. Each connection is served in turn
// with a 500 ms deadline and closed; what a peer sends is read only up to the
// size of a hello, so garbage costs it one connection.
//
// LocalMapping (client side): the mapping of one node's segment, made by
// MapLocalShare, valid while the node process lives: Alive() polls the
// node's pidfd (readable once the process exited), so a node that died or
// restarted on the same endpoint is never read from its old memory.
//
// Contracts: the mapping is PROT_READ (a client cannot write a node's
// memory this way); reads outside [base, base + size) are refused.
// Thread safety: LocalMapping is immutable after creation (any thread);
// LocalShareServer: construct and destroy on one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/poll_thread.h"
#include "common/result.h"

namespace shelfmark {

class LocalShareServer {
 public:
  // Serves the segment [base, base + size) of `memfd` (duplicated: the
  // caller keeps its own) to holders of `cluster_token`.
  static Result<std::unique_ptr<LocalShareServer>> Start(int memfd, uint64_t base, uint64_t size,
                                                         std::string cluster_token);
  ~LocalShareServer();
  LocalShareServer(const LocalShareServer&) = delete;
  LocalShareServer& operator=(const LocalShareServer&) = delete;

  // The abstract socket's name (without the leading NUL).
  const std::string& name() const { return name_; }
  uint64_t shared() const { return shared_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  LocalShareServer() = default;
  void Serve();
  void Answer(int fd);

  std::string name_;
  std::string token_;
  uint64_t base_ = 0, size_ = 0;
  int memfd_ = -1, pidfd_ = -1, listen_fd_ = -1;
  std::atomic<uint64_t> shared_{0}, refused_{0};
  PollThread loop_;
};

class LocalMapping {
 public:
  ~LocalMapping();
  LocalMapping(const LocalMapping&) = delete;
  LocalMapping& operator=(const LocalMapping&) = delete;

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  // False once the node process has exited.
  bool Alive() const;
  // Whether [address, address + length) lies inside the segment.
  bool Covers(uint64_t address, uint64_t length) const {
    return address >= base_ && length <= size_ && address - base_ <= size_ - length;
  }
  // Copies [address, address + length) into dst; requires Covers().
  void Read(uint64_t address, void* dst, uint64_t length) const;

 private:
  friend std::shared_ptr<LocalMapping> MapLocalShare(std::string_view, std::string_view, int,
                                                     std::string*);
  LocalMapping() = default;
  const uint8_t* memory_ = nullptr;
  uint64_t base_ = 0, size_ = 0;
  int pidfd_ = -1;
};

// Maps the segment served at abstract socket `name`, proving `cluster_token`;
// nullptr with *error saying why (no such socket: another network
// namespace; refused token; bad answer; mmap failed).
std::shared_ptr<LocalMapping> MapLocalShare(std::string_view name, std::string_view cluster_token,
                                            int timeout_ms, std::string* error);

// An identity of this host's running kernel (its boot id): equal for every
// process of one host, different across hosts and reboots; "" if unknown.
std::string HostBootId();

}  // namespace shelfmark
