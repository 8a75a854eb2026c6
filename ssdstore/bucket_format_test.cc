#include "ssdstore/bucket_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace shelfmark {
namespace {

BucketMeta Sample() {
  BucketMeta meta;
  meta.bucket_id = 7;
  meta.batch_first_id = 6;
  meta.batch_count = 3;
  meta.entries.push_back({"default", "k1", 2, 10, 0x0123456789abcdefull});
  meta.entries.push_back({"tenant-b", std::string("k\0x", 3), 15, 0, 0});
  meta.entries.push_back({"t", std::string(4096, 'z'), 15 + 4096, 100, ~0ull});
  meta.bucket_size = 15 + 4096 + 100;
  return meta;
}

TEST(BucketFormat, RoundTrip) {
  const BucketMeta meta = Sample();
  Result<BucketMeta> back = DecodeBucketMeta(EncodeBucketMeta(meta));
  ASSERT_TRUE(back.ok()) << ErrorCodeName(back.error());
  EXPECT_EQ(*back, meta);
}

TEST(BucketFormat, EmptyEntriesRoundTrip) {
  BucketMeta meta;
  meta.bucket_id = 1;
  meta.batch_first_id = 1;
  Result<BucketMeta> back = DecodeBucketMeta(EncodeBucketMeta(meta));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, meta);
}

TEST(BucketFormat, EveryTruncationIsCorrupted) {
  const std::string bytes = EncodeBucketMeta(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeBucketMeta(bytes.substr(0, n)).error(), ErrorCode::DATA_CORRUPTED) << n;
  }
  EXPECT_EQ(DecodeBucketMeta(bytes + "x").error(), ErrorCode::DATA_CORRUPTED);
}

TEST(BucketFormat, EveryBitFlipIsCorrupted) {
  const std::string bytes = EncodeBucketMeta(Sample());
  for (size_t i = 0; i < bytes.size(); i += (i < 64 ? 1 : 37)) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_EQ(DecodeBucketMeta(bad).error(), ErrorCode::DATA_CORRUPTED) << i << "/" << bit;
    }
  }
}

// Re-seals a tampered body with a valid checksum, so the field checks run.
std::string Reseal(std::string body_with_sum);

TEST(BucketFormat, OtherVersionIsVersionMismatch) {
  std::string bytes = EncodeBucketMeta(Sample());
  EXPECT_EQ(BucketMetaVersion(bytes), kBucketMetaVersion);
  for (char version : {1, 3}) {  // older (no checksums) and newer
    bytes[8] = version;  // version field
    EXPECT_EQ(DecodeBucketMeta(Reseal(bytes)).error(), ErrorCode::VERSION_MISMATCH);
    EXPECT_EQ(BucketMetaVersion(bytes), static_cast<uint32_t>(version));
  }
  EXPECT_EQ(BucketMetaVersion("SMBKMET"), 0u);
  EXPECT_EQ(BucketMetaVersion("XMBKMETA\x02\0\0\0"), 0u);
}

TEST(BucketFormat, SealedButInvalidFieldsAreCorrupted) {
  {  // entry value beyond bucket_size
    BucketMeta meta = Sample();
    meta.bucket_size -= 1;
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
  }
  {  // value offset inside its own key
    BucketMeta meta = Sample();
    meta.entries[0].offset = 1;
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
  }
  {  // offset + size overflowing 64 bits
    BucketMeta meta = Sample();
    meta.entries[0].data_size = ~0ull;
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
  }
  {  // bucket outside its batch, empty batch
    BucketMeta meta = Sample();
    meta.batch_first_id = 8;
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
    meta = Sample();
    meta.batch_count = 0;
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
  }
  {  // empty key, empty tenant, oversize key
    BucketMeta meta = Sample();
    meta.entries[0].key.clear();
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
    meta = Sample();
    meta.entries[0].tenant.clear();
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
    meta = Sample();
    meta.entries[2].key.push_back('z');
    meta.entries[2].offset += 1;
    meta.bucket_size += 1;
    EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(meta)).error(), ErrorCode::DATA_CORRUPTED);
  }
}

TEST(BucketFormat, HugeCountDoesNotAllocate) {
  std::string bytes = EncodeBucketMeta(Sample());
  const uint32_t count = 0xffffffffu;
  std::memcpy(bytes.data() + 12, &count, 4);  // little-endian host
  EXPECT_EQ(DecodeBucketMeta(Reseal(bytes)).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(BucketFormat, RandomInputNeverCrashes) {
  std::mt19937_64 rng(42);
  const std::string good = EncodeBucketMeta(Sample());
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    if (rng() % 2 == 0) bytes.resize(rng() % (bytes.size() + 1));
    Result<BucketMeta> r = DecodeBucketMeta(Reseal(bytes.size() >= 8 ? bytes : good));
    if (r.ok()) {
      EXPECT_EQ(DecodeBucketMeta(EncodeBucketMeta(*r)).ok(), true);
    }
  }
}

}  // namespace
}  // namespace shelfmark

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shelfmark {
namespace {
std::string Reseal(std::string bytes) {
  const size_t body = bytes.size() - 8;
  const uint64_t sum = XXH3_64bits(bytes.data(), body);
  std::memcpy(bytes.data() + body, &sum, 8);  // little-endian host
  return bytes;
}
}  // namespace
}  // namespace shelfmark
