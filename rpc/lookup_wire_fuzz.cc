// libFuzzer target: the lookup channel's decoders on arbitrary bytes (what
// any client can send the master's RPC port once it sends the lookup tag,
// and what a client reads back). A reply that decodes must re-encode to
// bytes that decode to the same encoding; a request must decode without
// reading out of bounds (ASan) whatever its bytes.
//   rpc/lookup_wire_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rpc/lookup_wire.h"
#include "rpc/mutation_wire.h"
#include "testing/fuzz_check.h"

namespace {

std::string GetReplyBody(const shelfmark::GetReplicaListResponse& r) {
  std::string frame;
  shelfmark::AppendGetReply(r, &frame);
  return frame.substr(shelfmark::kLookupHeaderBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shelfmark;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  LookupRequest request;
  (void)DecodeLookupRequest(bytes, 1024, &request);
  testing::CheckStable(DecodeGetReply(bytes), GetReplyBody, DecodeGetReply);
  (void)DecodeBatchGetReply(bytes, size % 8);
  (void)DecodeChallengeReply(bytes);
  (void)DecodeAuthenticateReply(bytes);
  (void)DecodeReservePutReply(bytes);
  (void)DecodeCommitPutReply(bytes);
  (void)DecodeBatchReservePutReply(bytes, size % 8);
  (void)DecodeBatchCommitPutReply(bytes, size % 8);
  uint32_t body = 0;
  (void)ParseLookupHeader(bytes, &body);
  return 0;
}
