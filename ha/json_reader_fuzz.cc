// libFuzzer target: the JSON reader, base64 and every etcd reply decoder on
// arbitrary bytes (what a hostile or broken server could send). Nothing may
// crash or read out of bounds (ASan, UBSan); a document that parses must
// write back to text that parses to the same text; base64 that decodes must
// encode back to the same text.
//   ha_json_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ha/base64.h"
#include "ha/etcd_wire.h"
#include "ha/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shelfmark::ha;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto json = ParseJson(bytes);
  if (json.ok()) {
    const std::string once = WriteJson(*json);
    auto again = ParseJson(once);
    if (!again.ok() || WriteJson(*again) != once) std::abort();
    (void)JsonInt64(&*json);
    (void)JsonBool(&*json);
  }
  auto decoded = Base64Decode(bytes);
  if (decoded && Base64Encode(*decoded) != bytes) std::abort();

  (void)etcdwire::DecodeRange(bytes);
  (void)etcdwire::DecodeLeaseGrant(bytes);
  (void)etcdwire::DecodeKeepAlive(bytes);
  (void)etcdwire::DecodeCreateIfAbsent(bytes);
  (void)etcdwire::DecodeTxnSucceeded(bytes);
  (void)etcdwire::DecodeEmpty(bytes);
  (void)etcdwire::DecodeGatewayError(bytes);
  return 0;
}
