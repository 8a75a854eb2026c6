// libFuzzer target: the SSD store's on-disk decoders on arbitrary bytes (a
// node reads these from its disk at start-up: bit flips, torn writes and
// foreign files must give DATA_CORRUPTED, never a crash): bucket .meta
// files, offset-backend record headers and kv_cache.meta checkpoints. A
// .meta or checkpoint that decodes must re-encode to bytes that decode to
// the same encoding.
//   ssdstore/ssdstore_format_fuzz -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/object_key.h"
#include "ssdstore/bucket_format.h"
#include "ssdstore/offset_checkpoint.h"
#include "ssdstore/offset_record.h"
#include "testing/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shelfmark;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  testing::CheckStable(DecodeBucketMeta(bytes), EncodeBucketMeta, DecodeBucketMeta);
  testing::CheckStable(DecodeCheckpoint(bytes), EncodeCheckpoint, DecodeCheckpoint);
  // A header that decodes has lengths in range: what recovery then reads
  // is bounded by them.
  Result<RecordHeader> header = DecodeRecordHeader(bytes);
  if (header.ok() && (header->flags != 0 || header->tenant_len > kMaxTenantLength ||
                      header->key_len == 0 || header->key_len > kMaxKeyLength)) {
    std::abort();
  }
  return 0;
}
