// libFuzzer target: the UCX engine's node address (with its challenge), hello and hello reply
// decoders on arbitrary bytes (what any peer can send a node or a client). A message
// that decodes must encode back to the same bytes (the format has one
// encoding per value).
//   transport/ucx_wire_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "transport/ucx_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shelfmark::ucx_wire;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto address = DecodeNodeAddress(data, size);
      address && EncodeNodeAddress(*address) != bytes) {
    std::abort();
  }
  if (auto hello = DecodeHello(data, size); hello && EncodeHello(*hello) != bytes) std::abort();
  if (auto reply = DecodeHelloReply(data, size); reply && EncodeHelloReply(*reply) != bytes) {
    std::abort();
  }
  return 0;
}
