#include "ssdstore/offset_checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ssdstore/offset_record.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

Checkpoint Sample() {
  Checkpoint c;
  c.data_file_size = 1 << 20;
  c.alignment = 4096;
  c.next_seq = 17;
  c.free_extents = {{8192, 4096}, {65536, 4096 * 3}};
  c.entries = {{"default", "a", 0, 4196, 100, 3}, {"t2", "bb", 4096 * 4, 9000, 4000, 12}};
  c.tombstones = {{"default", "gone"}};
  return c;
}

TEST(OffsetCheckpointTest, RoundTrip) {
  const Checkpoint c = Sample();
  Result<Checkpoint> back = DecodeCheckpoint(EncodeCheckpoint(c));
  ASSERT_TRUE(back.ok()) << ErrorCodeName(back.error());
  EXPECT_EQ(*back, c);
  Result<Checkpoint> empty = DecodeCheckpoint(EncodeCheckpoint(Checkpoint{}));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, Checkpoint{});
}

TEST(OffsetCheckpointTest, EveryTruncationAndBitFlipIsCorrupt) {
  const std::string bytes = EncodeCheckpoint(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeCheckpoint(bytes.substr(0, n)).ok()) << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x10);
    EXPECT_FALSE(DecodeCheckpoint(b).ok()) << i;
  }
  EXPECT_EQ(DecodeCheckpoint(bytes + "x").error(), ErrorCode::DATA_CORRUPTED);
}

// A count that claims more items than bytes remain, with a valid CRC, is
// rejected without allocating for it.
TEST(OffsetCheckpointTest, HugeCountWithValidCrcIsCorrupt) {
  std::string bytes = EncodeCheckpoint(Checkpoint{});
  const size_t extent_count_at = 8 + 4 + 8 * 3;
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(bytes.data() + extent_count_at, &huge, 8);
  bytes.resize(bytes.size() - 4);
  const uint32_t crc = Crc32c(bytes);
  bytes.append(reinterpret_cast<const char*>(&crc), 4);
  EXPECT_EQ(DecodeCheckpoint(bytes).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(OffsetCheckpointTest, OtherVersionIsVersionMismatch) {
  std::string bytes = EncodeCheckpoint(Sample());
  const uint32_t version = kCheckpointVersion + 1;
  std::memcpy(bytes.data() + 8, &version, 4);
  bytes.resize(bytes.size() - 4);
  const uint32_t crc = Crc32c(bytes);
  bytes.append(reinterpret_cast<const char*>(&crc), 4);
  EXPECT_EQ(DecodeCheckpoint(bytes).error(), ErrorCode::VERSION_MISMATCH);
}

TEST(OffsetCheckpointTest, FileWriteAndRead) {
  TempDir dir;
  std::unique_ptr<FileIo> io = MakePosixFileIo();
  EXPECT_EQ(ReadCheckpointFile(io.get(), dir.path()).error(), ErrorCode::FILE_NOT_FOUND);
  ASSERT_EQ(WriteCheckpointFile(io.get(), dir.path(), Sample()), ErrorCode::OK);
  Result<Checkpoint> back = ReadCheckpointFile(io.get(), dir.path());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, Sample());
  EXPECT_EQ(ReadFile(dir.Join("kv_cache.meta")), EncodeCheckpoint(Sample()));
  WriteFile(dir.Join("kv_cache.meta"), "garbage");
  EXPECT_EQ(ReadCheckpointFile(io.get(), dir.path()).error(), ErrorCode::DATA_CORRUPTED);
}

}  // namespace
}  // namespace shelfmark
