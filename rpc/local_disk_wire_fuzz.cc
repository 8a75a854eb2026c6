// libFuzzer target: the LOCAL_DISK request, probe and reply decoders on
// arbitrary bytes (what any client can send a node's LOCAL_DISK service, and
// what a node answers). A message that decodes must re-encode to bytes that
// decode to the same encoding.
//   rpc/local_disk_wire_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rpc/local_disk_wire.h"
#include "testing/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shelfmark;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  testing::CheckStable(DecodeLocalDiskRequest(bytes), EncodeLocalDiskRequest,
                       DecodeLocalDiskRequest);
  testing::CheckStable(DecodeLocalDiskReply(bytes), EncodeLocalDiskReply, DecodeLocalDiskReply);
  testing::CheckStable(DecodeLocalDiskProbe(bytes), EncodeLocalDiskProbe, DecodeLocalDiskProbe);
  return 0;
}
