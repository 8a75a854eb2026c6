#include "ssdstore/offset_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ssdstore/fault_file_io.h"
#include "ssdstore/offset_record.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

using testing::ReadFile;
using testing::TempDir;
using Op = FaultyFileIo::Op;

// Distinct bytes per (key, size) so a read of the wrong record shows.
std::string Pattern(const std::string& key, size_t size) {
  std::string v(size, '\0');
  uint32_t x = Crc32c(key) | 1;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<char>(x >> 16);
  }
  return v;
}

OffsetBackendOptions Options(const TempDir& dir, OffsetPersistMode mode,
                             uint64_t capacity = 4 << 20) {
  OffsetBackendOptions o;
  o.root = dir.path();
  o.capacity_bytes = capacity;
  o.persist_mode = mode;
  return o;
}

std::unique_ptr<OffsetBackend> MustOpen(FileIo* io, const OffsetBackendOptions& o) {
  Result<std::unique_ptr<OffsetBackend>> b = OffsetBackend::Open(io, o);
  EXPECT_TRUE(b.ok()) << ErrorCodeName(b.error());
  return b.ok() ? std::move(*b) : nullptr;
}

// Writes one object per call; returns the batch's error.
ErrorCode Put(OffsetBackend* b, const std::string& key, const std::string& value,
              const std::string& tenant = "") {
  return b->WriteBatch({StoredObject{tenant, key, value}}).error();
}

void ExpectValue(OffsetBackend* b, const std::string& key, const std::string& value) {
  std::string out;
  ASSERT_EQ(b->Read("", key, value.size(), &out), ErrorCode::OK) << key;
  EXPECT_EQ(out, value) << key;
}

void ExpectMissing(OffsetBackend* b, const std::string& key) {
  std::string out;
  EXPECT_EQ(b->Read("", key, 0, &out), ErrorCode::OBJECT_NOT_FOUND) << key;
}

TEST(OffsetBackendTest, RoundTripsManySizes) {
  TempDir dir;
  auto io = MakePosixFileIo();
  auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kDisabled, 16 << 20));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "offset_allocator_storage_backend");
  EXPECT_EQ(std::filesystem::file_size(dir.Join("kv_cache.data")), 16u << 20);
  const std::vector<size_t> sizes = {0, 1, 100, 4095, 4096, 4097, 65536, 100000, 1 << 20};
  std::vector<StoredObject> batch;
  std::vector<std::string> values;
  values.reserve(sizes.size());
  for (size_t s : sizes) values.push_back(Pattern("k" + std::to_string(s), s));
  for (size_t i = 0; i < sizes.size(); ++i) {
    batch.push_back({"", "k" + std::to_string(sizes[i]), values[i]});
  }
  Result<std::vector<StoredLocation>> locs = b->WriteBatch(batch);
  ASSERT_TRUE(locs.ok());
  ASSERT_EQ(locs->size(), sizes.size());
  const std::string data = ReadFile(dir.Join("kv_cache.data"));
  for (size_t i = 0; i < sizes.size(); ++i) {
    const StoredLocation& l = (*locs)[i];
    EXPECT_EQ(l.tenant, "default");
    EXPECT_EQ(l.bucket_id, 0);
    EXPECT_EQ(l.offset % 4096, 0);
    EXPECT_EQ(static_cast<size_t>(l.data_size), sizes[i]);
    EXPECT_EQ(data.substr(l.offset, sizes[i]), values[i]);  // offset names the value bytes
    EXPECT_EQ(l.checksum, std::optional<uint64_t>(ValueChecksum(values[i])));
    ExpectValue(b.get(), batch[i].key, values[i]);
  }
  EXPECT_EQ(b->object_count(), sizes.size());
  EXPECT_EQ(b->List().size(), sizes.size());
  std::string out;
  EXPECT_EQ(b->Read("", "k100", 99, &out), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(b->Read("other", "k100", 0, &out), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(b->Read("default", "k100", 0, &out), ErrorCode::OK);
  // Replace and remove.
  const uint64_t used = b->used_bytes();
  ASSERT_EQ(Put(b.get(), "k100", "new"), ErrorCode::OK);
  ExpectValue(b.get(), "k100", "new");
  EXPECT_EQ(b->used_bytes(), used);  // the old record's space was freed
  EXPECT_EQ(b->Remove("", "k100"), ErrorCode::OK);
  ExpectMissing(b.get(), "k100");
  EXPECT_EQ(b->Remove("", "k100"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(b->object_count(), sizes.size() - 1);
  // Bad keys and tenants; an object larger than the file.
  EXPECT_EQ(Put(b.get(), "", "v"), ErrorCode::INVALID_KEY);
  EXPECT_EQ(Put(b.get(), "k", "v", std::string(300, 't')), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Put(b.get(), "big", std::string(17 << 20, 'x')), ErrorCode::BUFFER_OVERFLOW);
  EXPECT_EQ(b->Close(), ErrorCode::OK);
  EXPECT_EQ(b->Read("", "k1", 0, &out), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  EXPECT_EQ(Put(b.get(), "k1", "v"), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
}

TEST(OffsetBackendTest, BadOptionsAreInvalidParams) {
  TempDir dir;
  auto io = MakePosixFileIo();
  OffsetBackendOptions o = Options(dir, OffsetPersistMode::kDisabled);
  o.capacity_bytes = 100;
  EXPECT_EQ(OffsetBackend::Open(io.get(), o).error(), ErrorCode::INVALID_PARAMS);
  o = Options(dir, OffsetPersistMode::kDisabled);
  o.low_watermark = 0.9;
  o.high_watermark = 0.5;
  EXPECT_EQ(OffsetBackend::Open(io.get(), o).error(), ErrorCode::INVALID_PARAMS);
  o = Options(dir, OffsetPersistMode::kDisabled);
  o.root = "relative/path";
  EXPECT_EQ(OffsetBackend::Open(io.get(), o).error(), ErrorCode::INVALID_PARAMS);
}

TEST(OffsetBackendTest, DisabledRestartIsEmpty) {
  TempDir dir;
  auto io = MakePosixFileIo();
  {
    auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kStrict));
    ASSERT_EQ(Put(b.get(), "a", "value"), ErrorCode::OK);
    ASSERT_EQ(b->Close(), ErrorCode::OK);
  }
  ASSERT_TRUE(std::filesystem::exists(dir.Join("kv_cache.meta")));
  {
    auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kDisabled));
    EXPECT_EQ(b->object_count(), 0u);
    ExpectMissing(b.get(), "a");
    EXPECT_FALSE(std::filesystem::exists(dir.Join("kv_cache.meta")));
  }
  auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kStrict));
  EXPECT_EQ(b->object_count(), 0u);
  EXPECT_FALSE(b->recovery_report().checkpoint_found);
}

TEST(OffsetBackendTest, StrictSurvivesRestartAndPowerCut) {
  TempDir dir;
  FaultyFileIo io;
  auto b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  std::vector<std::string> keys;
  for (int batch = 0; batch < 5; ++batch) {
    std::vector<StoredObject> objs;
    std::vector<std::string> values;
    values.reserve(4);
    for (int i = 0; i < 4; ++i) {
      keys.push_back("b" + std::to_string(batch) + "-" + std::to_string(i));
      values.push_back(Pattern(keys.back(), 3000 * (i + 1)));
      objs.push_back({"", keys.back(), values.back()});
    }
    ASSERT_TRUE(b->WriteBatch(objs).ok());
  }
  ASSERT_EQ(b->Remove("", "b0-0"), ErrorCode::OK);
  ASSERT_EQ(io.PowerCut(), ErrorCode::OK);
  b.reset();
  io.Restart();
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  EXPECT_EQ(b->recovery_report().recovered, keys.size() - 1);
  EXPECT_EQ(b->recovery_report().dropped, 0u);
  ExpectMissing(b.get(), "b0-0");
  for (size_t i = 1; i < keys.size(); ++i) {
    ExpectValue(b.get(), keys[i], Pattern(keys[i], 3000 * (i % 4 + 1)));
  }
  // Listed (re-reported) with the checksum recovery computed from the bytes.
  for (const StoredLocation& l : b->List()) {
    const size_t i = static_cast<size_t>(std::find(keys.begin(), keys.end(), l.key) - keys.begin());
    ASSERT_LT(i, keys.size()) << l.key;
    EXPECT_EQ(l.checksum,
              std::optional<uint64_t>(ValueChecksum(Pattern(l.key, 3000 * (i % 4 + 1)))));
  }
  // New writes after recovery neither clobber recovered records nor reuse sequences.
  ASSERT_EQ(Put(b.get(), "after", Pattern("after", 5000)), ErrorCode::OK);
  ASSERT_EQ(io.PowerCut(), ErrorCode::OK);
  b.reset();
  io.Restart();
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  EXPECT_EQ(b->object_count(), keys.size());
  ExpectValue(b.get(), "after", Pattern("after", 5000));
  ExpectValue(b.get(), "b4-3", Pattern("b4-3", 12000));
}

TEST(OffsetBackendTest, RelaxedKeepsCheckpointedObjectsOnly) {
  TempDir dir;
  FaultyFileIo io;
  auto b = MustOpen(&io, Options(dir, OffsetPersistMode::kRelaxed));
  for (int i = 0; i < 5; ++i) {
    const std::string k = "old" + std::to_string(i);
    ASSERT_EQ(Put(b.get(), k, Pattern(k, 6000)), ErrorCode::OK);
  }
  ASSERT_EQ(b->WriteCheckpoint(), ErrorCode::OK);
  for (int i = 0; i < 5; ++i) {
    const std::string k = "new" + std::to_string(i);
    ASSERT_EQ(Put(b.get(), k, Pattern(k, 6000)), ErrorCode::OK);
  }
  ASSERT_EQ(io.PowerCut(), ErrorCode::OK);
  b.reset();
  io.Restart();
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kRelaxed));
  EXPECT_EQ(b->object_count(), 5u);
  for (int i = 0; i < 5; ++i) {
    ExpectValue(b.get(), "old" + std::to_string(i), Pattern("old" + std::to_string(i), 6000));
    ExpectMissing(b.get(), "new" + std::to_string(i));
  }
  // Close() checkpoints: a clean restart keeps everything.
  ASSERT_EQ(Put(b.get(), "late", "late value"), ErrorCode::OK);
  ASSERT_EQ(b->Close(), ErrorCode::OK);
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kRelaxed));
  ExpectValue(b.get(), "late", "late value");
  EXPECT_EQ(b->object_count(), 6u);
}

// The background thread checkpoints every interval (5 s, the minimum) without
// a Close(): a crash afterwards keeps the object.
TEST(OffsetBackendTest, RelaxedCheckpointsInTheBackground) {
  TempDir dir;
  FaultyFileIo io;
  OffsetBackendOptions o = Options(dir, OffsetPersistMode::kRelaxed);
  o.persist_interval_seconds = 1;  // raised to 5
  auto b = MustOpen(&io, o);
  ASSERT_EQ(Put(b.get(), "bg", Pattern("bg", 5000)), ErrorCode::OK);
  // The checkpoint's last step (a relaxed Open syncs no directory); calls are
  // serialised, so a counted SyncDir has finished.
  ASSERT_TRUE(testing::WaitFor([&] { return io.CallCount(Op::kSyncDir) >= 1; }, 120'000));
  ASSERT_EQ(io.PowerCut(), ErrorCode::OK);
  b.reset();
  io.Restart();
  b = MustOpen(&io, o);
  ExpectValue(b.get(), "bg", Pattern("bg", 5000));
}

// A checkpointed record whose space was reused after the checkpoint (and the
// new bytes reached the disk) is dropped on recovery, never returned corrupt.
TEST(OffsetBackendTest, RelaxedDropsRecordsOverwrittenAfterCheckpoint) {
  TempDir dir;
  auto io = MakePosixFileIo();
  auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kRelaxed));
  ASSERT_EQ(Put(b.get(), "keep", Pattern("keep", 5000)), ErrorCode::OK);
  ASSERT_EQ(Put(b.get(), "victim", Pattern("victim", 5000)), ErrorCode::OK);
  const int64_t victim_offset = b->List()[1].offset;
  ASSERT_EQ(b->WriteCheckpoint(), ErrorCode::OK);
  ASSERT_EQ(b->Remove("", "victim"), ErrorCode::OK);
  ASSERT_EQ(Put(b.get(), "intruder", Pattern("intruder", 5000)), ErrorCode::OK);
  ASSERT_EQ(b->List()[1].offset, victim_offset);  // the space was reused
  b.reset();  // crash: no checkpoint since (the bytes are in the page cache)
  b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kRelaxed));
  EXPECT_EQ(b->recovery_report().recovered, 1u);
  EXPECT_EQ(b->recovery_report().dropped, 1u);
  EXPECT_EQ(b->recovery_report().tombstones, 0u);
  ExpectValue(b.get(), "keep", Pattern("keep", 5000));
  ExpectMissing(b.get(), "victim");
  ExpectMissing(b.get(), "intruder");
  // The dropped record's space is free again.
  EXPECT_EQ(b->used_bytes(), 12288u);  // "keep" alone: 4 KiB prefix + 5000 bytes
}

TEST(OffsetBackendTest, BitFlipInRecordIsDropped) {
  TempDir dir;
  auto io = MakePosixFileIo();
  auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kStrict));
  for (const char* k : {"a", "b", "c"}) ASSERT_EQ(Put(b.get(), k, Pattern(k, 7000)), ErrorCode::OK);
  const int64_t b_value = b->List()[1].offset;
  ASSERT_EQ(b->Close(), ErrorCode::OK);
  testing::FlipBits(dir.Join("kv_cache.data"), b_value + 1234, 0x04);
  b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kStrict));
  EXPECT_EQ(b->recovery_report().dropped, 1u);
  StorageRecovery r = b->recovery();
  EXPECT_EQ(r.records_dropped, 1u);
  ASSERT_EQ(r.reasons.size(), 1u);
  EXPECT_EQ(r.reasons[0].rfind("default/b at ", 0), 0u) << r.reasons[0];
  EXPECT_NE(r.reasons[0].find(": record does not verify (header, key or CRC-32C)"),
            std::string::npos)
      << r.reasons[0];
  ExpectValue(b.get(), "a", Pattern("a", 7000));
  ExpectMissing(b.get(), "b");
  ExpectValue(b.get(), "c", Pattern("c", 7000));
}

// Under a running backend every read verifies the value's checksum: a
// flipped byte or a data file cut short is never served. The record is
// dropped (DATA_CORRUPTED once, OBJECT_NOT_FOUND after), counted, and no
// evict callback runs (the caller tells the master); the page-cache path
// never serves it and leaves the drop to ReadValue. A checksum recovery
// computes verifies the same way after a restart.
TEST(OffsetBackendTest, ARecordThatDoesNotReadBackIntactIsDroppedNeverServed) {
  TempDir dir;
  auto io = MakePosixFileIo();
  const OffsetBackendOptions o = Options(dir, OffsetPersistMode::kStrict);
  auto b = MustOpen(io.get(), o);
  int callbacks = 0;
  b->SetEvictCallback([&](std::string_view, std::string_view) { ++callbacks; });
  for (const char* k : {"a", "b", "c", "d"}) {
    ASSERT_EQ(Put(b.get(), k, Pattern(k, 7000)), ErrorCode::OK);
  }
  const std::vector<StoredLocation> at = b->List();  // in write order
  testing::FlipBits(dir.Join("kv_cache.data"), at[1].offset + 1234);
  std::string out = "untouched";
  DiskPlace place;
  bool served = true;
  EXPECT_EQ(b->ReadValueCached("", "b", 0, &out, &place, &served), ErrorCode::OK);
  EXPECT_FALSE(served);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(b->object_count(), 4u) << "the page-cache path dropped a record";
  EXPECT_EQ(b->Read("", "b", 0, &out), ErrorCode::DATA_CORRUPTED);
  EXPECT_TRUE(out.empty());
  ExpectMissing(b.get(), "b");
  EXPECT_EQ(b->corrupt_records(), 1u);
  EXPECT_EQ(callbacks, 0);
  ExpectValue(b.get(), "a", Pattern("a", 7000));
  ExpectValue(b.get(), "c", Pattern("c", 7000));
  // The file cut inside d's value: d reads short.
  std::filesystem::resize_file(dir.Join("kv_cache.data"), static_cast<uint64_t>(at[3].offset + 10));
  EXPECT_EQ(b->Read("", "d", 0, &out), ErrorCode::DATA_CORRUPTED);
  ExpectMissing(b.get(), "d");
  EXPECT_EQ(b->corrupt_records(), 2u);
  // After a restart (c still listed), a flip in c is caught by the
  // checksum recovery computed.
  ASSERT_EQ(b->Close(), ErrorCode::OK);
  b = MustOpen(io.get(), o);
  ASSERT_NE(b, nullptr);
  ExpectValue(b.get(), "c", Pattern("c", 7000));
  testing::FlipBits(dir.Join("kv_cache.data"), b->List().back().offset + 17);
  EXPECT_EQ(b->Read("", "c", 0, &out), ErrorCode::DATA_CORRUPTED);
  ExpectValue(b.get(), "a", Pattern("a", 7000));
}

TEST(OffsetBackendTest, CorruptCheckpointStartsEmpty) {
  TempDir dir;
  auto io = MakePosixFileIo();
  auto b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kStrict));
  ASSERT_EQ(Put(b.get(), "a", "x"), ErrorCode::OK);
  ASSERT_EQ(b->Close(), ErrorCode::OK);
  testing::WriteFile(dir.Join("kv_cache.meta"), "SMKVMETA torn");
  b = MustOpen(io.get(), Options(dir, OffsetPersistMode::kStrict));
  EXPECT_TRUE(b->recovery_report().checkpoint_corrupt);
  EXPECT_EQ(b->object_count(), 0u);
  StorageRecovery r = b->recovery();
  EXPECT_TRUE(r.checkpoint_corrupt);
  EXPECT_EQ(r.reasons, (std::vector<std::string>{"kv_cache.meta: does not decode"}));
  EXPECT_NE(r.Describe().find("corrupt checkpoint (started empty)"), std::string::npos);
}

// A power cut after the temp file is written but before the rename is
// durable leaves the previous checkpoint; the failed batch was never visible.
TEST(OffsetBackendTest, TornCheckpointUsesThePreviousOne) {
  TempDir dir;
  FaultyFileIo io;
  auto b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  ASSERT_EQ(Put(b.get(), "first", Pattern("first", 9000)), ErrorCode::OK);
  io.FailNext(Op::kRename, 1, ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(Put(b.get(), "second", Pattern("second", 9000)), ErrorCode::FILE_WRITE_FAIL);
  ExpectMissing(b.get(), "second");
  io.FailNext(Op::kSyncDir, 1, ErrorCode::FILE_WRITE_FAIL);  // renamed, not durable
  EXPECT_EQ(Put(b.get(), "third", Pattern("third", 9000)), ErrorCode::FILE_WRITE_FAIL);
  ExpectMissing(b.get(), "third");
  ASSERT_EQ(io.PowerCut(), ErrorCode::OK);
  b.reset();
  io.Restart();
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  EXPECT_EQ(b->object_count(), 1u);
  ExpectValue(b.get(), "first", Pattern("first", 9000));
  ExpectMissing(b.get(), "second");
  ExpectMissing(b.get(), "third");
}

TEST(OffsetBackendTest, StrictDiskFullOrFailedSyncFailsTheBatch) {
  TempDir dir;
  FaultyFileIo io;
  auto b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  ASSERT_EQ(Put(b.get(), "ok", Pattern("ok", 10000)), ErrorCode::OK);
  const uint64_t used = b->used_bytes();
  io.SetSpaceLimit(6000);
  EXPECT_EQ(b->WriteBatch({{"", "full1", Pattern("full1", 4000)}, {"", "full2", "x"}}).error(),
            ErrorCode::FILE_WRITE_FAIL);
  io.ClearSpaceLimit();
  io.FailNext(Op::kFDataSync, 1, ErrorCode::FILE_WRITE_FAIL);
  EXPECT_EQ(Put(b.get(), "nosync", "v"), ErrorCode::FILE_WRITE_FAIL);
  for (const char* k : {"full1", "full2", "nosync"}) ExpectMissing(b.get(), k);
  EXPECT_EQ(b->used_bytes(), used);  // failed batches gave their space back
  EXPECT_EQ(b->object_count(), 1u);
  ASSERT_EQ(Put(b.get(), "later", "fine"), ErrorCode::OK);
  ASSERT_EQ(io.PowerCut(), ErrorCode::OK);
  b.reset();
  io.Restart();
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  EXPECT_EQ(b->object_count(), 2u);
  ExpectValue(b.get(), "ok", Pattern("ok", 10000));
  ExpectValue(b.get(), "later", "fine");
}

TEST(OffsetBackendTest, FifoEvictionTellsBeforeReuseAndStopsAtLowWatermark) {
  TempDir dir;
  auto io = MakePosixFileIo();
  OffsetBackendOptions o = Options(dir, OffsetPersistMode::kDisabled, 10 * 8192);
  o.high_watermark = 0.8;  // 8 records of 8 KiB
  o.low_watermark = 0.5;   // 5 records of 8 KiB
  auto b = MustOpen(io.get(), o);
  std::vector<std::string> evicted;
  std::map<std::string, int64_t> value_offset;
  b->SetEvictCallback([&](std::string_view tenant, std::string_view key) {
    EXPECT_EQ(tenant, "default");
    evicted.emplace_back(key);
    EXPECT_EQ(b->used_bytes(), 8u * 8192);  // nothing freed before the master is told
    // Told before reuse: the evicted record's bytes are still on disk.
    const std::string data = ReadFile(dir.Join("kv_cache.data"));
    EXPECT_EQ(data.substr(value_offset[std::string(key)], 4096), Pattern(std::string(key), 4096));
  });
  for (int i = 0; i < 8; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(Put(b.get(), k, Pattern(k, 4096)), ErrorCode::OK);
    value_offset[k] = b->List().back().offset;
  }
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(b->used_bytes(), 8u * 8192);
  ASSERT_EQ(Put(b.get(), "k8", Pattern("k8", 4096)), ErrorCode::OK);
  // 8 + 1 > 8 (high): evict oldest first until 1 more fits under 5 (low).
  EXPECT_EQ(evicted, (std::vector<std::string>{"k0", "k1", "k2", "k3"}));
  EXPECT_EQ(b->object_count(), 5u);
  for (int i = 0; i < 4; ++i) ExpectMissing(b.get(), "k" + std::to_string(i));
  for (int i = 4; i < 9; ++i) {
    const std::string k = "k" + std::to_string(i);
    ExpectValue(b.get(), k, Pattern(k, 4096));
  }
}

TEST(OffsetBackendTest, KeyLimitEvictsOldestFirst) {
  TempDir dir;
  auto io = MakePosixFileIo();
  OffsetBackendOptions o = Options(dir, OffsetPersistMode::kDisabled);
  o.max_objects = 3;
  auto b = MustOpen(io.get(), o);
  std::vector<std::string> evicted;
  b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
  for (const char* k : {"a", "b", "c"}) ASSERT_EQ(Put(b.get(), k, k), ErrorCode::OK);
  ASSERT_EQ(Put(b.get(), "b", "b2"), ErrorCode::OK);  // a replacement adds no object
  EXPECT_TRUE(evicted.empty());
  ASSERT_TRUE(b->WriteBatch({{"", "d", "d"}, {"", "e", "e"}}).ok());
  EXPECT_EQ(evicted, (std::vector<std::string>{"a", "c"}));  // "b" was rewritten: newer
  EXPECT_EQ(b->object_count(), 3u);
  ExpectValue(b.get(), "b", "b2");
  EXPECT_EQ(b->WriteBatch({{"", "1", "1"}, {"", "2", "2"}, {"", "3", "3"}, {"", "4", "4"}}).error(),
            ErrorCode::BUFFER_OVERFLOW);
}

TEST(OffsetBackendTest, OptionsFromTheEnvironment) {
  TempDir dir;
  const std::map<std::string, std::string> env = {
      {"MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", "offset_allocator_storage_backend"},
      {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", dir.path()},
      {"MOONCAKE_OFFSET_PERSIST_MODE", "relaxed"},
      {"MOONCAKE_OFFSET_PERSIST_INTERVAL_SECONDS", "60"},
      {"MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "8MiB"},
      {"MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT", "1000"},
  };
  std::string error;
  Result<StorageConfig> config = ParseStorageConfig(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      &error);
  ASSERT_TRUE(config.ok()) << error;
  const OffsetBackendOptions o = OffsetOptionsFromConfig(*config);
  EXPECT_EQ(o.root, dir.path());
  EXPECT_EQ(o.capacity_bytes, 8u << 20);
  EXPECT_EQ(o.persist_mode, OffsetPersistMode::kRelaxed);
  EXPECT_EQ(o.persist_interval_seconds, 60u);
  EXPECT_EQ(o.max_objects, 1000u);
  auto io = MakePosixFileIo();
  auto b = MustOpen(io.get(), o);
  EXPECT_EQ(b->capacity(), 8u << 20);
}

// Readers racing eviction and reuse get the right bytes or OBJECT_NOT_FOUND.
TEST(OffsetBackendTest, ReadsRacingEvictionReturnRightBytesOrNotFound) {
  TempDir dir;
  auto io = MakePosixFileIo();
  OffsetBackendOptions o = Options(dir, OffsetPersistMode::kDisabled, 16 * 8192);
  o.high_watermark = 0.9;
  o.low_watermark = 0.6;
  auto b = MustOpen(io.get(), o);
  std::atomic<int> written{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> hits{0}, misses{0}, wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      uint32_t x = 17 + r;
      while (!done.load()) {
        const int upto = written.load();
        if (upto == 0) continue;
        x = x * 1103515245u + 12345u;
        const std::string k = "k" + std::to_string((x >> 8) % upto);
        std::string out;
        const ErrorCode rc = b->Read("", k, 0, &out);
        if (rc == ErrorCode::OK) {
          (out == Pattern(k, 4096) ? hits : wrong)++;
        } else {
          (rc == ErrorCode::OBJECT_NOT_FOUND ? misses : wrong)++;
        }
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(Put(b.get(), k, Pattern(k, 4096)), ErrorCode::OK);
    written.store(i + 1);
  }
  done.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0u);
  ExpectMissing(b.get(), "k0");
  ExpectValue(b.get(), "k1999", Pattern("k1999", 4096));
}

// A FileIo over real files whose next PRead, once armed, waits until
// released, so a test can hold a read in flight.
class GatedReadIo final : public FileIo {
 public:
  void Arm() {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = true;
  }
  void WaitUntilBlocked() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return blocked_; });
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  Result<int> Open(const std::string& p, int f) override { return base_->Open(p, f); }
  ErrorCode Close(int fd) override { return base_->Close(fd); }
  ErrorCode PRead(int fd, void* buf, uint64_t len, uint64_t off) override {
    std::unique_lock<std::mutex> l(mu_);
    if (armed_) {
      armed_ = false;
      blocked_ = true;
      cv_.notify_all();
      cv_.wait(l, [&] { return released_; });
    }
    l.unlock();
    return base_->PRead(fd, buf, len, off);
  }
  ErrorCode PWrite(int fd, const void* b, uint64_t n, uint64_t o) override {
    return base_->PWrite(fd, b, n, o);
  }
  ErrorCode PWriteV(int fd, std::span<const iovec> iov, uint64_t o) override {
    return base_->PWriteV(fd, iov, o);
  }
  ErrorCode Fallocate(int fd, uint64_t o, uint64_t n) override {
    return base_->Fallocate(fd, o, n);
  }
  ErrorCode FDataSync(int fd) override { return base_->FDataSync(fd); }
  ErrorCode FSync(int fd) override { return base_->FSync(fd); }
  Result<uint64_t> FileSize(int fd) override { return base_->FileSize(fd); }
  ErrorCode Truncate(int fd, uint64_t n) override { return base_->Truncate(fd, n); }
  ErrorCode Rename(const std::string& a, const std::string& b) override {
    return base_->Rename(a, b);
  }
  ErrorCode Remove(const std::string& p) override { return base_->Remove(p); }
  ErrorCode SyncDir(const std::string& d) override { return base_->SyncDir(d); }
  Result<std::vector<std::string>> List(const std::string& d) override { return base_->List(d); }

 private:
  std::unique_ptr<FileIo> base_ = MakePosixFileIo();
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool blocked_ = false;
  bool released_ = false;
};

// An evicted record's space is not reused while a read of it is in flight;
// the read returns the old bytes and the space is freed when it finishes.
TEST(OffsetBackendTest, InFlightReadDefersReuseOfEvictedSpace) {
  TempDir dir;
  GatedReadIo io;
  OffsetBackendOptions o = Options(dir, OffsetPersistMode::kDisabled, 4 * 8192);
  o.high_watermark = 1.0;
  o.low_watermark = 1.0;
  auto b = MustOpen(&io, o);
  for (int i = 0; i < 4; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(Put(b.get(), k, Pattern(k, 4096)), ErrorCode::OK);
  }
  const int64_t k0_offset = b->List().front().offset;
  io.Arm();
  std::string out;
  std::thread reader([&] { EXPECT_EQ(b->Read("", "k0", 4096, &out), ErrorCode::OK); });
  io.WaitUntilBlocked();
  // The file is full: k4 evicts k0 (pinned by the read) and then k1 for space.
  std::vector<std::string> evicted;
  b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
  ASSERT_EQ(Put(b.get(), "k4", Pattern("k4", 4096)), ErrorCode::OK);
  EXPECT_EQ(evicted, (std::vector<std::string>{"k0", "k1"}));
  EXPECT_NE(b->List().back().offset, k0_offset);
  EXPECT_EQ(b->used_bytes(), 4u * 8192);  // k0's space still held by the read
  io.Release();
  reader.join();
  EXPECT_EQ(out, Pattern("k0", 4096));
  EXPECT_EQ(b->used_bytes(), 3u * 8192);  // freed when the read finished
  ASSERT_EQ(Put(b.get(), "k5", Pattern("k5", 4096)), ErrorCode::OK);
  EXPECT_EQ(b->List().back().offset, k0_offset);  // now reused
  ExpectValue(b.get(), "k5", Pattern("k5", 4096));
}

TEST(OffsetBackendTest, TransientOpenErrorFailsWithoutDeleting) {
  TempDir dir;
  FaultyFileIo io;
  auto b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  ASSERT_EQ(Put(b.get(), "a", Pattern("a", 5000)), ErrorCode::OK);
  ASSERT_EQ(b->Close(), ErrorCode::OK);
  b.reset();
  const std::string meta = ReadFile(dir.Join("kv_cache.meta"));
  const std::string data = ReadFile(dir.Join("kv_cache.data"));
  // The data file cannot be opened (EACCES), then the meta file (EIO), then
  // a record cannot be read back (EIO): each fails Open.
  io.FailNext(Op::kOpen, 1, ErrorCode::FILE_OPEN_FAIL, EACCES);
  EXPECT_EQ(OffsetBackend::Open(&io, Options(dir, OffsetPersistMode::kStrict)).error(),
            ErrorCode::FILE_OPEN_FAIL);
  io.FailNext(Op::kOpen, 2, ErrorCode::FILE_OPEN_FAIL, EIO);
  EXPECT_EQ(OffsetBackend::Open(&io, Options(dir, OffsetPersistMode::kStrict)).error(),
            ErrorCode::FILE_OPEN_FAIL);
  io.FailNext(Op::kPRead, 2, ErrorCode::FILE_READ_FAIL, EIO);
  EXPECT_EQ(OffsetBackend::Open(&io, Options(dir, OffsetPersistMode::kStrict)).error(),
            ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(ReadFile(dir.Join("kv_cache.meta")), meta);
  EXPECT_EQ(ReadFile(dir.Join("kv_cache.data")), data);
  b = MustOpen(&io, Options(dir, OffsetPersistMode::kStrict));
  ExpectValue(b.get(), "a", Pattern("a", 5000));
}

}  // namespace
}  // namespace shelfmark
