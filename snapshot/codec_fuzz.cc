// libFuzzer target: every snapshot decoder on arbitrary bytes. The bytes go
// to each decoder as they are (the zstd framing and the text parsers) and,
// for the compressed payloads, also wrapped in a valid zstd frame, so the
// MessagePack layer is reached despite the frame checksum. A value that
// decodes must re-encode to bytes that decode to the same encoding.
//   snapshot_codec_fuzz -max_total_time=60 [corpus dir]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "snapshot/codec.h"
#include "testing/fuzz_check.h"

namespace {

using shelfmark::Result;

void FuzzCompressed(std::string_view bytes) {
  using namespace shelfmark;
  testing::CheckStable(DecodeShard(bytes), EncodeShard, DecodeShard);
  testing::CheckStable(DecodeSegments(bytes), EncodeSegments, DecodeSegments);
  testing::CheckStable(DecodeTasks(bytes), EncodeTasks, DecodeTasks);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shelfmark;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  FuzzCompressed(bytes);
  FuzzCompressed(CompressPayload(bytes));

  auto shards = SplitMetadata(bytes);
  if (shards.ok()) {
    for (const auto& [index, bin] : *shards) {
      if (index >= 1024) std::abort();
      testing::CheckStable(DecodeShard(bin), EncodeShard, DecodeShard);
    }
  }
  testing::CheckStable(DecodeManifest(bytes), EncodeManifest, DecodeManifest);
  testing::CheckStable(DecodeDescriptor(bytes), EncodeDescriptor, DecodeDescriptor);
  if (ValidSnapshotId(bytes) && bytes.size() != SnapshotIdAt(0).size()) std::abort();
  return 0;
}
