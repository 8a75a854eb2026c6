// The store service's unix-socket protocol (docs/node.md, "The host's store
// service"): frames, the mutual token handshake, the operations, and the
// descriptor passing that hands a client's shared memory to the service.
//
// Frame: u32le body length, then the body (at most kMaxFrameBytes; a longer
// announcement is a protocol error and the reader gives up on the stream).
// A frame may carry file descriptors (SCM_RIGHTS) on its bytes; the reader
// collects every descriptor that arrives while it reads the frame.
//
// Handshake, each message one frame (labels: auth/proof.h's rules):
//   service -> client  challenge {magic "SMSS", version, service nonce}
//   client -> service  hello     {magic, version, client nonce, tenant,
//                                 proof "store-service/client" over
//                                 (service nonce, client nonce, tenant)}
//   service -> client  welcome   {magic, version, i32 code,
//                                 proof "store-service/server" over
//                                 (service nonce, client nonce, tenant, code)}
// code: OK, UNAUTHENTICATED (the client's proof did not verify; no proof
// follows, zeros), PERMISSION_DENIED (the tenant is not the service's),
// NO_AVAILABLE_HANDLE (the service serves --threads clients already). The
// client trusts nothing of the service before its proof verifies.
//
// Requests: u8 op, then the op's fields (Op below); every request gets one
// answer frame. Codes are ErrorCode values.
//
// Thread safety: free functions; reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "auth/proof.h"
#include "common/error_code.h"
#include "common/socket_io.h"
#include "common/types.h"
#include "common/wire_bytes.h"

namespace shelfmark::storeservice {

inline constexpr char kMagic[4] = {'S', 'M', 'S', 'S'};
inline constexpr uint8_t kVersion = 1;
// A put's inline value and a get's answer fit in a frame.
inline constexpr uint32_t kMaxFrameBytes = (256u << 20) + 4096;
// A handshake message's limit: a peer that has proven nothing yet cannot
// make the service hold more than this.
inline constexpr uint32_t kMaxHandshakeBytes = 4096;
// The most items one batch request may name.
inline constexpr uint32_t kMaxBatchItems = 1u << 20;

inline constexpr std::string_view kClientLabel = "store-service/client";
inline constexpr std::string_view kServerLabel = "store-service/server";

enum class Op : uint8_t {
  // {u64 client base, u64 size}, one memfd attached (sealed against
  // shrinking) -> {i32}. The fd's bytes [0, size) appear at the client's
  // [base, base + size).
  kRegister = 1,
  kUnregister = 2,    // {u64 client base} -> {i32}
  kPut = 3,           // {key, config, value} -> {i32}
  kGet = 4,           // {key} -> {i32, value}
  kBatchPutFrom = 5,  // {config, u32 n, n x (key, u64 ptr, u64 size)} -> {u32 n, n x i32}
  kBatchGetInto = 6,  // {u32 n, n x (key, u64 ptr, u64 size)} -> {u32 n, n x i64}
  kBatchExist = 7,    // {u32 n, n x key} -> {u32 n, n x i32: 1, 0 or a code}
  kRemove = 8,        // {key, u8 force} -> {i32}
  kGetSize = 9,       // {key} -> {i64: size or a code}
  kHealth = 10,       // {} -> {i32: the master's answer}
  // Objects made of several pieces of client memory (a KV block's layers):
  // {config, u32 n, n x (key, u32 m, m x (u64 ptr, u64 size))} -> {u32 n, n x i32}
  kBatchPutParts = 11,
  // {u32 n, n x (key, u32 m, m x (u64 ptr, u64 size))} -> {u32 n, n x i64}
  kBatchGetIntoParts = 12,
  kBatchRemove = 13,  // {u8 force, u32 n, n x key} -> {u32 n, n x i32}
  // Values inline (put_batch, put_parts): {config, u32 n, n x (key, value)} -> {u32 n, n x i32}
  kPutBatch = 14,
  // {u32 n, n x key} -> {u32 n, n x (i32, value)}; a value that would make
  // the answer (or kGet's) longer than kMaxFrameBytes: INVALID_PARAMS, "".
  kGetBatch = 15,
  // Ranges of one object into client memory (ranged_read.h):
  // {key, u32 n, n x (u64 src offset, u64 length, u64 ptr)} -> {u32 n, n x i64}
  kGetIntoRanges = 16,
  // {key} -> {i32, u32 n, n x replica (rpc/lookup_wire.h's encoding)}
  kGetReplicas = 17,
  kRemoveAll = 18,      // {u8 force} -> {i64: the number removed or a code}
  kRemoveByRegex = 19,  // {pattern, u8 force} -> {i64}
  // Copy and move tasks (task_wire.h), run by the service's client:
  kCreateTask = 20,  // {u8 type, key, source, u32 n, n x target} -> {i32, task id text}
  kRunTask = 21,     // {task id text} -> {i32: the task's outcome}
  kQueryTask = 22,   // {task id text} -> {i32, TaskInfo when 0}
  // Put and get sessions (sessions.h), held for this connection:
  kPutStart = 23,   // {config, u32 n, n x (key, u64 size)} -> {u32 n, n x i32}
  kPutRanges = 24,  // {ranged items} -> {u32 n, n x i64}
  kPutEnd = 25,     // {u32 n, n x key} -> {u32 n, n x i32}
  kPutRevoke = 26,  // {u32 n, n x key} -> {u32 n, n x i32}
  kGetStart = 27,   // {u32 n, n x key} -> {u32 n, n x i32}
  kGetRanges = 28,  // {ranged items} -> {u32 n, n x i64}
  kGetEnd = 29,     // {u32 n, n x key} -> {i32}
};

// One item of the batch ops: a key and memory of the client's address space.
struct Item {
  std::string key;
  uint64_t ptr = 0;
  uint64_t size = 0;
};

// An item of the parts ops: a key and the pieces of client memory its
// object is the concatenation of, in order.
struct Piece {
  uint64_t ptr = 0;
  uint64_t size = 0;
};
struct PartsItem {
  std::string key;
  std::vector<Piece> pieces;
};

// An item of the sessions' ranged ops: a key and pieces of client memory,
// each at an offset of the object.
// Wire: u32 n, n x (key, u32 m, m x (u64 ptr, u64 size, u64 offset)).
struct RangedPiece {
  uint64_t ptr = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};
struct RangedItem {
  std::string key;
  std::vector<RangedPiece> pieces;
};

// --- where the service listens ------------------------------------------------

// The socket a client's server_address names: "@name" (an abstract unix
// socket), a path (containing '/'; "unix:PATH" too), or Mooncake's
// "host:port" of the real client, which names the abstract socket
// "@shelfmark-store-service:PORT" of this host (DefaultSocket). "" for text
// that is none of these.
std::string SocketOf(std::string_view server_address);
// The service's socket when --socket_path is not given.
std::string DefaultSocket(uint16_t port);
// A unix stream socket (SOCK_CLOEXEC | SOCK_NONBLOCK) bound and listening at
// `socket` (SocketOf's forms: "@name" or a path; a path left by a dead
// service is replaced, one a live service answers on is not); -1 on failure.
int ListenUnix(const std::string& socket);
// A socket connected to `socket` (the same forms); invalid when nothing
// listens there.
UniqueFd ConnectUnix(const std::string& socket);

// --- frames ------------------------------------------------------------------

// Sends one frame (header and body in one sendmsg when the socket takes
// it) with `fd_to_pass` attached (< 0: none); false on an error or a
// socket that stays full for `timeout_ms`.
bool SendFrame(int fd, std::string_view body, int timeout_ms, int fd_to_pass = -1);

enum class ReadStatus { kOk, kClosed, kTimeout, kBad };
// Reads one frame into *body and the descriptors that came with it into
// *fds (owned); reads no byte past the frame. `first_byte_timeout_ms` < 0
// waits for the frame's start without limit; the rest must come within
// `timeout_ms` of each wait. kClosed: the peer closed before a frame
// began; kBad: an error, a frame cut short, a length over `max_bytes`,
// truncated descriptors.
ReadStatus ReadFrame(int fd, std::string* body, std::vector<UniqueFd>* fds,
                     int first_byte_timeout_ms, int timeout_ms,
                     uint32_t max_bytes = kMaxFrameBytes);

// ReadFrame for a connection's stream of requests or answers, with fewer
// system calls: a frame that has arrived whole (up to kReadAhead bytes) is
// taken with one poll and one recvmsg, bytes read past it are kept for the
// next Read, and a longer body is read straight into place. Descriptors go
// to the frame being read when they arrive (a peer that sends a frame
// before the answer to its last may see them counted with the earlier one:
// neither side of this protocol does). Statuses as ReadFrame's.
// Thread safety: one thread at a time.
class FrameReader {
 public:
  static constexpr size_t kReadAhead = 64 << 10;
  explicit FrameReader(int fd) : fd_(fd), buf_(kReadAhead) {}
  ReadStatus Read(std::string* body, std::vector<UniqueFd>* fds, int first_byte_timeout_ms,
                  int timeout_ms, uint32_t max_bytes = kMaxFrameBytes);
  // Bytes read ahead and not taken yet (the next frame may be among them).
  bool buffered() const { return have_ > 0; }

 private:
  const int fd_;
  std::vector<char> buf_;
  size_t have_ = 0;  // bytes of buf_ read and not yet taken
};

// --- handshake ---------------------------------------------------------------

std::string EncodeChallenge(const auth::Nonce& service_nonce);
bool DecodeChallenge(std::string_view bytes, auth::Nonce* service_nonce);

auth::Proof ClientProof(std::string_view token, const auth::Nonce& service_nonce,
                        const auth::Nonce& client_nonce, std::string_view tenant);
auth::Proof ServerProof(std::string_view token, const auth::Nonce& service_nonce,
                        const auth::Nonce& client_nonce, std::string_view tenant, int32_t code);

struct Hello {
  auth::Nonce client_nonce{};
  std::string tenant;
  std::string proof;
};
std::string EncodeHello(const Hello& hello);
bool DecodeHello(std::string_view bytes, Hello* hello);

struct Welcome {
  int32_t code = 0;
  std::string proof;
};
std::string EncodeWelcome(const Welcome& welcome);
bool DecodeWelcome(std::string_view bytes, Welcome* welcome);

// --- request fields ----------------------------------------------------------

void PutPutConfig(wire::Writer& w, const PutConfig& config);
// False (nothing else promised) on malformed bytes.
bool GetPutConfig(wire::Reader& r, PutConfig* config);

void PutItems(wire::Writer& w, const std::vector<Item>& items);
bool GetItems(wire::Reader& r, std::vector<Item>* items);
void PutPartsItems(wire::Writer& w, const std::vector<PartsItem>& items);
bool GetPartsItems(wire::Reader& r, std::vector<PartsItem>* items);
void PutRangedItems(wire::Writer& w, const std::vector<RangedItem>& items);
bool GetRangedItems(wire::Reader& r, std::vector<RangedItem>* items);
void PutKeys(wire::Writer& w, const std::vector<std::string>& keys);
bool GetKeys(wire::Reader& r, std::vector<std::string>* keys);

// Answers of the batch ops: u32 n, then n values of T.
template <typename T>
std::string EncodeValues(const std::vector<T>& values) {
  wire::Writer w;
  w.Put(static_cast<uint32_t>(values.size()));
  for (T v : values) w.Put(v);
  return w.Take();
}
template <typename T>
bool DecodeValues(std::string_view bytes, size_t expected, std::vector<T>* values) {
  wire::Reader r(bytes.data(), bytes.size());
  const uint32_t n = r.Get<uint32_t>();
  if (n != expected) return false;
  values->clear();
  for (uint32_t i = 0; i < n; ++i) values->push_back(r.Get<T>());
  return r.done() && values->size() == expected;
}

}  // namespace shelfmark::storeservice
