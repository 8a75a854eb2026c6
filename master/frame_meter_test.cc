// FrameMeter against real Cap'n Proto frames (capnp::messageToFlatArray),
// fed whole and in pieces of every size.
#include "master/frame_meter.h"

#include "rpc/lookup_wire.h"

#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace shelfmark {
namespace {

// A frame whose first segment is `first_segment_words` long, so larger keys
// spill into more segments.
std::vector<uint8_t> Frame(size_t key_bytes, unsigned first_segment_words) {
  capnp::MallocMessageBuilder message(first_segment_words,
                                      capnp::AllocationStrategy::FIXED_SIZE);
  auto text = message.getRoot<capnp::AnyPointer>().initAs<capnp::Text>(
      static_cast<unsigned>(key_bytes));
  std::memset(text.begin(), 'k', key_bytes);
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(message);
  auto bytes = flat.asBytes();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

struct Seen {
  std::vector<uint64_t> starts;
  int ends = 0;
};

FrameMeter Metered(Seen* seen) {
  FrameMeter meter;
  meter.on_start = [seen](uint64_t bytes) {
    seen->starts.push_back(bytes);
    return true;
  };
  meter.on_end = [seen] {
    ++seen->ends;
    return true;
  };
  return meter;
}

TEST(FrameMeter, ReportsEachFrameSizeAndEndInAnyPieces) {
  std::vector<std::vector<uint8_t>> frames = {Frame(0, 1), Frame(10, 64), Frame(5000, 8),
                                              Frame(100000, 1024)};
  std::vector<uint8_t> stream;
  std::vector<uint64_t> sizes;
  for (const auto& f : frames) {
    stream.insert(stream.end(), f.begin(), f.end());
    sizes.push_back(f.size());
  }
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{4096}, stream.size()}) {
    Seen seen;
    FrameMeter meter = Metered(&seen);
    for (size_t at = 0; at < stream.size(); at += piece) {
      size_t n = std::min(piece, stream.size() - at);
      ASSERT_TRUE(meter.Feed(stream.data() + at, n));
      ASSERT_TRUE(meter.Feed(stream.data() + at, 0));
    }
    EXPECT_EQ(seen.starts, sizes) << "piece " << piece;
    EXPECT_EQ(seen.ends, 4) << "piece " << piece;
    EXPECT_FALSE(meter.in_frame());
  }
}

TEST(FrameMeter, SizeIsKnownBeforeTheBodyArrives) {
  std::vector<uint8_t> frame = Frame(1 << 20, 16);
  Seen seen;
  FrameMeter meter = Metered(&seen);
  ASSERT_TRUE(meter.Feed(frame.data(), 64));  // the table and a little body
  ASSERT_EQ(seen.starts.size(), 1u);
  EXPECT_EQ(seen.starts[0], frame.size());
  EXPECT_EQ(seen.ends, 0);
  EXPECT_TRUE(meter.in_frame());
}

TEST(FrameMeter, HugeDeclaredSizesAndSegmentCounts) {
  // One segment of 2^32-1 words: the size is reported as declared.
  uint8_t huge[8] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  Seen seen;
  FrameMeter meter = Metered(&seen);
  ASSERT_TRUE(meter.Feed(huge, sizeof(huge)));
  ASSERT_EQ(seen.starts.size(), 1u);
  EXPECT_EQ(seen.starts[0], 8 + 8 * uint64_t{0xffffffff});
  // 2^32 segments: more than Cap'n Proto takes, reported as unbounded.
  uint8_t many[4] = {0xff, 0xff, 0xff, 0xff};
  Seen seen2;
  FrameMeter meter2 = Metered(&seen2);
  ASSERT_TRUE(meter2.Feed(many, sizeof(many)));
  ASSERT_EQ(seen2.starts.size(), 1u);
  EXPECT_EQ(seen2.starts[0], std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(meter2.Feed(many, sizeof(many)));  // lost: reports nothing more
  EXPECT_EQ(seen2.starts.size(), 1u);
}

TEST(FrameMeter, LookupFramesAreMeasuredInAnyPiecesAmongCapnpOnes) {
  std::string lookup;
  AppendGetRequest("tenant", "a-key", &lookup);
  std::string big;
  AppendBatchGetRequest("", std::vector<std::string>(100, std::string(300, 'k')), &big);
  std::vector<uint8_t> capnp = Frame(10, 64);
  std::vector<uint8_t> stream(lookup.begin(), lookup.end());
  stream.insert(stream.end(), big.begin(), big.end());
  stream.insert(stream.end(), capnp.begin(), capnp.end());
  const std::vector<uint64_t> sizes = {lookup.size(), big.size(), capnp.size()};
  for (size_t piece : {size_t{1}, size_t{5}, size_t{8}, size_t{4096}, stream.size()}) {
    Seen seen;
    FrameMeter meter = Metered(&seen);
    for (size_t at = 0; at < stream.size(); at += piece) {
      ASSERT_TRUE(meter.Feed(stream.data() + at, std::min(piece, stream.size() - at)));
    }
    EXPECT_EQ(seen.starts, sizes) << "piece " << piece;
    EXPECT_EQ(seen.ends, 3) << "piece " << piece;
    EXPECT_FALSE(meter.in_frame());
  }
  // A lookup frame's declared size is known from its 8-byte header.
  uint8_t header[8];
  std::memcpy(header, &kLookupFrameTag, 4);
  const uint32_t body = 0xfffffff0u;
  std::memcpy(header + 4, &body, 4);
  Seen seen;
  FrameMeter meter = Metered(&seen);
  ASSERT_TRUE(meter.Feed(header, sizeof(header)));
  ASSERT_EQ(seen.starts.size(), 1u);
  EXPECT_EQ(seen.starts[0], 8 + uint64_t{body});
}

TEST(FrameMeter, RefusingCallbackStopsFeed) {
  std::vector<uint8_t> frame = Frame(100, 64);
  FrameMeter meter;
  int starts = 0;
  meter.on_start = [&](uint64_t) {
    ++starts;
    return false;
  };
  EXPECT_FALSE(meter.Feed(frame.data(), frame.size()));
  EXPECT_EQ(starts, 1);
}

}  // namespace
}  // namespace shelfmark
