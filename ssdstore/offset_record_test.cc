#include "ssdstore/offset_record.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace shelfmark {
namespace {

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  // RFC 3720 B.4: 32 bytes of zeros, of 0xFF, and ascending 0..31.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32cTest, HardwareAndPortableAgreeAndChain) {
  std::mt19937_64 rng(7);
  std::string data(10000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t len : {0, 1, 7, 8, 9, 63, 64, 1000, 9999}) {
    for (size_t start : {0, 1, 3}) {
      const std::string_view s = std::string_view(data).substr(start, len);
      EXPECT_EQ(Crc32c(s), Crc32cPortable(s.data(), s.size())) << len << " at " << start;
      for (size_t cut : {size_t{0}, s.size() / 3, s.size()}) {
        EXPECT_EQ(Crc32c(s.substr(cut), Crc32c(s.substr(0, cut))), Crc32c(s));
      }
    }
  }
}

TEST(OffsetRecordTest, SizesAlignTheValue) {
  EXPECT_EQ(RecordValueOffset(1, 1), 4096u);
  EXPECT_EQ(RecordValueOffset(7, 4096 - 40 - 7), 4096u);
  EXPECT_EQ(RecordValueOffset(7, 4096 - 40 - 6), 8192u);
  EXPECT_EQ(RecordTotalSize(3, 5, 100), 4196u);
}

TEST(OffsetRecordTest, EncodeDecodeRoundTrip) {
  const std::string value(5000, 'v');
  const std::string prefix = EncodeRecordPrefix("tenant", "key-1", value, 42);
  ASSERT_EQ(prefix.size(), RecordValueOffset(6, 5));
  Result<RecordHeader> h = DecodeRecordHeader(prefix);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->tenant_len, 6u);
  EXPECT_EQ(h->key_len, 5u);
  EXPECT_EQ(h->value_len, 5000u);
  EXPECT_EQ(h->seq, 42u);
  EXPECT_EQ(h->crc, RecordCrc(*h, "tenant", "key-1", value));
  EXPECT_EQ(prefix.substr(kRecordHeaderSize, 11), "tenantkey-1");
  EXPECT_EQ(prefix.find_first_not_of('\0', kRecordHeaderSize + 11), std::string::npos);
  EXPECT_EQ(VerifyRecord(prefix, value, "tenant", "key-1", 42), ErrorCode::OK);
}

TEST(OffsetRecordTest, VerifyRejectsMismatches) {
  const std::string value = "value bytes";
  const std::string prefix = EncodeRecordPrefix("t", "k", value, 9);
  EXPECT_EQ(VerifyRecord(prefix, value, "t", "k", 10), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(VerifyRecord(prefix, value, "t", "x", 9), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(VerifyRecord(prefix, value, "u", "k", 9), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(VerifyRecord(prefix, "value byte", "t", "k", 9), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(VerifyRecord(prefix.substr(0, 20), value, "t", "k", 9), ErrorCode::DATA_CORRUPTED);
}

TEST(OffsetRecordTest, EveryBitFlipIsDetected) {
  const std::string value = "0123456789abcdef";
  const std::string prefix = EncodeRecordPrefix("ten", "key", value, 3);
  const size_t covered = kRecordHeaderSize + 6;  // header + tenant + key
  for (size_t byte = 0; byte < covered + value.size(); ++byte) {
    if (byte >= 36 && byte < 40) continue;  // reserved: must be 0, checked separately
    for (int bit = 0; bit < 8; ++bit) {
      std::string p = prefix;
      std::string v = value;
      char& c = byte < covered ? p[byte] : v[byte - covered];
      c = static_cast<char>(c ^ (1 << bit));
      EXPECT_EQ(VerifyRecord(p, v, "ten", "key", 3), ErrorCode::DATA_CORRUPTED)
          << "byte " << byte << " bit " << bit;
    }
  }
  std::string reserved = prefix;
  reserved[37] = 1;
  EXPECT_EQ(VerifyRecord(reserved, value, "ten", "key", 3), ErrorCode::DATA_CORRUPTED);
}

TEST(OffsetRecordTest, DecodeRejectsBadHeaders) {
  std::string prefix = EncodeRecordPrefix("t", "k", "v", 1);
  EXPECT_EQ(DecodeRecordHeader(prefix.substr(0, kRecordHeaderSize - 1)).error(),
            ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(DecodeRecordHeader(std::string(kRecordHeaderSize, '\0')).error(),
            ErrorCode::DATA_CORRUPTED);
  std::string bad_key_len = prefix;
  bad_key_len[12] = 0;  // key_len 0
  EXPECT_EQ(DecodeRecordHeader(bad_key_len).error(), ErrorCode::DATA_CORRUPTED);
  std::string huge_key = prefix;
  huge_key[14] = 1;  // key_len 65537 > kMaxKeyLength
  EXPECT_EQ(DecodeRecordHeader(huge_key).error(), ErrorCode::DATA_CORRUPTED);
  std::string flags = prefix;
  flags[4] = 1;
  EXPECT_EQ(DecodeRecordHeader(flags).error(), ErrorCode::DATA_CORRUPTED);
}

}  // namespace
}  // namespace shelfmark
