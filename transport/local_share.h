// Same-host one-sided reads and writes: a node offers its segment (memory
// backed by a memfd) to clients on its own host, which map it read-write
// and read and write MEMORY replicas with memcpy: no transport, no work by
// the node's CPU.
//
// LocalShareServer (node side): an abstract unix socket (its name is random
// and published with the worker address, ucx_address_server.h). Mutual
// challenge-response (auth/proof.h), the token never sent:
//   node -> client  challenge {magic "SMLS", version, node nonce}
//   client -> node  answer    {magic, version, client nonce,
//                              proof "share/client" over both nonces and the name}
//   node -> client  reply     {magic, version, accepted, segment base, size,
//                              proof "share/node" over both nonces, the name,
//                              base and size}
// A right proof is accepted with two descriptors attached (SCM_RIGHTS): the
// segment's memfd and a pidfd of the node; a wrong one gets accepted 0, no
// proof and no descriptors. The client maps nothing unless the node's proof
// verifies. Each connection is served in turn with a 500 ms deadline and
// closed; what a peer sends is read only up to the size of an answer, so
// garbage costs it one connection. Every connection has a fresh node
// nonce, so a recorded answer never verifies again.
//
// LocalMapping (client side): the mapping of one node's segment, made by
// MapLocalShare, valid while the node process lives: Alive() polls the
// node's pidfd (readable once the process exited), so a node that died or
// restarted on the same endpoint is never read or written through its old
// memory.
//
// Contracts: the mapping is PROT_READ | PROT_WRITE, MAP_SHARED: what a
// client copies in is in the node's segment at once. It grants nothing the
// cluster token does not: a token holder may already read and write any
// byte of the node's live segment over the transport (docs/security.md).
// Callers copy only inside [base, base + size) (Covers) and only while
// Alive(); the node's memory outside its segment is never mapped. A segment
// its node retired while the process lives stays mapped here: copies land in
// pages the node no longer uses (node.cc: RetireMemory keeps the range, so
// no later segment reuses its addresses), and the UCX path would refuse them.
// The client's page tables for the segment are filled a 2 MiB chunk at a
// time when a copy first touches it (common/page_populator.h): a fault a
// page would cost more than the copy, and populating the whole mapping at
// once would cost time and page tables in proportion to the segment, not
// to what the client uses.
// Thread safety: LocalMapping is immutable after creation but for its
// populator, which is thread-safe (any thread); LocalShareServer: construct
// and destroy on one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "auth/proof.h"
#include "common/page_populator.h"
#include "common/poll_thread.h"
#include "common/result.h"
#include "common/socket_io.h"
#include "transport/transport.h"

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

  // Fault hook for tests: accept every answer, proving with this server's
  // own token (an impostor). Never set otherwise.
  void TestingAcceptAnyAnswer() { accept_any_answer_.store(true); }

 private:
  LocalShareServer() = default;
  void Serve();
  void Answer(int fd);

  std::string name_;
  std::string token_;
  uint64_t base_ = 0, size_ = 0;
  int memfd_ = -1, pidfd_ = -1, listen_fd_ = -1;
  std::atomic<uint64_t> shared_{0}, refused_{0};
  std::atomic<bool> accept_any_answer_{false};
  PollThread loop_;
};

// A transfer a memcpy serves, with the remote range mapped here at `at`:
// READ copies [at, at + length) into `local`, WRITE `local` into it with
// streamed stores (common/copy_bytes.h: StreamBytes; `local` only read).
// With `stream_reads`, a READ's stores into `local` are streamed too: for
// a `local` that another process reads next (a store service's client's
// shared memory), where cached stores would only pull its lines into this
// core to be fetched back by the reader's. With `checksum`: sets it to
// Checksum64 of the bytes copied, computed in the same pass
// (common/checksum.h), so the bytes are read once.
void CopyLocal(TransferKind kind, void* local, uint8_t* at, uint64_t length,
               std::optional<uint64_t>* checksum, bool stream_reads = false);

// Whether a call's READ ops copy with streamed stores whoever reads the
// bytes next: when together they move at least kStreamReadBytes. Cached
// stores first read each destination line from memory (a read for
// ownership) and write it back later; that pays off while the reader still
// finds the lines in the cache, which a batch the size of a good part of
// the last-level cache (32 MiB a CCD on the benchmark's AMD EPYC) no longer
// leaves there: with the checksum fused (common/checksum.h) into a numpy
// array from a segment, 64 KiB objects, cold caches, a batch of 4 MiB took
// about 20% less time cached (with a read of the array after it, too), of
// 8 MiB about the same (the copy 4% less streamed, with a read after it 7%
// more), of 16 MiB 20-25% less streamed, with a read after it too. The
// size is a constant: the cache size a VM reports can be anything (320 MiB
// here).
inline constexpr uint64_t kStreamReadBytes = 8ull << 20;
bool StreamsReads(TransferKind kind, std::span<const TransferOp> ops);

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
  // Copies [address, address + length) into dst; requires Covers(). With
  // `checksum`: sets it to Checksum64 of the bytes copied, in the same pass;
  // `stream`: into dst with streamed stores (CopyLocal's stream_reads).
  void Read(uint64_t address, void* dst, uint64_t length,
            std::optional<uint64_t>* checksum = nullptr, bool stream = false) const;
  // Copies src into [address, address + length); requires Covers(). With
  // `checksum`: as Read's.
  void Write(uint64_t address, const void* src, uint64_t length,
             std::optional<uint64_t>* checksum = nullptr) const;

 private:
  friend std::shared_ptr<LocalMapping> MapLocalShare(std::string_view, std::string_view, int,
                                                     std::string*);
  LocalMapping() = default;
  uint8_t* memory_ = nullptr;
  uint64_t base_ = 0, size_ = 0;
  int pidfd_ = -1;
  std::unique_ptr<PagePopulator> populator_;  // over memory_
};

// Maps the segment served at abstract socket `name`, proving `cluster_token`
// and checking the node's proof of it; nullptr with *error saying why (no
// such socket: another network namespace; "refused"; "did not prove the
// cluster token"; bad answer; mmap failed).
std::shared_ptr<LocalMapping> MapLocalShare(std::string_view name, std::string_view cluster_token,
                                            int timeout_ms, std::string* error);

// The handshake's messages (above), for tests that play a client by hand.
namespace local_share_wire {
inline constexpr size_t kChallengeSize = 4 + 1 + auth::kNonceBytes;
inline constexpr size_t kAnswerSize = 4 + 1 + auth::kNonceBytes + auth::kProofBytes;
inline constexpr size_t kReplySize = 4 + 1 + 1 + 8 + 8 + auth::kProofBytes;
std::string EncodeChallenge(const auth::Nonce& node_nonce);
std::optional<auth::Nonce> DecodeChallenge(std::string_view bytes);
std::string EncodeAnswer(std::string_view token, std::string_view name,
                         const auth::Nonce& node_nonce, const auth::Nonce& client_nonce);
struct Reply {
  bool accepted = false;
  uint64_t base = 0, size = 0;
  auth::Proof proof{};
};
std::optional<Reply> DecodeReply(std::string_view bytes);
// Receives one reply's bytes (up to kReplySize + 1: a longer reply is not
// one) and its descriptors: *memfd and *pidfd when exactly two came, else
// none kept (closed). "" when nothing came.
std::string ReceiveReply(int fd, UniqueFd* memfd, UniqueFd* pidfd);
}  // namespace local_share_wire

// An identity of this host's running kernel (its boot id): equal for every
// process of one host, different across hosts and reboots; "" if unknown.
std::string HostBootId();

}  // namespace shelfmark
