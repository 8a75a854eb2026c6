// The UCX engine's own messages (worker address, hello, active-message
// framing); the byte packing itself is common/wire_bytes.h. The proofs they
// carry are auth::Prove's (docs/transport.md, "Proving the cluster token").
//
// Node address (node -> anyone, over the node's TCP address port, then the
// node closes): magic "SMWA", version, a challenge issued for this
// connection alone {ticket, node nonce} (challenge_book.h), the node's UCX
// worker address, its host's boot id and the name of its local share (""
// when none; local_share.h). A client creates its UCX endpoint from the
// worker address (ucp_ep_create with a remote worker address) and, on the
// same host (equal boot ids), maps the node's segment through the share.
//
// Hello (client -> node, the first active message on a new endpoint, in the
// AM header): magic, version, the client's connection id, client id, the
// ticket it was given, its own nonce, its proof of the cluster token over
// both nonces and what it claims (UcxClientProof), and its own worker
// address (the node connects back to it for its replies). Hello reply
// (node -> client): magic, version, accepted (0/1), the connection id
// echoed, on acceptance the session {node connection id, 64-bit secret}
// that every request then carries, and the node's proof (UcxNodeProof; zero
// when not accepted). The token itself never travels.
//
// Contracts: Decode* never read out of bounds and accept exactly what the
// matching Encode* produces (wrong magic, version, length or trailing bytes
// give nullopt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "auth/proof.h"
#include "common/uuid.h"
#include "common/wire_bytes.h"

namespace shelfmark::ucx_wire {

inline constexpr uint32_t kMagicAddress = 0x41574d53;  // "SMWA"
inline constexpr uint32_t kMagicHello = 0x4c484d53;    // "SMHL"
inline constexpr uint32_t kMagicAm = 0x4d414d53;       // "SMAM"
inline constexpr uint8_t kVersion = 3;  // 3: proofs instead of the token
// Bounds what a client reads from an address port: a worker address lists
// every device of the node (a few hundred bytes to a few KiB).
inline constexpr size_t kMaxWorkerAddress = 64 * 1024;

using wire::Reader;
using wire::Writer;

struct NodeAddress {
  std::string worker_address;  // never empty in a valid message
  std::string boot_id;
  std::string share_name;
  uint64_t ticket = 0;  // names `nonce` in the hello; never 0 in a valid message
  auth::Nonce nonce{};
  bool operator==(const NodeAddress&) const = default;
};

std::string EncodeNodeAddress(const NodeAddress& address);
std::optional<NodeAddress> DecodeNodeAddress(const void* bytes, size_t size);

struct Hello {
  uint64_t conn_id = 0;
  UUID client_id;
  uint64_t ticket = 0;  // the node address's
  auth::Nonce client_nonce{};
  auth::Proof proof{};  // UcxClientProof
  std::string worker_address;
  bool operator==(const Hello&) const = default;
};

// A node connection's credentials, as the node issued them.
struct Session {
  uint64_t id = 0;
  uint64_t secret = 0;
  bool operator==(const Session&) const = default;
};

struct HelloReply {
  bool accepted = false;
  uint64_t conn_id = 0;
  Session session;         // zero when not accepted
  auth::Proof proof{};     // UcxNodeProof; zero when not accepted
  bool operator==(const HelloReply&) const = default;
};

std::string EncodeHello(const Hello& hello);
std::optional<Hello> DecodeHello(const void* bytes, size_t size);
std::string EncodeHelloReply(const HelloReply& reply);
std::optional<HelloReply> DecodeHelloReply(const void* bytes, size_t size);

// The proofs of the cluster token (auth::Prove, labels "ucx/client" and
// "ucx/node"): each binds both nonces and everything else its message
// claims, so neither can be replayed, reflected or moved to another
// connection, client or session.
auth::Proof UcxClientProof(std::string_view token, const auth::Nonce& node_nonce,
                           const Hello& hello);
auth::Proof UcxNodeProof(std::string_view token, const auth::Nonce& node_nonce,
                         const Hello& hello, const HelloReply& reply);

}  // namespace shelfmark::ucx_wire
