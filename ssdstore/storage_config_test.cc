// StorageConfig from a test environment (a map behind the getenv-like
// lookup) and a real directory: defaults, the design study's example, every
// variable's bad values named in the error, byte-size suffixes.
#include "ssdstore/storage_config.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/process_util.h"
#include "testing/temp_dir.h"

namespace shelfmark {
namespace {

using testing::TempDir;
using testing::WriteFile;

class StorageConfigTest : public ::testing::Test {
 protected:
  StorageConfigTest() { env_[std::string(kEnvStoragePath)] = dir_.path(); }

  Result<StorageConfig> Parse() {
    error_.clear();
    return ParseStorageConfig(
        [this](const char* name) -> const char* {
          auto it = env_.find(name);
          return it == env_.end() ? nullptr : it->second.c_str();
        },
        &error_);
  }
  // Parsing fails with INVALID_PARAMS and the message names `variable`.
  void ExpectBad(std::string_view variable, const std::string& value) {
    SCOPED_TRACE(std::string(variable) + "=" + value);
    std::map<std::string, std::string> saved = env_;
    env_[std::string(variable)] = value;
    auto config = Parse();
    EXPECT_EQ(config.error(), ErrorCode::INVALID_PARAMS);
    EXPECT_NE(error_.find(variable), std::string::npos) << error_;
    env_ = saved;
  }

  TempDir dir_;
  std::map<std::string, std::string> env_;
  std::string error_;
};

TEST_F(StorageConfigTest, DefaultsWithOnlyThePath) {
  env_[std::string(kEnvStoragePath)] = dir_.path() + "/";
  auto c = Parse();
  ASSERT_TRUE(c.ok()) << error_;
  EXPECT_EQ(c->backend, StorageConfig::Backend::kBucket);
  EXPECT_EQ(c->storage_path, dir_.path());
  EXPECT_EQ(c->persist_mode, StorageConfig::PersistMode::kDisabled);
  EXPECT_EQ(c->persist_interval_seconds, 60u);
  EXPECT_EQ(c->total_size_limit_bytes, 0u);
  EXPECT_EQ(c->total_keys_limit, 0u);
  EXPECT_EQ(c->bucket_size_limit_bytes, 256u << 20);
  EXPECT_EQ(c->bucket_keys_limit, 4096u);
  EXPECT_EQ(c->eviction, StorageConfig::Eviction::kLru);
  EXPECT_DOUBLE_EQ(c->high_watermark, 0.95);
  EXPECT_DOUBLE_EQ(c->low_watermark, 0.85);
  EXPECT_NE(c->ToString().find("backend=bucket_storage_backend"), std::string::npos);
}

// The design study's example (no size given: the offset backend sizes its
// data file from the free space).
TEST_F(StorageConfigTest, DesignStudyOffsetExample) {
  env_[std::string(kEnvStorageBackend)] = "offset_allocator_storage_backend";
  env_[std::string(kEnvPersistMode)] = "relaxed";
  env_[std::string(kEnvPersistInterval)] = "60";
  auto c = Parse();
  ASSERT_TRUE(c.ok()) << error_;
  EXPECT_EQ(c->backend, StorageConfig::Backend::kOffsetAllocator);
  EXPECT_EQ(c->persist_mode, StorageConfig::PersistMode::kRelaxed);
  EXPECT_EQ(c->persist_interval_seconds, 60u);
  EXPECT_GE(c->total_size_limit_bytes, 4096u);
  EXPECT_EQ(c->total_size_limit_bytes % 4096, 0u);
  EXPECT_NE(c->ToString().find("persist_mode=relaxed"), std::string::npos);

  // An existing data file keeps its size across restarts.
  WriteFile(dir_.Join("kv_cache.data"), std::string(3 * 4096 + 100, '\0'));
  c = Parse();
  ASSERT_TRUE(c.ok()) << error_;
  EXPECT_EQ(c->total_size_limit_bytes, 3u * 4096);
}

TEST_F(StorageConfigTest, EveryVariableSet) {
  env_[std::string(kEnvStorageBackend)] = "bucket_storage_backend";
  env_[std::string(kEnvPersistMode)] = "strict";
  env_[std::string(kEnvPersistInterval)] = "5";
  env_[std::string(kEnvTotalSizeLimit)] = "2GiB";
  env_[std::string(kEnvTotalKeysLimit)] = "1000";
  env_[std::string(kEnvBucketSizeLimit)] = "64M";
  env_[std::string(kEnvBucketKeysLimit)] = "17";
  env_[std::string(kEnvEvictionPolicy)] = "fifo";
  env_[std::string(kEnvHighWatermark)] = "0.9";
  env_[std::string(kEnvLowWatermark)] = "0.9";
  auto c = Parse();
  ASSERT_TRUE(c.ok()) << error_;
  EXPECT_EQ(c->persist_mode, StorageConfig::PersistMode::kStrict);
  EXPECT_EQ(c->persist_interval_seconds, 5u);
  EXPECT_EQ(c->total_size_limit_bytes, 2ull << 30);
  EXPECT_EQ(c->total_keys_limit, 1000u);
  EXPECT_EQ(c->bucket_size_limit_bytes, 64u << 20);
  EXPECT_EQ(c->bucket_keys_limit, 17u);
  EXPECT_EQ(c->eviction, StorageConfig::Eviction::kFifo);
  EXPECT_DOUBLE_EQ(c->high_watermark, 0.9);
  EXPECT_DOUBLE_EQ(c->low_watermark, 0.9);
}

TEST_F(StorageConfigTest, BadValuesNameTheVariable) {
  ExpectBad(kEnvStorageBackend, "bucket");
  ExpectBad(kEnvStoragePath, "relative/dir");
  ExpectBad(kEnvStoragePath, dir_.Join("missing"));
  WriteFile(dir_.Join("file"), "x");
  ExpectBad(kEnvStoragePath, dir_.Join("file"));
  ExpectBad(kEnvPersistMode, "sometimes");
  ExpectBad(kEnvPersistInterval, "4");
  ExpectBad(kEnvPersistInterval, "-60");
  ExpectBad(kEnvPersistInterval, "60s");
  ExpectBad(kEnvPersistInterval, "99999999999999999999999");
  ExpectBad(kEnvTotalSizeLimit, "lots");
  ExpectBad(kEnvTotalSizeLimit, "-1");
  ExpectBad(kEnvTotalKeysLimit, "1e6");
  ExpectBad(kEnvBucketSizeLimit, "0");
  ExpectBad(kEnvBucketKeysLimit, "0");
  ExpectBad(kEnvEvictionPolicy, "LRU");
  ExpectBad(kEnvHighWatermark, "1.5");
  ExpectBad(kEnvHighWatermark, "0");
  ExpectBad(kEnvLowWatermark, "nan");
  ExpectBad(kEnvLowWatermark, "0.96");  // above the default high watermark
  env_[std::string(kEnvStorageBackend)] = "offset_allocator_storage_backend";
  ExpectBad(kEnvTotalSizeLimit, "4095");  // smaller than one record page
}

TEST_F(StorageConfigTest, MissingPathIsAnError) {
  env_.erase(std::string(kEnvStoragePath));
  EXPECT_EQ(Parse().error(), ErrorCode::INVALID_PARAMS);
  EXPECT_NE(error_.find(kEnvStoragePath), std::string::npos);
  EXPECT_NE(error_.find("required"), std::string::npos);
  env_[std::string(kEnvStoragePath)] = "";  // empty counts as unset
  EXPECT_EQ(Parse().error(), ErrorCode::INVALID_PARAMS);
}

TEST(ParseByteSize, SuffixesAndOverflow) {
  uint64_t n = 0;
  EXPECT_TRUE(ParseByteSize("1048576", &n));
  EXPECT_EQ(n, 1048576u);
  EXPECT_TRUE(ParseByteSize("4K", &n));
  EXPECT_EQ(n, 4096u);
  EXPECT_TRUE(ParseByteSize("3MiB", &n));
  EXPECT_EQ(n, 3u << 20);
  EXPECT_TRUE(ParseByteSize("2GB", &n));
  EXPECT_EQ(n, 2ull << 30);
  EXPECT_TRUE(ParseByteSize("1T", &n));
  EXPECT_EQ(n, 1ull << 40);
  EXPECT_FALSE(ParseByteSize("", &n));
  EXPECT_FALSE(ParseByteSize("K", &n));
  EXPECT_FALSE(ParseByteSize("1X", &n));
  EXPECT_FALSE(ParseByteSize("1Kb", &n));
  EXPECT_FALSE(ParseByteSize("1 K", &n));
  EXPECT_FALSE(ParseByteSize("20000000T", &n));  // overflows 64 bits
  EXPECT_FALSE(ParseByteSize("18446744073709551616", &n));
}

TEST(StorageConfigEnvironment, ReadsTheProcessEnvironment) {
  TempDir dir;
  ASSERT_EQ(::setenv(std::string(kEnvStoragePath).c_str(), dir.path().c_str(), 1), 0);
  ASSERT_EQ(::setenv(std::string(kEnvEvictionPolicy).c_str(), "lru", 1), 0);
  std::string error;
  auto c = StorageConfigFromEnvironment(&error);
  ::unsetenv(std::string(kEnvStoragePath).c_str());
  ::unsetenv(std::string(kEnvEvictionPolicy).c_str());
  ASSERT_TRUE(c.ok()) << error;
  EXPECT_EQ(c->storage_path, dir.path());
  EXPECT_EQ(c->eviction, StorageConfig::Eviction::kLru);
}

}  // namespace
}  // namespace shelfmark
