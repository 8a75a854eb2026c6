#include "ssdstore/bucket_backend.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "common/object_key.h"
#include "ssdstore/fault_file_io.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace shelfmark {
namespace {

using Op = FaultyFileIo::Op;
using testing::TempDir;

std::string Value(const std::string& key, size_t size) {
  std::string v(size, '\0');
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<char>(key[i % key.size()] + i * 31);
  return v;
}

// Owns the values a batch's StoredObjects point at.
struct Batch {
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::vector<StoredObject> objects;
  void Add(const std::string& key, size_t size) {
    keys.push_back(key);
    values.push_back(Value(key, size));
  }
  const std::vector<StoredObject>& Build() {
    objects.clear();
    for (size_t i = 0; i < keys.size(); ++i) objects.push_back({"default", keys[i], values[i]});
    return objects;
  }
};

Batch MakeBatch(const std::string& prefix, int n, size_t size) {
  Batch b;
  for (int i = 0; i < n; ++i) b.Add(prefix + std::to_string(i), size);
  return b;
}

std::set<std::string> Files(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

class BucketBackendTest : public ::testing::Test {
 protected:
  BucketBackendOptions Options() {
    BucketBackendOptions o;
    o.root = dir_.path();
    return o;
  }
  std::unique_ptr<BucketBackend> OpenWith(BucketBackendOptions o,
                                          std::shared_ptr<FileIo> io = nullptr) {
    if (io == nullptr) io = MakePosixFileIo();
    Result<std::unique_ptr<BucketBackend>> b = BucketBackend::Open(std::move(o), std::move(io));
    EXPECT_TRUE(b.ok()) << ErrorCodeName(b.error());
    return b.ok() ? std::move(*b) : nullptr;
  }
  std::unique_ptr<BucketBackend> OpenDefault() { return OpenWith(Options()); }

  void ExpectReadable(BucketBackend* b, const Batch& batch) {
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      std::string out;
      ASSERT_EQ(b->Read("default", batch.keys[i], 0, &out), ErrorCode::OK) << batch.keys[i];
      EXPECT_EQ(out, batch.values[i]) << batch.keys[i];
    }
  }
  void ExpectAbsent(BucketBackend* b, const Batch& batch) {
    for (const std::string& key : batch.keys) {
      std::string out;
      EXPECT_EQ(b->Read("default", key, 0, &out), ErrorCode::OBJECT_NOT_FOUND) << key;
    }
  }

  TempDir dir_;
};

TEST_F(BucketBackendTest, RoundTripsManySizes) {
  auto b = OpenDefault();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "bucket_storage_backend");
  Batch batch;
  for (size_t size : {0ul, 1ul, 7ul, 4095ul, 4096ul, 65537ul, 1ul << 20, 3ul << 20}) {
    batch.Add("key-" + std::to_string(size), size);
  }
  Result<std::vector<StoredLocation>> locs = b->WriteBatch(batch.Build());
  ASSERT_TRUE(locs.ok()) << ErrorCodeName(locs.error());
  ASSERT_EQ(locs->size(), batch.keys.size());
  ExpectReadable(b.get(), batch);
  // Locations point at key bytes then value bytes in the bucket file.
  for (size_t i = 0; i < locs->size(); ++i) {
    const StoredLocation& l = (*locs)[i];
    EXPECT_EQ(l.key, batch.keys[i]);
    EXPECT_EQ(l.key_size, static_cast<int64_t>(batch.keys[i].size()));
    EXPECT_EQ(l.data_size, static_cast<int64_t>(batch.values[i].size()));
    EXPECT_EQ(l.checksum, std::optional<uint64_t>(ValueChecksum(batch.values[i])));
    const std::string file =
        testing::ReadFile(dir_.Join(std::to_string(l.bucket_id) + ".bucket"));
    EXPECT_EQ(file.substr(l.offset - l.key_size, l.key_size), batch.keys[i]);
    EXPECT_EQ(file.substr(l.offset, l.data_size), batch.values[i]);
  }
  std::string out;
  EXPECT_EQ(b->Read("default", "key-7", 7, &out), ErrorCode::OK);
  EXPECT_EQ(b->Read("default", "key-7", 8, &out), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(b->Read("default", "nope", 0, &out), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(b->Read("other", "key-7", 0, &out), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(b->Read("", "key-7", 0, &out), ErrorCode::OK);  // empty tenant = default
  EXPECT_EQ(b->object_count(), batch.keys.size());
  EXPECT_EQ(b->List().size(), batch.keys.size());
}

TEST_F(BucketBackendTest, RejectsBadKeysAndTenants) {
  auto b = OpenDefault();
  std::string big(kMaxKeyLength + 1, 'k');
  EXPECT_EQ(b->WriteBatch({{"default", "", "v"}}).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(b->WriteBatch({{"default", big, "v"}}).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(b->WriteBatch({{std::string(300, 't'), "k", "v"}}).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(b->object_count(), 0u);
  EXPECT_TRUE(Files(dir_.path()).empty());
}

TEST_F(BucketBackendTest, TenantsAreSeparate) {
  auto b = OpenDefault();
  ASSERT_TRUE(b->WriteBatch({{"a", "k", "from-a"}, {"b", "k", "from-b"}}).ok());
  std::string out;
  ASSERT_EQ(b->Read("a", "k", 0, &out), ErrorCode::OK);
  EXPECT_EQ(out, "from-a");
  ASSERT_EQ(b->Read("b", "k", 0, &out), ErrorCode::OK);
  EXPECT_EQ(out, "from-b");
}

TEST_F(BucketBackendTest, SplitsLargeBatchesIntoBuckets) {
  BucketBackendOptions o = Options();
  o.bucket_keys = 3;
  o.bucket_bytes = 1 << 20;
  auto b = OpenWith(o);
  Batch batch = MakeBatch("k", 10, 1000);
  batch.Add("big", 3 << 20);  // larger than a bucket: a bucket of its own
  ASSERT_TRUE(b->WriteBatch(batch.Build()).ok());
  EXPECT_EQ(b->BucketIds(), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  ExpectReadable(b.get(), batch);
}

TEST_F(BucketBackendTest, ReplaceAndRemove) {
  auto b = OpenDefault();
  ASSERT_TRUE(b->WriteBatch({{"default", "k", "old"}, {"default", "other", "x"}}).ok());
  ASSERT_TRUE(b->WriteBatch({{"default", "k", "new"}}).ok());
  std::string out;
  ASSERT_EQ(b->Read("default", "k", 0, &out), ErrorCode::OK);
  EXPECT_EQ(out, "new");
  EXPECT_EQ(b->object_count(), 2u);
  // Bucket 1 still holds "other"; removing it empties bucket 1, which goes.
  EXPECT_EQ(b->Remove("default", "other"), ErrorCode::OK);
  EXPECT_EQ(b->Remove("default", "other"), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(b->BucketIds(), std::vector<uint64_t>{2});
  EXPECT_EQ(Files(dir_.path()), (std::set<std::string>{"2.bucket", "2.meta"}));
  EXPECT_EQ(b->used_bytes(), 4u);  // "k" + "new"
  // A key written twice in one batch: the later one wins.
  ASSERT_TRUE(b->WriteBatch({{"default", "d", "1"}, {"default", "d", "22"}}).ok());
  ASSERT_EQ(b->Read("default", "d", 0, &out), ErrorCode::OK);
  EXPECT_EQ(out, "22");
}

TEST_F(BucketBackendTest, RestartRebuildsIndex) {
  BucketBackendOptions o = Options();
  o.bucket_keys = 4;
  Batch a = MakeBatch("a", 9, 333);
  Batch c = MakeBatch("c", 3, 70000);
  std::vector<StoredLocation> before;
  {
    auto b = OpenWith(o);
    ASSERT_TRUE(b->WriteBatch(a.Build()).ok());
    ASSERT_TRUE(b->WriteBatch(c.Build()).ok());
    ASSERT_TRUE(b->WriteBatch({{"default", "a0", "replaced"}}).ok());
    before = b->List();
    EXPECT_EQ(b->Close(), ErrorCode::OK);
    std::string out;
    EXPECT_EQ(b->Read("default", "a1", 0, &out), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
  }
  auto b = OpenWith(o);
  EXPECT_EQ(b->object_count(), 12u);
  std::vector<StoredLocation> after = b->List();
  auto order = [](const StoredLocation& x, const StoredLocation& y) { return x.key < y.key; };
  std::sort(before.begin(), before.end(), order);
  std::sort(after.begin(), after.end(), order);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].key, after[i].key);
    EXPECT_EQ(before[i].tenant, after[i].tenant);
    EXPECT_EQ(before[i].bucket_id, after[i].bucket_id);
    EXPECT_EQ(before[i].offset, after[i].offset);
    EXPECT_EQ(before[i].data_size, after[i].data_size);
    EXPECT_TRUE(after[i].checksum.has_value());  // recovered with each record
    EXPECT_EQ(before[i].checksum, after[i].checksum);
  }
  std::string out;
  ASSERT_EQ(b->Read("default", "a0", 0, &out), ErrorCode::OK);
  EXPECT_EQ(out, "replaced");
  a.keys.erase(a.keys.begin());
  a.values.erase(a.values.begin());
  ExpectReadable(b.get(), a);
  ExpectReadable(b.get(), c);
  // Ids continue after the highest one.
  Result<std::vector<StoredLocation>> l = b->WriteBatch({{"default", "n", "v"}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)[0].bucket_id, 6);
}

TEST_F(BucketBackendTest, TruncatedBucketDroppedOthersKept) {
  Batch a = MakeBatch("a", 3, 100);
  Batch c = MakeBatch("c", 3, 100);
  {
    auto b = OpenDefault();
    ASSERT_TRUE(b->WriteBatch(a.Build()).ok());
    ASSERT_TRUE(b->WriteBatch(c.Build()).ok());
  }
  std::filesystem::resize_file(dir_.Join("1.bucket"), 200);
  auto b = OpenDefault();
  EXPECT_EQ(b->object_count(), 3u);
  ExpectAbsent(b.get(), a);
  ExpectReadable(b.get(), c);
  EXPECT_EQ(Files(dir_.path()), (std::set<std::string>{"2.bucket", "2.meta"}));
  StorageRecovery r = b->recovery();
  EXPECT_EQ(r.files_discarded, 2u);
  EXPECT_EQ(r.reasons, (std::vector<std::string>{
                           "1.meta: the .bucket is shorter than its .meta records"}));
  EXPECT_EQ(r.Describe(),
            "discarded 2 file(s), dropped 0 record(s): 1.meta: the .bucket is shorter than its "
            ".meta records");
}

TEST_F(BucketBackendTest, CorruptMetaDroppedWithItsBucket) {
  Batch a = MakeBatch("a", 3, 100);
  Batch c = MakeBatch("c", 3, 100);
  {
    auto b = OpenDefault();
    ASSERT_TRUE(b->WriteBatch(a.Build()).ok());
    ASSERT_TRUE(b->WriteBatch(c.Build()).ok());
  }
  std::string meta = testing::ReadFile(dir_.Join("2.meta"));
  meta[meta.size() / 2] ^= 0x10;
  testing::WriteFile(dir_.Join("2.meta"), meta);
  auto b = OpenDefault();
  ExpectReadable(b.get(), a);
  ExpectAbsent(b.get(), c);
  EXPECT_EQ(Files(dir_.path()), (std::set<std::string>{"1.bucket", "1.meta"}));
  EXPECT_EQ(b->recovery().reasons,
            (std::vector<std::string>{"2.meta: the .meta does not decode as this bucket's"}));
}

// A record written with version 1 of the .meta (no per-object checksums)
// cannot be verified: recovery discards it. A newer version is not ours:
// Open fails and deletes nothing.
TEST_F(BucketBackendTest, OlderMetaVersionDiscardedNewerFailsOpen) {
  Batch a = MakeBatch("a", 3, 100);
  {
    auto b = OpenDefault();
    ASSERT_TRUE(b->WriteBatch(a.Build()).ok());
  }
  const std::string good = testing::ReadFile(dir_.Join("1.meta"));
  auto with_version = [&](char version) {
    std::string meta = good;
    meta[8] = version;  // the version field, then a valid seal
    const uint64_t sum = XXH3_64bits(meta.data(), meta.size() - 8);
    std::memcpy(meta.data() + meta.size() - 8, &sum, 8);  // little-endian host
    testing::WriteFile(dir_.Join("1.meta"), meta);
  };
  with_version(3);
  Result<std::unique_ptr<BucketBackend>> newer = BucketBackend::Open(Options(), MakePosixFileIo());
  EXPECT_EQ(newer.error(), ErrorCode::VERSION_MISMATCH);
  EXPECT_EQ(Files(dir_.path()), (std::set<std::string>{"1.bucket", "1.meta"}));
  with_version(1);
  auto b = OpenDefault();
  EXPECT_EQ(b->object_count(), 0u);
  ExpectAbsent(b.get(), a);
  EXPECT_EQ(Files(dir_.path()), std::set<std::string>{});
  EXPECT_EQ(b->recovery().reasons,
            (std::vector<std::string>{"1.meta: format version 1 has no per-object checksums"}));
}

// Every read verifies the value's checksum: a flipped byte, a truncated
// .bucket or a removed one is never served. The record is dropped
// (DATA_CORRUPTED once, OBJECT_NOT_FOUND after), counted, and reported by
// no evict callback (the caller tells the master); the page-cache path
// never serves it and leaves the drop to ReadValue. Other records stay.
TEST_F(BucketBackendTest, ARecordThatDoesNotReadBackIntactIsDroppedNeverServed) {
  auto b = OpenDefault();
  int callbacks = 0;
  b->SetEvictCallback([&](std::string_view, std::string_view) { ++callbacks; });
  Batch a = MakeBatch("a", 4, 5000);
  Batch c = MakeBatch("c", 2, 5000);
  Batch d = MakeBatch("d", 2, 5000);
  Result<std::vector<StoredLocation>> locs = b->WriteBatch(a.Build());
  ASSERT_TRUE(locs.ok());
  ASSERT_TRUE(b->WriteBatch(c.Build()).ok());
  ASSERT_TRUE(b->WriteBatch(d.Build()).ok());
  std::string out;
  ASSERT_EQ(b->Read("default", "a0", 0, &out), ErrorCode::OK);  // opens 1.bucket
  // a1: one byte flipped in its value (the page cache sees it too).
  testing::FlipBits(dir_.Join("1.bucket"), (*locs)[1].offset + 100);
  out = "untouched";
  DiskPlace place;
  bool served = true;
  EXPECT_EQ(b->ReadValueCached("default", "a1", 0, &out, &place, &served), ErrorCode::OK);
  EXPECT_FALSE(served);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(b->object_count(), 8u) << "the page-cache path dropped a record";
  EXPECT_EQ(b->Read("default", "a1", 0, &out), ErrorCode::DATA_CORRUPTED);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(b->Read("default", "a1", 0, &out), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(b->corrupt_records(), 1u);
  // a3: its bucket cut short.
  std::filesystem::resize_file(dir_.Join("1.bucket"), static_cast<uint64_t>((*locs)[3].offset));
  EXPECT_EQ(b->Read("default", "a3", 0, &out), ErrorCode::DATA_CORRUPTED);
  // c: its bucket removed before any read opened it.
  std::filesystem::remove(dir_.Join("2.bucket"));
  EXPECT_EQ(b->Read("default", "c0", 0, &out), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(b->Read("default", "c1", 0, &out), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(b->corrupt_records(), 4u);
  EXPECT_EQ(b->object_count(), 4u);
  // The rest reads back; a0 and a2 lie before the cut.
  for (const char* key : {"a0", "a2"}) {
    ASSERT_EQ(b->Read("default", key, 0, &out), ErrorCode::OK) << key;
    EXPECT_EQ(out, Value(key, 5000)) << key;
  }
  ExpectReadable(b.get(), d);
  EXPECT_EQ(callbacks, 0);
  // c's batch has no live record left: its files are gone.
  EXPECT_EQ(Files(dir_.path()).count("2.meta"), 0u);
}

TEST_F(BucketBackendTest, OrphansAndStrayFilesRemoved) {
  Batch a = MakeBatch("a", 2, 10);
  {
    auto b = OpenDefault();
    ASSERT_TRUE(b->WriteBatch(a.Build()).ok());
  }
  testing::WriteFile(dir_.Join("5.bucket"), "orphan");
  testing::WriteFile(dir_.Join("9.meta"), testing::ReadFile(dir_.Join("1.meta")));  // no 9.bucket
  testing::WriteFile(dir_.Join("12.meta.tmp"), "half");
  testing::WriteFile(dir_.Join("README"), "not ours");
  auto b = OpenDefault();
  ExpectReadable(b.get(), a);
  EXPECT_EQ(Files(dir_.path()), (std::set<std::string>{"1.bucket", "1.meta", "README"}));
  StorageRecovery r = b->recovery();
  EXPECT_EQ(r.files_discarded, 3u);
  // 9.meta is a copy of 1.meta: it names bucket 1.
  EXPECT_EQ(r.reasons, (std::vector<std::string>{"12.meta.tmp: an unfinished write",
                                                 "9.meta: the .meta does not decode as this "
                                                 "bucket's",
                                                 "5.bucket: no .meta file"}));
  Result<std::vector<StoredLocation>> l = b->WriteBatch({{"default", "n", "v"}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)[0].bucket_id, 13);  // after the highest id seen
}

TEST_F(BucketBackendTest, OpenFailsWithoutDeletingOnUnreadableDirectory) {
  {
    auto b = OpenDefault();
    ASSERT_TRUE(b->WriteBatch({{"default", "k", "v"}}).ok());
  }
  auto io = std::make_shared<FaultyFileIo>();
  io->FailNext(Op::kOpen, 1, ErrorCode::FILE_OPEN_FAIL);  // reading 1.meta
  BucketBackendOptions o = Options();
  EXPECT_EQ(BucketBackend::Open(o, io).error(), ErrorCode::FILE_OPEN_FAIL);
  EXPECT_EQ(Files(dir_.path()), (std::set<std::string>{"1.bucket", "1.meta"}));
  auto b = OpenDefault();
  EXPECT_EQ(b->object_count(), 1u);
}

// Each fault point of a (3-bucket) batch: the batch fails, nothing of it is
// visible, its files are gone, and later batches work.
TEST_F(BucketBackendTest, FailedBatchLeavesNothing) {
  const std::vector<std::pair<Op, int>> points = {
      {Op::kOpen, 1},     {Op::kPWriteV, 1},   {Op::kPWriteV, 3},  {Op::kFDataSync, 2},
      {Op::kPWrite, 1},   {Op::kFSync, 3},     {Op::kRename, 2},   {Op::kSyncDir, 3},
      {Op::kOpen, 4},
  };
  for (const auto& [op, nth] : points) {
    SCOPED_TRACE(std::string(FaultyFileIo::OpName(op)) + " #" + std::to_string(nth));
    TempDir dir;
    auto io = std::make_shared<FaultyFileIo>();
    BucketBackendOptions o;
    o.root = dir.path();
    o.bucket_keys = 2;
    auto b = OpenWith(o, io);
    Batch first = MakeBatch("f", 2, 50);
    ASSERT_TRUE(b->WriteBatch(first.Build()).ok());
    const uint64_t used = b->used_bytes();
    io->FailNext(op, nth, ErrorCode::FILE_WRITE_FAIL);
    Batch batch = MakeBatch("b", 6, 100);
    Result<std::vector<StoredLocation>> r = b->WriteBatch(batch.Build());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), ErrorCode::FILE_WRITE_FAIL);
    EXPECT_EQ(b->object_count(), 2u);
    EXPECT_EQ(b->used_bytes(), used);
    ExpectAbsent(b.get(), batch);
    EXPECT_EQ(Files(dir.path()), (std::set<std::string>{"1.bucket", "1.meta"}));
    io->ClearFaults();
    ASSERT_TRUE(b->WriteBatch(batch.Build()).ok());
    ExpectReadable(b.get(), batch);
    ExpectReadable(b.get(), first);
  }
}

// A full disk is a size limit met: the store evicts batches (reported like
// any eviction) and tries again. Here no eviction can help (the fault's
// budget counts bytes written, not bytes on disk), so once the store is
// empty the batch fails whole; space again, it is written.
TEST_F(BucketBackendTest, DiskFullEvictsThenFailsTheBatchWhenNothingHelps) {
  auto io = std::make_shared<FaultyFileIo>();
  BucketBackendOptions o = Options();
  o.bucket_keys = 4;
  auto b = OpenWith(o, io);
  std::vector<std::string> evicted;
  b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
  Batch first = MakeBatch("f", 3, 1000);
  ASSERT_TRUE(b->WriteBatch(first.Build()).ok());
  io->SetSpaceLimit(10000);
  Batch batch = MakeBatch("b", 12, 1000);
  Result<std::vector<StoredLocation>> r = b->WriteBatch(batch.Build());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), ErrorCode::FILE_WRITE_FAIL);
  ExpectAbsent(b.get(), batch);
  ExpectAbsent(b.get(), first);
  EXPECT_EQ(evicted, (std::vector<std::string>{"f0", "f1", "f2"}));
  EXPECT_EQ(b->disk_full_evictions(), 1u);
  EXPECT_EQ(Files(dir_.path()), std::set<std::string>{});
  io->ClearSpaceLimit();
  ASSERT_TRUE(b->WriteBatch(batch.Build()).ok());
  ExpectReadable(b.get(), batch);
}

// A store without a size limit on a file system that fills up (a 256 KiB
// tmpfs; root only) keeps taking batches: each write that meets ENOSPC
// evicts the oldest batches until it fits, and reports them.
TEST_F(BucketBackendTest, FullFileSystemEvictsOldestBatchesToTakeNewOnes) {
  const std::string small = dir_.Join("small");
  std::filesystem::create_directories(small);
  if (geteuid() != 0 || mount("tmpfs", small.c_str(), "tmpfs", 0, "size=256k") != 0) {
    GTEST_SKIP() << "needs root with mount rights for a small tmpfs";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
  } unmount{small};
  BucketBackendOptions o = Options();
  o.root = small;
  std::vector<std::string> evicted;
  {
    auto b = OpenWith(o);
    ASSERT_NE(b, nullptr);
    b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
    std::vector<Batch> batches;
    for (int i = 0; i < 20; ++i) {  // 20 x 40 KiB through 256 KiB
      batches.push_back(MakeBatch("n" + std::to_string(i) + "-", 4, 10 << 10));
      Result<std::vector<StoredLocation>> r = b->WriteBatch(batches.back().Build());
      ASSERT_TRUE(r.ok()) << i << ": " << ErrorCodeName(r.error());
      ExpectReadable(b.get(), batches.back());
    }
    EXPECT_GT(b->disk_full_evictions(), 0u);
    EXPECT_FALSE(evicted.empty());
    ExpectAbsent(b.get(), batches.front());
    EXPECT_EQ(b->object_count() + evicted.size(), 80u);
    EXPECT_EQ(b->corrupt_records(), 0u);
  }
}

TEST_F(BucketBackendTest, PowerCutAfterBatchKeepsIt) {
  auto io = std::make_shared<FaultyFileIo>();
  Batch batch = MakeBatch("k", 5, 5000);
  {
    auto b = OpenWith(Options(), io);
    ASSERT_TRUE(b->WriteBatch(batch.Build()).ok());
    ASSERT_EQ(io->PowerCut(), ErrorCode::OK);
  }
  io->Restart();
  auto b = OpenWith(Options(), io);
  EXPECT_EQ(b->object_count(), 5u);
  ExpectReadable(b.get(), batch);
}

// A power cut at each point of a 3-bucket batch (the failing call stands for
// the cut; cleanup cannot run either): after restart none of the batch.
TEST_F(BucketBackendTest, PowerCutMidBatchShowsNoneOfIt) {
  struct Point {
    Op op;
    int nth;
    int committed;  // buckets of the batch whose .meta was durable before the cut
  };
  const std::vector<Point> points = {
      {Op::kPWriteV, 2, 1}, {Op::kPWriteV, 3, 2}, {Op::kFDataSync, 3, 2}, {Op::kPWrite, 3, 2},
      {Op::kFSync, 3, 2},   {Op::kRename, 3, 2},  {Op::kSyncDir, 3, 2},
  };
  for (const auto& [op, nth, committed] : points) {
    SCOPED_TRACE(std::string(FaultyFileIo::OpName(op)) + " #" + std::to_string(nth));
    TempDir dir;
    auto io = std::make_shared<FaultyFileIo>();
    BucketBackendOptions o;
    o.root = dir.path();
    o.bucket_keys = 2;
    Batch first = MakeBatch("f", 1, 50);
    Batch batch = MakeBatch("b", 6, 100);
    {
      auto b = OpenWith(o, io);
      ASSERT_TRUE(b->WriteBatch(first.Build()).ok());
      io->FailNext(op, nth, ErrorCode::FILE_WRITE_FAIL);
      for (int i = 1; i <= 8; ++i) io->FailNext(Op::kRemove, i, ErrorCode::FILE_WRITE_FAIL);
      // The cleanup's directory sync (after the committed buckets' syncs and
      // the failed one's) fails too: the machine is already down.
      io->FailNext(Op::kSyncDir, committed + 1 + (op == Op::kSyncDir ? 1 : 0),
                   ErrorCode::FILE_WRITE_FAIL);
      EXPECT_FALSE(b->WriteBatch(batch.Build()).ok());
      ASSERT_EQ(io->PowerCut(), ErrorCode::OK);
    }
    io->Restart();
    io->ClearFaults();
    auto b = OpenWith(o, io);
    EXPECT_EQ(b->object_count(), 1u);
    ExpectReadable(b.get(), first);
    ExpectAbsent(b.get(), batch);
    EXPECT_EQ(Files(dir.path()), (std::set<std::string>{"1.bucket", "1.meta"}));
  }
}

struct Evictions {
  std::vector<std::string> keys;
  std::vector<bool> files_present;  // the key's bucket file existed at the call
};

TEST_F(BucketBackendTest, FifoEvictionCallsBackBeforeFilesGo) {
  BucketBackendOptions o = Options();
  o.bucket_keys = 2;
  o.total_keys = 6;
  auto b = OpenWith(o);
  std::map<std::string, int64_t> bucket_of;
  Evictions ev;
  b->SetEvictCallback([&](std::string_view tenant, std::string_view key) {
    EXPECT_EQ(tenant, "default");
    ev.keys.emplace_back(key);
    ev.files_present.push_back(std::filesystem::exists(
        dir_.Join(std::to_string(bucket_of.at(std::string(key))) + ".bucket")));
  });
  std::vector<Batch> batches;
  for (int i = 0; i < 5; ++i) {
    batches.push_back(MakeBatch("b" + std::to_string(i) + "-", 2, 100));
    Result<std::vector<StoredLocation>> l = b->WriteBatch(batches.back().Build());
    ASSERT_TRUE(l.ok());
    for (const auto& loc : *l) bucket_of[loc.key] = loc.bucket_id;
    EXPECT_LE(b->object_count(), 6u);
  }
  EXPECT_EQ(ev.keys, (std::vector<std::string>{"b0-0", "b0-1", "b1-0", "b1-1"}));
  EXPECT_TRUE(std::all_of(ev.files_present.begin(), ev.files_present.end(), [](bool x) { return x; }));
  ExpectAbsent(b.get(), batches[0]);
  ExpectAbsent(b.get(), batches[1]);
  for (int i = 2; i < 5; ++i) ExpectReadable(b.get(), batches[i]);
  EXPECT_EQ(Files(dir_.path()).count("1.bucket"), 0u);
  EXPECT_EQ(Files(dir_.path()).count("1.meta"), 0u);
  // A batch larger than the limit on its own.
  EXPECT_EQ(b->WriteBatch(MakeBatch("x", 7, 1).Build()).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(BucketBackendTest, LruEvictsLeastRecentlyRead) {
  BucketBackendOptions o = Options();
  o.eviction = BucketEviction::kLru;
  o.total_bytes = 3 * 2 * (3 + 1000);
  auto b = OpenWith(o);
  std::vector<std::string> evicted;
  b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
  Batch a = MakeBatch("a-", 2, 1000);
  Batch c = MakeBatch("c-", 2, 1000);
  Batch d = MakeBatch("d-", 2, 1000);
  ASSERT_TRUE(b->WriteBatch(a.Build()).ok());
  ASSERT_TRUE(b->WriteBatch(c.Build()).ok());
  ASSERT_TRUE(b->WriteBatch(d.Build()).ok());
  ExpectReadable(b.get(), a);  // a is now the most recently used
  Batch e = MakeBatch("e-", 2, 1000);
  ASSERT_TRUE(b->WriteBatch(e.Build()).ok());
  EXPECT_EQ(evicted, (std::vector<std::string>{"c-0", "c-1"}));
  EXPECT_LE(b->used_bytes(), o.total_bytes);
  ExpectReadable(b.get(), a);
  ExpectAbsent(b.get(), c);
}

// A batch leaves whole, so under LRU it is as recent as its most recently
// read bucket: reading the second bucket of a two-bucket batch keeps both.
TEST_F(BucketBackendTest, LruTakesABatchAsRecentAsItsNewestBucket) {
  BucketBackendOptions o = Options();
  o.eviction = BucketEviction::kLru;
  o.bucket_keys = 2;
  o.total_keys = 7;
  auto b = OpenWith(o);
  std::vector<std::string> evicted;
  b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
  Batch big = MakeBatch("big", 4, 10);  // buckets 1 and 2
  ASSERT_TRUE(b->WriteBatch(big.Build()).ok());
  Batch small = MakeBatch("s", 2, 10);  // bucket 3
  ASSERT_TRUE(b->WriteBatch(small.Build()).ok());
  std::string out;
  ASSERT_EQ(b->Read("default", "big3", 0, &out), ErrorCode::OK);  // bucket 2
  ASSERT_TRUE(b->WriteBatch(MakeBatch("t", 2, 10).Build()).ok());
  EXPECT_EQ(evicted, (std::vector<std::string>{"s0", "s1"}));
  ExpectReadable(b.get(), big);
}

TEST_F(BucketBackendTest, EvictingOneBucketOfABatchEvictsTheBatch) {
  BucketBackendOptions o = Options();
  o.bucket_keys = 2;
  o.total_keys = 6;
  auto b = OpenWith(o);
  std::vector<std::string> evicted;
  b->SetEvictCallback([&](std::string_view, std::string_view key) { evicted.emplace_back(key); });
  Batch big = MakeBatch("big", 4, 10);
  ASSERT_TRUE(b->WriteBatch(big.Build()).ok());
  Batch small = MakeBatch("s", 2, 10);
  ASSERT_TRUE(b->WriteBatch(small.Build()).ok());
  ASSERT_TRUE(b->WriteBatch(MakeBatch("t", 1, 10).Build()).ok());
  EXPECT_EQ(evicted.size(), 4u);
  ExpectAbsent(b.get(), big);
  EXPECT_EQ(b->BucketIds(), (std::vector<uint64_t>{3, 4}));
}

// Reads racing evictions return the right bytes or OBJECT_NOT_FOUND.
TEST_F(BucketBackendTest, ReadsRacingEvictionNeverSeeWrongBytes) {
  BucketBackendOptions o = Options();
  o.bucket_keys = 4;
  o.total_keys = 16;
  o.max_open_fds = 3;
  auto b = OpenWith(o);
  std::atomic<int> written{0};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> hits{0};
  std::thread writer([&] {
    for (int i = 0; i < 300; ++i) {
      Batch batch = MakeBatch("w" + std::to_string(i) + "-", 4, 512 + i);
      const bool ok = b->WriteBatch(batch.Build()).ok();
      EXPECT_TRUE(ok);
      if (!ok) break;
      written = i + 1;
    }
    done = true;
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      uint64_t n = r;
      while (!done) {
        const int w = written.load();
        if (w == 0) continue;
        n = n * 6364136223846793005ull + 1442695040888963407ull;
        const int i = static_cast<int>((n >> 33) % w);
        const std::string key = "w" + std::to_string(i) + "-" + std::to_string((n >> 20) % 4);
        std::string out;
        ErrorCode ec = b->Read("default", key, 0, &out);
        if (ec == ErrorCode::OK) {
          EXPECT_EQ(out, Value(key, 512 + i)) << key;
          ++hits;
        } else {
          EXPECT_EQ(ec, ErrorCode::OBJECT_NOT_FOUND) << key;
        }
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_LE(b->object_count(), 16u);
  EXPECT_GT(hits.load(), 0u);
  // Only the live buckets' files remain once reads are done.
  std::set<std::string> expected;
  for (uint64_t id : b->BucketIds()) {
    expected.insert(std::to_string(id) + ".bucket");
    expected.insert(std::to_string(id) + ".meta");
  }
  EXPECT_EQ(Files(dir_.path()), expected);
}

}  // namespace
}  // namespace shelfmark
