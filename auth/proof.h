// Challenge-response proofs of a shared token (docs/security.md).
//
// Every handshake in Shelfmark (a process to the master, a client to a
// node's UCX worker, to its verbs listener, to its same-host share) proves
// knowledge of a token the same way: each side contributes a fresh random
// nonce, and a side proves the token by sending
//     HMAC-SHA256(token, label || parts...)
// where `label` names the protocol and the direction ("master/client",
// "master/server", ...) so a proof made for one purpose never verifies for
// another (no reflection of one side's proof back to it), and the parts
// (the nonces, identities) are length-prefixed so no two part lists encode
// alike. Neither the token nor anything that verifies a second time crosses
// the wire: a recorded proof is bound to nonces the verifier never issues again.
//
// Thread safety: free functions, thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace shelfmark::auth {

constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;  // SHA-256

using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Fills `out` from the kernel's CSPRNG (getrandom). Aborts the process if the
// kernel cannot give randomness: no handshake may go on with a guessable nonce.
void RandomBytes(void* out, size_t size);

// The labels of the master handshake's two proofs (schemas/master.capnp).
inline constexpr std::string_view kMasterClientLabel = "master/client";
inline constexpr std::string_view kMasterServerLabel = "master/server";

// A fresh nonce.
Nonce NewNonce();

// The bytes of a nonce or proof as a string_view (for parts and wire fields).
inline std::string_view Bytes(const Nonce& n) {
  return {reinterpret_cast<const char*>(n.data()), n.size()};
}
inline std::string_view BytesOf(const Proof& p) {
  return {reinterpret_cast<const char*>(p.data()), p.size()};
}

// HMAC-SHA256(token, label || for each part: u32le(size) || part).
Proof Prove(std::string_view token, std::string_view label,
            std::initializer_list<std::string_view> parts);

// True when `received` is exactly `expected`; constant time in the bytes'
// values (a wrong proof's first differing byte is not revealed by timing).
bool ProofMatches(const Proof& expected, std::string_view received);

}  // namespace shelfmark::auth
