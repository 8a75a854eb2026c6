// LOCAL_DISK reads end to end: real UCX active messages on 127.0.0.1, both
// SSD backends over real files in a temporary directory (through
// FaultyFileIo for read failures), plus the wire format and the factory.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/local_disk_client.h"
#include "common/object_key.h"
#include "node/local_disk_service.h"
#include "rpc/local_disk_wire.h"
#include "ssdstore/bucket_backend.h"
#include "ssdstore/fault_file_io.h"
#include "ssdstore/offset_backend.h"
#include "ssdstore/storage_backend_factory.h"
#include "testing/process_util.h"
#include "testing/temp_dir.h"
#include "transport/transport_test_util.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

using testing::TempDir;

constexpr int64_t kTimeoutMs = 10000;

StorageConfig Config(StorageConfig::Backend backend, const std::string& path) {
  StorageConfig config;
  config.backend = backend;
  config.storage_path = path;
  if (backend == StorageConfig::Backend::kOffsetAllocator) config.total_size_limit_bytes = 16 << 20;
  return config;
}

// ----------------------------------------------------------------- wire

TEST(LocalDiskWireTest, RequestRoundTripAndTruncation) {
  LocalDiskRequest request{42, "tenant-a", "some/key", 12345};
  const std::string bytes = EncodeLocalDiskRequest(request);
  auto decoded = DecodeLocalDiskRequest(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->request_id, 42u);
  EXPECT_EQ(decoded->tenant, "tenant-a");
  EXPECT_EQ(decoded->key, "some/key");
  EXPECT_EQ(decoded->expected_size, 12345u);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeLocalDiskRequest(std::string_view(bytes).substr(0, n)).error(),
              ErrorCode::INVALID_PARAMS)
        << n;
  }
  EXPECT_EQ(DecodeLocalDiskRequest(bytes + "x").error(), ErrorCode::INVALID_PARAMS);
  std::string bad_magic = bytes;
  bad_magic[0] ^= 1;
  EXPECT_EQ(DecodeLocalDiskRequest(bad_magic).error(), ErrorCode::INVALID_PARAMS);
  std::string bad_version = bytes;
  bad_version[4] = 2;
  EXPECT_EQ(DecodeLocalDiskRequest(bad_version).error(), ErrorCode::INVALID_PARAMS);
}

TEST(LocalDiskWireTest, NameLimits) {
  const std::string max_key(kMaxKeyLength, 'k');
  const std::string max_tenant(kMaxTenantLength, 't');
  EXPECT_TRUE(DecodeLocalDiskRequest(EncodeLocalDiskRequest({1, max_tenant, max_key, 0})).ok());
  EXPECT_TRUE(DecodeLocalDiskRequest(EncodeLocalDiskRequest({1, "", "k", 0})).ok());
  EXPECT_EQ(DecodeLocalDiskRequest(EncodeLocalDiskRequest({1, max_tenant + "t", "k", 0})).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLocalDiskRequest(EncodeLocalDiskRequest({1, "", max_key + "k", 0})).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLocalDiskRequest(EncodeLocalDiskRequest({1, "t", "", 0})).error(),
            ErrorCode::INVALID_PARAMS);
}

TEST(LocalDiskWireTest, ReplyRoundTripAndTruncation) {
  LocalDiskReply reply{ErrorCode::FILE_READ_FAIL, 7, -9, 1ull << 40};
  const std::string bytes = EncodeLocalDiskReply(reply);
  auto decoded = DecodeLocalDiskReply(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->status, ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(decoded->bucket_id, 7);
  EXPECT_EQ(decoded->offset, -9);
  EXPECT_EQ(decoded->data_size, 1ull << 40);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(DecodeLocalDiskReply(std::string_view(bytes).substr(0, n)).error(),
              ErrorCode::INVALID_PARAMS)
        << n;
  }
  EXPECT_EQ(DecodeLocalDiskReply(bytes + "x").error(), ErrorCode::INVALID_PARAMS);
  // A status that is no ErrorCode decodes as INTERNAL_ERROR.
  std::string odd = bytes;
  const int32_t unknown = 12345;
  std::memcpy(odd.data() + 5, &unknown, sizeof(unknown));
  EXPECT_EQ(DecodeLocalDiskReply(odd)->status, ErrorCode::INTERNAL_ERROR);
}

TEST(LocalDiskWireTest, ProbeRoundTripAndLimits) {
  for (uint64_t size : {uint64_t{0}, uint64_t{4096}, kMaxProbeBytes}) {
    auto decoded = DecodeLocalDiskProbe(EncodeLocalDiskProbe(size));
    ASSERT_TRUE(decoded.ok()) << size;
    EXPECT_EQ(*decoded, size);
  }
  const std::string bytes = EncodeLocalDiskProbe(10);
  EXPECT_EQ(DecodeLocalDiskProbe(EncodeLocalDiskProbe(kMaxProbeBytes + 1)).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLocalDiskProbe(bytes.substr(0, bytes.size() - 1)).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLocalDiskProbe(bytes + "x").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLocalDiskProbe(EncodeLocalDiskRequest({1, "t", "k", 0})).error(),
            ErrorCode::INVALID_PARAMS);
}

// -------------------------------------------------------------- factory

TEST(StorageBackendFactoryTest, BadOptionsNameBackendAndPath) {
  TempDir dir;
  StorageConfig config = Config(StorageConfig::Backend::kOffsetAllocator, dir.path());
  config.total_size_limit_bytes = 100;  // below 4 KiB
  std::string error;
  auto backend = OpenStorageBackend(config, nullptr, &error);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error.find("offset_allocator_storage_backend"), std::string::npos) << error;
  EXPECT_NE(error.find(dir.path()), std::string::npos) << error;
}

TEST(StorageBackendFactoryTest, MapsConfigAndKeepsFileIoAlive) {
  for (auto kind : {StorageConfig::Backend::kBucket, StorageConfig::Backend::kOffsetAllocator}) {
    TempDir sub;
    StorageConfig config = Config(kind, sub.path());
    config.total_keys_limit = 2;
    std::string error;
    auto io = std::make_shared<FaultyFileIo>();
    std::weak_ptr<FaultyFileIo> weak = io;
    auto opened = OpenStorageBackend(config, std::move(io), &error);
    ASSERT_TRUE(opened.ok()) << error;
    std::unique_ptr<StorageBackend> backend = std::move(opened).value();
    EXPECT_EQ(backend->name(), BackendName(kind));
    EXPECT_FALSE(weak.expired());  // the backend holds the FileIo
    for (const char* key : {"a", "b", "c"}) {
      ASSERT_TRUE(backend->WriteBatch({{"t", key, "value"}}).ok()) << key;
    }
    EXPECT_EQ(backend->object_count(), 2u) << "total_keys_limit maps onto the backend";
    std::string out;
    EXPECT_EQ(backend->Read("t", "c", 5, &out), ErrorCode::OK);
    EXPECT_EQ(out, "value");
    EXPECT_EQ(backend->Close(), ErrorCode::OK);
    backend.reset();
    EXPECT_TRUE(weak.expired());
  }
}

// ------------------------------------------------- service + client, UCX

// A real backend whose reads of `gated_key` wait until Release().
class GatedBackend final : public ForwardingBackend {
 public:
  GatedBackend(StorageBackend* inner, std::string gated_key)
      : ForwardingBackend(inner), gated_key_(std::move(gated_key)) {}
  void WaitEntered() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return entered_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  // The gated key never comes from the cache: it must take the worker path.
  ErrorCode ReadValueCached(std::string_view tenant, std::string_view key, uint64_t expected_size,
                            std::string* out, DiskPlace* place, bool* served) override {
    if (key != gated_key_) {
      return ForwardingBackend::ReadValueCached(tenant, key, expected_size, out, place, served);
    }
    *served = false;
    return ErrorCode::OK;
  }
  ErrorCode ReadValue(std::string_view tenant, std::string_view key, uint64_t expected_size,
                      std::string* out, DiskPlace* place) override {
    if (key == gated_key_) {
      std::unique_lock lock(mu_);
      entered_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
    }
    return ForwardingBackend::ReadValue(tenant, key, expected_size, out, place);
  }

 private:
  const std::string gated_key_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false;
  bool released_ = false;
};

class LocalDiskTest : public ::testing::TestWithParam<StorageConfig::Backend> {
 protected:
  void SetUp() override {
    io_ = std::make_shared<FaultyFileIo>();
    std::string error;
    auto backend = OpenStorageBackend(Config(GetParam(), dir_.path()), io_, &error);
    ASSERT_TRUE(backend.ok()) << error;
    backend_ = std::move(backend).value();
    auto node = UcxEngine::Create(testing::UcxTestOptions(true));
    ASSERT_TRUE(node.ok()) << ErrorCodeName(node.error());
    node_ = std::move(node).value();
    auto client = UcxEngine::Create(testing::UcxTestOptions(false));
    ASSERT_TRUE(client.ok()) << ErrorCodeName(client.error());
    client_ = std::move(client).value();
    service_ = std::make_unique<LocalDiskService>(&node_->am(), backend_.get());
  }
  void TearDown() override {
    service_.reset();  // before the engine whose UcxAm it uses
    client_.reset();
    node_.reset();
  }

  void Put(const std::string& tenant, const std::string& key, const std::string& value) {
    ASSERT_TRUE(backend_->WriteBatch({{tenant, key, value}}).ok()) << key;
  }
  Result<LocalDiskRead> Read(std::string_view tenant, std::string_view key, uint64_t expected) {
    return ReadLocalDisk(client_->am(), node_->endpoint(), tenant, key, expected, kTimeoutMs);
  }
  // Sends `header` + `payload` raw; returns the reply's status (checks that
  // data_size matches the data and that an error carries no data).
  ErrorCode RawStatus(const std::string& header, const std::string& payload = "") {
    auto reply = client_->am().Call(node_->endpoint(), kLocalDiskReadAmId, header, payload,
                                    kTimeoutMs);
    if (!reply.ok()) return reply.error();
    auto decoded = DecodeLocalDiskReply(reply->header);
    if (!decoded.ok()) return ErrorCode::DATA_CORRUPTED;
    EXPECT_EQ(reply->data.size(), decoded->data_size);
    EXPECT_TRUE(decoded->status == ErrorCode::OK || reply->data.empty());
    return decoded->status;
  }

  TempDir dir_;
  std::shared_ptr<FaultyFileIo> io_;
  std::unique_ptr<StorageBackend> backend_;
  std::unique_ptr<UcxEngine> node_, client_;
  std::unique_ptr<LocalDiskService> service_;
};

TEST_P(LocalDiskTest, RoundTripsOneByteToFourMiB) {
  const std::vector<size_t> sizes = {1, 100, 4096, 4097, 64 << 10, (1 << 20) + 3, 4 << 20};
  uint64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Put("t", "k" + std::to_string(i), testing::TestPattern(sizes[i], static_cast<char>('A' + i)));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string want = testing::TestPattern(sizes[i], static_cast<char>('A' + i));
    auto read = Read("t", "k" + std::to_string(i), sizes[i]);
    ASSERT_TRUE(read.ok()) << sizes[i] << " " << ErrorCodeName(read.error());
    EXPECT_TRUE(read->data == want) << sizes[i];
    auto any_size = Read("t", "k" + std::to_string(i), 0);
    ASSERT_TRUE(any_size.ok());
    EXPECT_EQ(any_size->data.size(), sizes[i]);
    total += 2 * sizes[i];
  }
  const LocalDiskStats stats = service_->stats();
  EXPECT_EQ(stats.requests, 2 * sizes.size());
  EXPECT_EQ(stats.bytes_served, total);
  EXPECT_EQ(stats.errors, 0u);
  // Just written, the bytes are in the page cache: answered on the progress
  // thread (RWF_NOWAIT) rather than by a worker.
  EXPECT_GT(stats.inline_reads, 0u);
  EXPECT_LE(stats.inline_reads, stats.requests);
}

TEST_P(LocalDiskTest, ReplyCarriesWhereTheBytesLie) {
  for (int i = 0; i < 5; ++i) {
    Put("t", "k" + std::to_string(i), testing::TestPattern(5000 + i, static_cast<char>('a' + i)));
  }
  const std::vector<StoredLocation> listed = backend_->List();
  ASSERT_EQ(listed.size(), 5u);
  for (const StoredLocation& where : listed) {
    auto read = Read(where.tenant, where.key, 0);
    ASSERT_TRUE(read.ok()) << where.key << " " << ErrorCodeName(read.error());
    EXPECT_EQ(read->bucket_id, where.bucket_id) << where.key;
    EXPECT_EQ(read->offset, where.offset) << where.key;
    // The bytes really lie there in the backend's file.
    const std::string file = GetParam() == StorageConfig::Backend::kBucket
                                 ? BucketFileName(where.bucket_id)
                                 : std::string(kOffsetDataFileName);
    const std::string whole = testing::ReadFile(dir_.Join(file));
    ASSERT_GE(whole.size(), static_cast<size_t>(where.offset) + read->data.size());
    EXPECT_TRUE(whole.compare(where.offset, read->data.size(), read->data) == 0) << where.key;
  }
}

TEST_P(LocalDiskTest, ProbeAnswersTheAskedSizeWithoutTheDisk) {
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, uint64_t{1} << 20}) {
    EXPECT_EQ(ProbeLocalDisk(client_->am(), node_->endpoint(), size, kTimeoutMs), ErrorCode::OK)
        << size;
  }
  EXPECT_EQ(ProbeLocalDisk(client_->am(), node_->endpoint(), kMaxProbeBytes + 1, kTimeoutMs),
            ErrorCode::INVALID_PARAMS);
  // A malformed probe gets an empty answer; the service keeps serving.
  auto raw = client_->am().Call(node_->endpoint(), kLocalDiskProbeAmId, "junk", "", kTimeoutMs);
  ASSERT_TRUE(raw.ok());
  EXPECT_TRUE(raw->data.empty());
  EXPECT_EQ(service_->stats().requests, 0u) << "probes are not disk reads";
  Put("t", "k", "value");
  EXPECT_EQ(Read("t", "k", 5)->data, "value");
}

TEST_P(LocalDiskTest, TenantsAreSeparateAndEmptyMeansDefault) {
  Put("a", "k", "in-a");
  Put("b", "k", "in-b");
  Put(std::string(kDefaultTenant), "d", "in-default");
  EXPECT_EQ(Read("a", "k", 0)->data, "in-a");
  EXPECT_EQ(Read("b", "k", 0)->data, "in-b");
  EXPECT_EQ(Read("", "d", 0)->data, "in-default");
  EXPECT_EQ(Read("c", "k", 0).error(), ErrorCode::OBJECT_NOT_FOUND);
}

// A record that cannot be read back (here a read error) is a miss: the
// store drops it, the reply is OBJECT_NOT_FOUND, now and after.
TEST_P(LocalDiskTest, UnknownKeySizeMismatchAndReadFailure) {
  Put("t", "k", "twelve bytes");
  Put("t", "other", "kept");
  EXPECT_EQ(Read("t", "missing", 0).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Read("t", "k", 11).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Read("t", "k", 13).error(), ErrorCode::INVALID_PARAMS);
  io_->FailNext(FaultyFileIo::Op::kPRead, 1, ErrorCode::FILE_READ_FAIL);
  EXPECT_EQ(Read("t", "k", 12).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Read("t", "k", 12).error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(Read("t", "other", 0)->data, "kept");
  const LocalDiskStats stats = service_->stats();
  EXPECT_EQ(stats.requests, 6u);
  EXPECT_EQ(stats.errors, 5u);
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.corrupt, 1u);
  EXPECT_EQ(stats.malformed, 0u);
  EXPECT_EQ(stats.bytes_served, 4u);
}

TEST_P(LocalDiskTest, MalformedRequestsAreRejectedAndServiceKeepsServing) {
  Put("t", "k", "value");
  const std::string good = EncodeLocalDiskRequest({1, "t", "k", 5});
  std::string bad_magic = good;
  bad_magic[1] ^= 0x20;
  std::string bad_version = good;
  bad_version[4] = 9;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", ""},
      {good.substr(0, good.size() - 1), ""},
      {good.substr(0, 9), ""},
      {good + "\x01", ""},
      {bad_magic, ""},
      {bad_version, ""},
      {EncodeLocalDiskRequest({2, "t", std::string(kMaxKeyLength + 1, 'k'), 0}), ""},
      {EncodeLocalDiskRequest({3, std::string(kMaxTenantLength + 1, 't'), "k", 0}), ""},
      {EncodeLocalDiskRequest({4, "t", "", 0}), ""},
      {good, "a payload"},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(RawStatus(bad[i].first, bad[i].second), ErrorCode::INVALID_PARAMS) << i;
    auto read = Read("t", "k", 5);
    ASSERT_TRUE(read.ok()) << i;
    EXPECT_EQ(read->data, "value");
  }
  EXPECT_EQ(RawStatus(good), ErrorCode::OK);
  const LocalDiskStats stats = service_->stats();
  EXPECT_EQ(stats.malformed, bad.size());
  EXPECT_EQ(stats.errors, bad.size());
  EXPECT_EQ(stats.requests, 2 * bad.size() + 1);
}

TEST_P(LocalDiskTest, ClientRejectsOversizedNamesWithoutSending) {
  EXPECT_EQ(Read("t", std::string(kMaxKeyLength + 1, 'k'), 0).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Read(std::string(kMaxTenantLength + 1, 't'), "k", 0).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Read("t", "", 0).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(service_->stats().requests, 0u);
}

TEST_P(LocalDiskTest, SlowReadDoesNotStallOthers) {
  Put("t", "slow", "slow value");
  Put("t", "fast", "fast value");
  service_.reset();
  GatedBackend gated(backend_.get(), "slow");
  LocalDiskServiceOptions options;
  options.worker_threads = 2;  // one blocked in the slow read, one free
  service_ = std::make_unique<LocalDiskService>(&node_->am(), &gated, options);
  Result<LocalDiskRead> slow = ErrorCode::INTERNAL_ERROR;
  std::thread slow_reader([&] { slow = Read("t", "slow", 0); });
  gated.WaitEntered();  // a worker is now blocked inside the backend
  auto fast = Read("t", "fast", 0);
  gated.Release();
  slow_reader.join();
  ASSERT_TRUE(fast.ok()) << ErrorCodeName(fast.error());
  EXPECT_EQ(fast->data, "fast value");
  ASSERT_TRUE(slow.ok()) << ErrorCodeName(slow.error());
  EXPECT_EQ(slow->data, "slow value");
  service_.reset();  // before `gated` goes away
}

TEST_P(LocalDiskTest, StoppedServiceNoLongerAnswersReads) {
  Put("t", "k", "v");
  ASSERT_TRUE(Read("t", "k", 1).ok());
  service_.reset();
  EXPECT_EQ(Read("t", "k", 1).error(), ErrorCode::INVALID_PARAMS);  // no handler any more
}

INSTANTIATE_TEST_SUITE_P(Backends, LocalDiskTest,
                         ::testing::Values(StorageConfig::Backend::kBucket,
                                           StorageConfig::Backend::kOffsetAllocator),
                         [](const auto& info) {
                           return info.param == StorageConfig::Backend::kBucket ? "Bucket"
                                                                                : "Offset";
                         });

}  // namespace
}  // namespace shelfmark
