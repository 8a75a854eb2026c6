#include "auth/proof.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace shelfmark::auth {

void RandomBytes(void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    ssize_t n = ::getrandom(p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fprintf(stderr, "shelfmark: getrandom failed; refusing to continue\n");
      std::abort();
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

Nonce NewNonce() {
  Nonce n;
  RandomBytes(n.data(), n.size());
  return n;
}

Proof Prove(std::string_view token, std::string_view label,
            std::initializer_list<std::string_view> parts) {
  std::string message(label);
  message.push_back('\0');
  for (std::string_view part : parts) {
    const uint32_t size = static_cast<uint32_t>(part.size());
    for (int i = 0; i < 4; ++i) message.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
    message.append(part);
  }
  Proof proof{};
  unsigned int length = 0;
  // HMAC() with a null md_out would use a static buffer; ours is per call.
  if (HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), proof.data(),
           &length) == nullptr ||
      length != proof.size()) {
    std::fprintf(stderr, "shelfmark: HMAC-SHA256 failed; refusing to continue\n");
    std::abort();
  }
  return proof;
}

bool ProofMatches(const Proof& expected, std::string_view received) {
  if (received.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), received.data(), expected.size()) == 0;
}

}  // namespace shelfmark::auth
