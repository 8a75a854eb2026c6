// libFuzzer target: the replication stream's decoders on arbitrary bytes
// (what anyone can send the master's RPC port once it sends the replication
// tag, and what a standby reads from whatever it takes for its leader).
// Handshake messages and batches that decode must re-encode to bytes that
// decode to the same encoding; nothing may read out of bounds (ASan).
//   replication/replication_wire_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "replication/replication_wire.h"
#include "testing/fuzz_check.h"

namespace {

using namespace shelfmark;

// The body of the frame `append` writes for `value`.
template <typename T, typename Append>
std::string Body(const T& value, Append append) {
  std::string frame;
  append(value, &frame);
  return frame.substr(kReplicationHeaderBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)MessageOf(bytes);
  (void)DecodeProof(bytes);
  (void)DecodeAck(bytes);
  testing::CheckStable(
      DecodeHello(bytes), [](const ReplicationHello& h) { return Body(h, AppendHello); },
      DecodeHello);
  testing::CheckStable(
      DecodeChallenge(bytes),
      [](const ReplicationChallenge& c) { return Body(c, AppendChallenge); }, DecodeChallenge);
  testing::CheckStable(
      DecodeWelcome(bytes), [](const ReplicationWelcome& w) { return Body(w, AppendWelcome); },
      DecodeWelcome);
  testing::CheckStable(
      DecodeBatch(bytes), [](const ReplicationBatch& b) { return Body(b, AppendBatch); },
      DecodeBatch);
  uint32_t body = 0;
  (void)ParseReplicationHeader(bytes, &body);
  return 0;
}
