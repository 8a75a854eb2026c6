// Client against the real master service (RpcServer + Directory on
// 127.0.0.1:0) and real Nodes whose segments are registered with loopback
// engines: bytes really move (memcpy with the owner-side checks). LOCAL_DISK
// reads go over real UCX to a real LocalDiskService on real files.
#include "client/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client_test_util.h"
#include "client/object_load.h"
#include "node/local_disk_service.h"
#include "rpc/master_client.h"
#include "ssdstore/storage_backend_factory.h"
#include "testing/temp_dir.h"
#include "transport/transport_test_util.h"
#include "transport/ucx_engine.h"

namespace shelfmark {
namespace {

TEST_F(ClientTest, PutGetRoundTripOfManySizes) {
  StartNode("seg-a");
  Client& client = MakeClient(/*staging_bytes=*/1 << 20);  // 4 MiB takes the large path
  const std::vector<size_t> sizes = {1, 63, 64, 65, 4095, 65536, (1 << 20) + 7, 4 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string key = "k" + std::to_string(sizes[i]);
    const std::string value = Pattern(sizes[i], static_cast<int>(i));
    ASSERT_EQ(client.Put("", key, value), ErrorCode::OK) << key;
    auto got = client.Get("", key);
    ASSERT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
    EXPECT_EQ(*got, value) << key;
  }
  EXPECT_EQ(client.Get("", "missing").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client.Put("", "k1", "again"), ErrorCode::OBJECT_ALREADY_EXISTS);
}

// ---- object load (shelfmark-cli fill / verify) ------------------------------

TEST(ObjectLoad, ValuesAreAFunctionOfKeyAndSize) {
  EXPECT_EQ(LoadValue("k-1", 1000), LoadValue("k-1", 1000));
  EXPECT_NE(LoadValue("k-1", 1000), LoadValue("k-2", 1000));
  EXPECT_EQ(LoadValue("k-1", 1001).substr(0, 1000), LoadValue("k-1", 1000));
  EXPECT_EQ(LoadValue("k", 3).size(), 3u);
  EXPECT_EQ(LoadKey("demo", 12), "demo-12");
}

TEST_F(ClientTest, FillThenVerifyCountsEvictedAndCorruptObjects) {
  StartNode("load");
  Client& client = MakeClient();
  const FillReport fill = FillObjects(client, "t", "obj", 40, 3000, 1, 1000);
  ASSERT_EQ(fill.error, ErrorCode::OK) << ErrorCodeName(fill.error) << " " << fill.failed_key;
  EXPECT_EQ(fill.stored, 40u);
  VerifyReport all = VerifyObjects(client, "t", "obj", 40, 3000);
  EXPECT_TRUE(all.ok());
  EXPECT_EQ(all.memory_only, 40u);
  // Two objects gone (as eviction would leave them), one corrupted in place.
  ASSERT_EQ(client.Remove("t", LoadKey("obj", 3), true), ErrorCode::OK);
  ASSERT_EQ(client.Remove("t", LoadKey("obj", 9), true), ErrorCode::OK);
  auto loc = client.Locate("t", LoadKey("obj", 5));
  ASSERT_TRUE(loc.ok());
  NodeOf(loc->info.replicas[0].memory)->At(loc->info.replicas[0].memory.buffer_address)[7] ^= 1;
  const VerifyReport after = VerifyObjects(client, "t", "obj", 40, 3000);
  EXPECT_FALSE(after.ok());
  EXPECT_EQ(after.evicted, 2u);
  EXPECT_EQ(after.memory_only, 37u);
  EXPECT_EQ(after.errors, 1u);
  EXPECT_EQ(after.first_error, ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(after.first_failed_key, LoadKey("obj", 5));
}

TEST_F(ClientTest, FillStopsWhenMemoryStaysFull) {
  StartNode("small", 1 << 20);
  Client& client = MakeClient();
  // Hard-pinned objects nothing may evict hold most of the segment.
  PutOptions pinned;
  pinned.config.hard_pin = true;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client.Put("t", "pinned-" + std::to_string(i), std::string(300 << 10, 'p'), pinned),
              ErrorCode::OK);
  }
  const FillReport fill = FillObjects(client, "t", "big", 10, 300 << 10, 1, 200);
  EXPECT_EQ(fill.error, ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_LT(fill.stored, 10u);
  EXPECT_GT(fill.retries, 0u);
  EXPECT_EQ(fill.failed_key, LoadKey("big", fill.stored));
}

TEST_F(ClientTest, TenantsExistAndRemove) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("t1", "key", "one"), ErrorCode::OK);
  ASSERT_EQ(client.Put("t2", "key", "two"), ErrorCode::OK);
  EXPECT_EQ(*client.Get("t1", "key"), "one");
  EXPECT_EQ(*client.Get("t2", "key"), "two");
  EXPECT_TRUE(*client.Exist("t1", "key"));
  EXPECT_FALSE(*client.Exist("t1", "nope"));
  // The Gets above leased the object.
  EXPECT_EQ(client.Remove("t1", "key"), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(client.Remove("t1", "key", /*force=*/true), ErrorCode::OK);
  EXPECT_FALSE(*client.Exist("t1", "key"));
  EXPECT_TRUE(*client.Exist("t2", "key"));
}

TEST_F(ClientTest, TwoReplicasFailOverWhenOneRegionIsGone) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient();
  PutOptions two;
  two.config.replica_num = 2;
  const std::string value = Pattern(100'000, 3);
  ASSERT_EQ(client.Put("", "both", value, two), ErrorCode::OK);
  auto loc = client.Locate("", "both");
  ASSERT_TRUE(loc.ok());
  ASSERT_EQ(loc->info.replicas.size(), 2u);
  TestNode* first = NodeOf(loc->info.replicas[0].memory);
  TestNode* second = NodeOf(loc->info.replicas[1].memory);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_NE(first, second);
  // Each replica holds the bytes.
  EXPECT_EQ(std::memcmp(first->At(loc->info.replicas[0].memory.buffer_address), value.data(),
                        value.size()), 0);
  EXPECT_EQ(std::memcmp(second->At(loc->info.replicas[1].memory.buffer_address), value.data(),
                        value.size()), 0);

  first->engine->UnregisterMemory(first->node->region());
  auto got = client.Get("", "both");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);

  second->engine->UnregisterMemory(second->node->region());
  EXPECT_EQ(client.Get("", "both").error(), ErrorCode::TRANSFER_FAIL);
  // A put to an unreachable segment is revoked.
  PutOptions on_a;
  on_a.config.preferred_segments = {first->node->segment().name};
  EXPECT_EQ(client.Put("", "revoked", "x", on_a), ErrorCode::TRANSFER_FAIL);
  EXPECT_FALSE(*client.Exist("", "revoked"));
}

TEST_F(ClientTest, ReadFinishingAfterTheLeaseIsLeaseExpired) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("", "leased", "value"), ErrorCode::OK);
  advance_ms_ = kLeaseTtlMs - 1;
  auto got = client.Get("", "leased");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, "value");
  advance_ms_ = kLeaseTtlMs;
  EXPECT_EQ(client.Get("", "leased").error(), ErrorCode::LEASE_EXPIRED);
  auto batch = client.BatchGet("", {"leased"});
  EXPECT_EQ(batch[0].error(), ErrorCode::LEASE_EXPIRED);
}

TEST_F(ClientTest, CorruptedReplicaIsChecksumMismatchAndFailsOver) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient();
  PutOptions options;
  options.config.replica_num = 2;
  options.compute_checksum = true;
  const std::string value = Pattern(5000, 9);
  ASSERT_EQ(client.Put("", "sum", value, options), ErrorCode::OK);
  auto loc = client.Locate("", "sum");
  ASSERT_TRUE(loc.ok());
  ASSERT_TRUE(loc->info.checksum.has_value());
  EXPECT_EQ(*loc->info.checksum, ObjectChecksum(value));
  const MemoryDescriptor& r0 = loc->info.replicas[0].memory;
  const MemoryDescriptor& r1 = loc->info.replicas[1].memory;
  NodeOf(r0)->At(r0.buffer_address)[1234] ^= 0x20;
  auto got = client.Get("", "sum");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
  NodeOf(r1)->At(r1.buffer_address)[0] ^= 0x01;
  EXPECT_EQ(client.Get("", "sum").error(), ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(client.BatchGet("", {"sum"})[0].error(), ErrorCode::CHECKSUM_MISMATCH);
}

TEST_F(ClientTest, UnknownProtocolAndDiskOnlyObjects) {
  StartNode("seg-a");
  Client& client = MakeClient();
  MasterClientOptions mo;
  mo.address = address_;
  MasterClient other(mo);
  Segment bogus = MakeTestSegment("bogus", 0x1000000, 1 << 20, "10.9.9.9:1");
  bogus.protocol = "carrier-pigeon";
  ASSERT_EQ(other.MountSegment(bogus), ErrorCode::OK);
  PutConfig on_bogus;
  on_bogus.preferred_segments = {"bogus"};
  ASSERT_TRUE(other.PutStart("", "pigeon", 10, on_bogus).ok());
  ASSERT_EQ(other.PutEnd("", "pigeon"), ErrorCode::OK);
  EXPECT_EQ(client.Get("", "pigeon").error(), ErrorCode::INVALID_PARAMS);
  PutOptions put_bogus;
  put_bogus.config = on_bogus;
  EXPECT_EQ(client.Put("", "pigeon2", "0123456789", put_bogus), ErrorCode::INVALID_PARAMS);
  EXPECT_FALSE(*client.Exist("", "pigeon2"));

  // An object with only a LOCAL_DISK replica, and no ucx engine in this
  // client to reach its node: a descriptor this client cannot use.
  ASSERT_EQ(other.MountLocalDisk(false, "10.9.9.9:2"), ErrorCode::OK);
  OffloadedObject disk{"", "on-disk", StorageObjectMetadata{1, 0, 7, 100, "10.9.9.9:2"}};
  auto added = other.NotifyOffloadSuccess({disk});
  ASSERT_TRUE(added.ok());
  ASSERT_EQ((*added)[0], ErrorCode::OK);
  EXPECT_EQ(client.Get("", "on-disk").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.BatchGet("", {"on-disk"})[0].error(), ErrorCode::INVALID_PARAMS);
}

// LOCAL_DISK replicas: a real LocalDiskService over a bucket backend in a
// temporary directory, on a node-side UcxEngine listening on 127.0.0.1; the
// client reaches it through its own UcxEngine (beside the loopback one the
// MEMORY replicas use). The master learns of the disk copies as a node
// reports them: MountLocalDisk + NotifyOffloadSuccess.
class ClientLocalDiskTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    StorageConfig config;
    config.backend = StorageConfig::Backend::kBucket;
    config.storage_path = dir_path_.path();
    std::string error;
    auto backend = OpenStorageBackend(config, nullptr, &error);
    ASSERT_TRUE(backend.ok()) << error;
    backend_ = std::move(backend).value();
    const TransportOptions node_options = testing::UcxTestOptions(true);
    auto node = UcxEngine::Create(node_options);
    ASSERT_TRUE(node.ok());
    node_ucx_ = std::move(node).value();
    service_ = std::make_unique<LocalDiskService>(&node_ucx_->am(), backend_.get());
    MasterClientOptions mo;
    mo.address = address_;
    mo.client_id = node_options.client_id;
    disk_master_ = std::make_unique<MasterClient>(mo);
    ASSERT_EQ(disk_master_->MountLocalDisk(false, node_ucx_->endpoint()), ErrorCode::OK);
  }

  void TearDown() override {
    client_.reset();
    service_.reset();  // before the engine whose UcxAm it uses
    node_ucx_.reset();
    ClientTest::TearDown();
  }

  // A client with the slow loopback engine and a ucx engine.
  Client& MakeDiskClient() {
    ClientOptions options;
    options.master = address_;
    options.protocol = "none";
    options.staging_bytes = 8 << 20;
    options.clock = &client_clock_;
    options.location_cache = cache_options_;
    std::vector<std::unique_ptr<TransportEngine>> engines;
    engines.push_back(std::make_unique<SlowEngine>(&client_clock_, &advance_ms_));
    auto ucx = UcxEngine::Create(testing::UcxTestOptions(false));
    EXPECT_TRUE(ucx.ok());
    if (ucx.ok()) engines.push_back(std::move(ucx).value());
    auto client = Client::Create(options, std::move(engines));
    EXPECT_TRUE(client.ok()) << ErrorCodeName(client.error());
    client_ = std::move(client).value();
    return *client_;
  }

  // Stores `value` in the node's SSD store and reports it to the master
  // with its checksum, as a node does; `claimed` (not null): reported with
  // the checksum of those bytes instead (a copy that rotted after it was
  // checksummed), so the master attaches it to the object they are of.
  void OnDisk(const std::string& tenant, const std::string& key, const std::string& value,
              const std::string* claimed = nullptr) {
    ASSERT_TRUE(backend_->WriteBatch({{tenant, key, value}}).ok()) << key;
    OffloadedObject item{
        tenant, key,
        StorageObjectMetadata{0, 0, static_cast<int64_t>(key.size()),
                              static_cast<int64_t>(value.size()), node_ucx_->endpoint()},
        ObjectChecksum(claimed != nullptr ? *claimed : value)};
    auto added = disk_master_->NotifyOffloadSuccess({item});
    ASSERT_TRUE(added.ok());
    ASSERT_EQ((*added)[0], ErrorCode::OK);
  }

  // The MEMORY replica's node loses its registration: reads of it fail.
  void LoseMemoryReplica() {
    for (auto& n : nodes_) n->engine->UnregisterMemory(n->node->region());
  }

  testing::TempDir dir_path_;
  std::unique_ptr<StorageBackend> backend_;
  std::unique_ptr<UcxEngine> node_ucx_;
  std::unique_ptr<LocalDiskService> service_;
  std::unique_ptr<MasterClient> disk_master_;
};

TEST_F(ClientLocalDiskTest, DiskOnlyObjectIsReadFromItsNode) {
  Client& client = MakeDiskClient();
  const std::string value = Pattern(300'000, 5);
  OnDisk("t", "disk-only", value);
  auto loc = client.Locate("t", "disk-only");
  ASSERT_TRUE(loc.ok());
  ASSERT_EQ(loc->info.replicas.size(), 1u);
  EXPECT_EQ(loc->info.replicas[0].type, ReplicaType::LOCAL_DISK);
  EXPECT_EQ(loc->info.replicas[0].disk.endpoint, node_ucx_->endpoint());
  auto got = client.Get("t", "disk-only");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
  auto batch = client.BatchGet("t", {"disk-only", "missing"});
  ASSERT_TRUE(batch[0].ok()) << ErrorCodeName(batch[0].error());
  EXPECT_EQ(*batch[0], value);
  EXPECT_EQ(batch[1].error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(service_->stats().requests, 2u);
  EXPECT_EQ(service_->stats().bytes_served, 2 * value.size());
}

TEST_F(ClientLocalDiskTest, FailsOverToLocalDiskWhenMemoryReadsFail) {
  StartNode("seg-a");
  Client& client = MakeDiskClient();
  const std::string value = Pattern(70'000, 6);
  ASSERT_EQ(client.Put("t", "both", value), ErrorCode::OK);
  OnDisk("t", "both", value);
  auto loc = client.Locate("t", "both");
  ASSERT_TRUE(loc.ok());
  ASSERT_EQ(loc->info.replicas.size(), 2u);
  EXPECT_EQ(loc->info.replicas[0].type, ReplicaType::MEMORY);
  EXPECT_EQ(loc->info.replicas[1].type, ReplicaType::LOCAL_DISK);
  ASSERT_TRUE(client.Get("t", "both").ok());
  EXPECT_EQ(service_->stats().requests, 0u);  // MEMORY first while it works

  LoseMemoryReplica();
  auto got = client.Get("t", "both");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
  EXPECT_EQ(service_->stats().requests, 1u);
  auto batch = client.BatchGet("t", {"both"});
  ASSERT_TRUE(batch[0].ok()) << ErrorCodeName(batch[0].error());
  EXPECT_EQ(*batch[0], value);
  EXPECT_EQ(service_->stats().requests, 2u);
}

TEST_F(ClientLocalDiskTest, PreferLocalDiskReadsTheDiskCopyWhileMemoryWorks) {
  StartNode("seg-a");
  Client& client = MakeDiskClient();
  const std::string value = Pattern(10'000, 1);
  ASSERT_EQ(client.Put("t", "k", value), ErrorCode::OK);
  OnDisk("t", "k", value);  // the node's service counts the reads it serves
  EXPECT_EQ(*client.Get("t", "k"), value);
  EXPECT_EQ(service_->stats().requests, 0u);
  GetOptions prefer;
  prefer.prefer_local_disk = true;
  auto got = client.Get("t", "k", prefer);
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
  EXPECT_EQ(service_->stats().requests, 1u);
  auto loc = client.Locate("t", "k", prefer);
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->info.replicas[0].type, ReplicaType::LOCAL_DISK);
}

// The cache keeps one order and prefer_local_disk reorders a cached
// location; an entry made before the node offloaded the object lacks its
// LOCAL_DISK replica, so prefer_local_disk asks the master. And
// use_location_cache = false asks the master (and refreshes the entry).
TEST_F(ClientLocalDiskTest, CachedLocationsFollowPreferLocalDisk) {
  StartNode("seg-a");
  Client& client = MakeDiskClient();
  const std::string value = Pattern(10'000, 1);
  ASSERT_EQ(client.Put("t", "k", value), ErrorCode::OK);
  EXPECT_EQ(*client.Get("t", "k"), value);  // cached: MEMORY only
  OnDisk("t", "k", value);                  // the node's service counts the reads it serves
  GetOptions prefer;
  prefer.prefer_local_disk = true;
  EXPECT_EQ(*client.Get("t", "k", prefer), value);  // a miss: the entry had no disk copy
  EXPECT_EQ(service_->stats().requests, 1u);
  EXPECT_EQ(client.location_cache_stats().misses, 2u);
  EXPECT_EQ(*client.Get("t", "k", prefer), value);
  EXPECT_EQ(service_->stats().requests, 2u);
  EXPECT_EQ(*client.Get("t", "k"), value);
  EXPECT_EQ(service_->stats().requests, 2u);
  auto loc = client.Locate("t", "k", prefer);
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->info.replicas[0].type, ReplicaType::LOCAL_DISK);
  loc = client.Locate("t", "k");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->info.replicas[0].type, ReplicaType::MEMORY);
  EXPECT_EQ(client.location_cache_stats().hits, 4u);
  GetOptions fresh;
  fresh.use_location_cache = false;
  EXPECT_EQ(*client.Get("t", "k", fresh), value);
  EXPECT_EQ(service_->stats().requests, 2u);
  const LocationCacheStats s = client.location_cache_stats();
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.entries, 1u);
}

TEST_F(ClientLocalDiskTest, DiskBytesThatDoNotMatchTheChecksumAreChecksumMismatch) {
  StartNode("seg-a");
  Client& client = MakeDiskClient();
  const std::string value = Pattern(5000, 3);
  std::string corrupt = value;
  corrupt[4321] ^= 0x10;
  PutOptions with_sum;
  with_sum.compute_checksum = true;
  ASSERT_EQ(client.Put("t", "sum", value, with_sum), ErrorCode::OK);
  OnDisk("t", "sum", corrupt, &value);
  GetOptions prefer;
  prefer.prefer_local_disk = true;
  // The disk copy fails its checksum; the MEMORY replica answers.
  auto got = client.Get("t", "sum", prefer);
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
  EXPECT_EQ(service_->stats().requests, 1u);
  LoseMemoryReplica();
  EXPECT_EQ(client.Get("t", "sum").error(), ErrorCode::CHECKSUM_MISMATCH);
}

TEST_F(ClientLocalDiskTest, DiskReadFinishingAfterTheLeaseIsLeaseExpired) {
  StartNode("seg-a");
  Client& client = MakeDiskClient();
  ASSERT_EQ(client.Put("t", "leased", "value"), ErrorCode::OK);
  OnDisk("t", "leased", "value");
  LoseMemoryReplica();
  // The failed MEMORY read takes the whole lease; the disk read then ends late.
  advance_ms_ = kLeaseTtlMs;
  EXPECT_EQ(client.Get("t", "leased").error(), ErrorCode::LEASE_EXPIRED);
  EXPECT_EQ(service_->stats().requests, 1u);
  advance_ms_ = 0;
  EXPECT_EQ(*client.Get("t", "leased"), "value");
}

TEST_F(ClientLocalDiskTest, NodeGoneIsTransferFail) {
  Client& client = MakeDiskClient();
  OnDisk("t", "gone", "bytes");
  EXPECT_EQ(*client.Get("t", "gone"), "bytes");
  service_.reset();
  node_ucx_.reset();
  EXPECT_EQ(client.Get("t", "gone").error(), ErrorCode::TRANSFER_FAIL);
}

TEST_F(ClientLocalDiskTest, DiskBytesLandInAnUnregisteredBuffer) {
  Client& client = MakeDiskClient();
  const std::string value = Pattern(200'000, 6);
  OnDisk("t", "landing", value);
  auto loc = client.Locate("t", "landing");
  ASSERT_TRUE(loc.ok());
  // Two-sided: the reply lands in any memory (a MEMORY replica would need
  // RegisterBuffer), and not one byte past the object.
  std::vector<char> buffer(value.size() + 100, 'g');
  EXPECT_EQ(client.Read(*loc, buffer.data(), value.size() - 1), ErrorCode::BUFFER_OVERFLOW);
  ASSERT_EQ(client.Read(*loc, buffer.data(), buffer.size()), ErrorCode::OK);
  EXPECT_EQ(std::string(buffer.data(), value.size()), value);
  EXPECT_EQ(std::string(buffer.data() + value.size(), 100), std::string(100, 'g'));
}

// The same LOCAL_DISK read without UCX: the node's service on a loopback
// engine's messages, a client whose only engine is loopback.
TEST_F(ClientLocalDiskTest, DiskOnlyObjectOverLoopbackMessages) {
  LoopbackEngine node_engine{TransportOptions{}};
  LocalDiskService service(node_engine.messages(), backend_.get());
  MasterClientOptions mo;
  mo.address = address_;
  MasterClient node_master(mo);
  ASSERT_EQ(node_master.MountLocalDisk(false, node_engine.endpoint()), ErrorCode::OK);
  const std::string value = Pattern(100'000, 7);
  ASSERT_TRUE(backend_->WriteBatch({{"t", "lb", value}}).ok());
  OffloadedObject item{"t", "lb",
                       StorageObjectMetadata{0, 0, 2, static_cast<int64_t>(value.size()),
                                             node_engine.endpoint()}};
  ASSERT_TRUE(node_master.NotifyOffloadSuccess({item}).ok());
  ClientOptions options;
  options.master = address_;
  options.protocol = "loopback";
  options.staging_bytes = 1 << 20;
  options.clock = &client_clock_;
  auto client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  auto got = (*client)->Get("t", "lb");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value);
  EXPECT_EQ(service.stats().requests, 1u);
  EXPECT_EQ(service.stats().bytes_served, value.size());
}

TEST_F(ClientTest, BatchPutGetExist) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient(/*staging_bytes=*/1 << 20);  // several rounds
  std::vector<std::string> keys, values;
  for (int i = 0; i < 12; ++i) {
    keys.push_back("b" + std::to_string(i));
    values.push_back(Pattern(i == 5 ? (2 << 20) : 1000 + 40'000 * i, i));
  }
  std::vector<std::string_view> views(values.begin(), values.end());
  PutOptions two;
  two.config.replica_num = 2;
  auto put = client.BatchPut("", keys, views, two);
  ASSERT_EQ(put.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(put[i], ErrorCode::OK) << keys[i];
  // Every key carries its own checksum (the default), from one batch call.
  for (size_t i = 0; i < keys.size(); ++i) {
    auto loc = client.Locate("", keys[i]);
    ASSERT_TRUE(loc.ok() && loc->info.checksum.has_value()) << keys[i];
    EXPECT_EQ(*loc->info.checksum, ObjectChecksum(values[i])) << keys[i];
  }
  // A second batch: the existing key fails alone.
  auto again = client.BatchPut("", {"b0", "fresh"}, {"x", "fresh-value"});
  EXPECT_EQ(again[0], ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(again[1], ErrorCode::OK);

  std::vector<std::string> wanted = keys;
  wanted.push_back("missing");
  wanted.push_back("fresh");
  auto got = client.BatchGet("", wanted);
  ASSERT_EQ(got.size(), wanted.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << ErrorCodeName(got[i].error());
    EXPECT_EQ(*got[i], values[i]) << keys[i];
  }
  EXPECT_EQ(got[keys.size()].error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*got[keys.size() + 1], "fresh-value");

  // One node's region gone: the batch read fails over item by item.
  nodes_[0]->engine->UnregisterMemory(nodes_[0]->node->region());
  got = client.BatchGet("", keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << ErrorCodeName(got[i].error());
    EXPECT_EQ(*got[i], values[i]);
  }
  auto exist = client.BatchExist("", {"b1", "nope"});
  EXPECT_TRUE(*exist[0]);
  EXPECT_FALSE(*exist[1]);
  EXPECT_EQ(client.BatchPut("", {"a", "b"}, {"x"})[0], ErrorCode::INVALID_PARAMS);
}

TEST_F(ClientTest, ZeroCopyReadIntoARegisteredBuffer) {
  StartNode("seg-a");
  Client& client = MakeClient();
  const std::string value = Pattern(70'000, 4);
  ASSERT_EQ(client.Put("", "zc", value), ErrorCode::OK);
  std::vector<char> buffer(1 << 17);
  auto loc = client.Locate("", "zc");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(client.Read(*loc, buffer.data(), buffer.size()), ErrorCode::INVALID_PARAMS);
  ASSERT_EQ(client.RegisterBuffer(buffer.data(), buffer.size()), ErrorCode::OK);
  EXPECT_EQ(client.Read(*loc, buffer.data(), 10), ErrorCode::BUFFER_OVERFLOW);
  ASSERT_EQ(client.Read(*loc, buffer.data(), buffer.size()), ErrorCode::OK);
  EXPECT_EQ(std::string(buffer.data(), value.size()), value);
  client.UnregisterBuffer(buffer.data());
}

TEST_F(ClientTest, ConcurrentCallersShareOneClient) {
  StartNode("seg-a");
  Client& client = MakeClient(/*staging_bytes=*/256 << 10);  // callers wait for staging
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::string key = "c" + std::to_string(t) + "-" + std::to_string(i);
        const std::string value = Pattern(100'000 + i, t);
        if (client.Put("", key, value) != ErrorCode::OK) ++failures;
        auto got = client.Get("", key);
        if (!got.ok() || *got != value) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- location cache ----------------------------------------------------------

// The strongest proof that a hot get asks nothing of the master: the master
// stops, and the hot key is still read until deadline - margin, while a key
// this client never looked up fails.
TEST_F(ClientTest, HotKeyIsReadWithoutTheMasterUntilDeadlineMinusMargin) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("t", "hot", "hot-value"), ErrorCode::OK);
  ASSERT_EQ(client.Put("t", "cold", "cold-value"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "hot"), "hot-value");  // the lookup
  ASSERT_EQ(*client.Get("t", "hot"), "hot-value");  // from the cache
  EXPECT_EQ(client.location_cache_stats().hits, 1u);
  EXPECT_EQ(client.location_cache_stats().misses, 1u);

  server_->Stop();
  EXPECT_EQ(client.Get("t", "cold").error(), ErrorCode::RPC_FAIL);
  client_clock_.AdvanceMs(kLeaseTtlMs - kCacheMarginMs - 1);
  auto hot = client.Get("t", "hot");
  ASSERT_TRUE(hot.ok()) << ErrorCodeName(hot.error());
  EXPECT_EQ(*hot, "hot-value");
  auto batch = client.BatchGet("t", {"hot", "cold"});
  ASSERT_TRUE(batch[0].ok()) << ErrorCodeName(batch[0].error());
  EXPECT_EQ(*batch[0], "hot-value");
  EXPECT_EQ(batch[1].error(), ErrorCode::RPC_FAIL);
  client_clock_.AdvanceMs(1);  // at deadline - margin: a lookup again
  EXPECT_EQ(client.Get("t", "hot").error(), ErrorCode::RPC_FAIL);
  const LocationCacheStats s = client.location_cache_stats();
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.expired, 1u);
  EXPECT_EQ(s.entries, 0u);
}

TEST_F(ClientTest, WithTheCacheOffEveryGetAsksTheMaster) {
  cache_options_ = CacheOptions(/*max_entries=*/0);
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("t", "hot", "hot-value"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "hot"), "hot-value");
  server_->Stop();
  EXPECT_EQ(client.Get("t", "hot").error(), ErrorCode::RPC_FAIL);
  EXPECT_EQ(client.BatchGet("t", {"hot"})[0].error(), ErrorCode::RPC_FAIL);
  const LocationCacheStats s = client.location_cache_stats();
  EXPECT_EQ(s.hits + s.misses + s.entries, 0u);
}

TEST_F(ClientTest, BatchGetTakesCachedKeysAndLooksUpTheRest) {
  StartNode("seg-a");
  Client& client = MakeClient();
  for (const char* key : {"a", "b", "c"}) ASSERT_EQ(client.Put("t", key, key), ErrorCode::OK);
  auto first = client.BatchGet("t", {"a", "b"});
  ASSERT_TRUE(first[0].ok() && first[1].ok());
  auto second = client.BatchGet("t", {"a", "b", "c", "missing"});
  EXPECT_EQ(*second[0], "a");
  EXPECT_EQ(*second[1], "b");
  EXPECT_EQ(*second[2], "c");
  EXPECT_EQ(second[3].error(), ErrorCode::OBJECT_NOT_FOUND);
  const LocationCacheStats s = client.location_cache_stats();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 4u);
  EXPECT_EQ(s.entries, 3u);
}

TEST_F(ClientTest, RemoveDropsTheEntry) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("t", "k", "value"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "k"), "value");
  // This client's own lease keeps the object; the entry goes all the same.
  EXPECT_EQ(client.Remove("t", "k"), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(client.location_cache_stats().invalidated, 1u);
  ASSERT_EQ(*client.Get("t", "k"), "value");
  ASSERT_EQ(client.Remove("t", "k", /*force=*/true), ErrorCode::OK);
  EXPECT_EQ(client.Get("t", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client.BatchGet("t", {"k"})[0].error(), ErrorCode::OBJECT_NOT_FOUND);
  // The empty tenant is the default one, for the cache as for the master.
  ASSERT_EQ(client.Put("", "d", "value"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("", "d"), "value");
  ASSERT_EQ(client.Remove("default", "d", /*force=*/true), ErrorCode::OK);
  EXPECT_EQ(client.Get("", "d").error(), ErrorCode::OBJECT_NOT_FOUND);
}

// Another client removes the key (forced) and this one puts a new value:
// the put drops the cached location of the old object, whose bytes are
// still in the node's memory.
TEST_F(ClientTest, APutOfTheKeyReadsTheNewValue) {
  StartNode("seg-a");
  Client& client = MakeClient();
  MasterClientOptions mo;
  mo.address = address_;
  MasterClient other(mo);
  ASSERT_EQ(client.Put("t", "k", "old value"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "k"), "old value");
  ASSERT_EQ(other.Remove("t", "k", /*force=*/true), ErrorCode::OK);
  ASSERT_EQ(client.Put("t", "k", "the new, longer value"), ErrorCode::OK);
  EXPECT_EQ(*client.Get("t", "k"), "the new, longer value");
  std::vector<std::string_view> values = {"batch value"};
  ASSERT_EQ(other.Remove("t", "k", /*force=*/true), ErrorCode::OK);
  ASSERT_EQ(client.BatchPut("t", {"k"}, values)[0], ErrorCode::OK);
  EXPECT_EQ(*client.BatchGet("t", {"k"})[0], "batch value");
  EXPECT_EQ(client.location_cache_stats().invalidated, 2u);
}

// The case the lease does not cover: another client removes the object
// (forced) and its memory is reused. The checksum catches the reused bytes;
// the cached location is dropped and a fresh lookup finds the new object.
TEST_F(ClientTest, ACachedLocationThatFailsItsReadIsLookedUpAgain) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient();
  MasterClientOptions mo;
  mo.address = address_;
  MasterClient other(mo);
  PutOptions with_sum;
  with_sum.compute_checksum = true;
  with_sum.config.preferred_segments = {"seg-a"};
  const std::string v1 = Pattern(5000, 1), v2 = Pattern(5000, 2);
  ASSERT_EQ(client.Put("t", "k", v1, with_sum), ErrorCode::OK);
  auto old = client.Locate("t", "k");
  ASSERT_TRUE(old.ok());
  ASSERT_EQ(other.Remove("t", "k", /*force=*/true), ErrorCode::OK);
  PutConfig on_b;
  on_b.preferred_segments = {"seg-b"};
  on_b.checksum = ObjectChecksum(v2);
  auto replicas = other.PutStart("t", "k", v2.size(), on_b);
  ASSERT_TRUE(replicas.ok());
  const MemoryDescriptor& at_b = (*replicas)[0].memory;
  std::memcpy(NodeOf(at_b)->At(at_b.buffer_address), v2.data(), v2.size());
  ASSERT_EQ(other.PutEnd("t", "k"), ErrorCode::OK);
  const MemoryDescriptor& at_a = old->info.replicas[0].memory;
  NodeOf(at_a)->At(at_a.buffer_address)[10] ^= 1;  // seg-a's memory reused

  auto got = client.Get("t", "k");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, v2);
  LocationCacheStats s = client.location_cache_stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.invalidated, 1u);
  EXPECT_EQ(*client.Get("t", "k"), v2);  // the fresh location is cached
  EXPECT_EQ(client.location_cache_stats().hits, 2u);

  // A zero-copy Read of the stale location fails and drops the entry too.
  std::vector<char> buffer(v1.size());
  ASSERT_EQ(client.RegisterBuffer(buffer.data(), buffer.size()), ErrorCode::OK);
  EXPECT_EQ(client.Read(*old, buffer.data(), buffer.size()), ErrorCode::CHECKSUM_MISMATCH);
  client.UnregisterBuffer(buffer.data());
  EXPECT_EQ(client.location_cache_stats().invalidated, 2u);
}

// A read from a cached location still ends before the lease deadline or
// answers LEASE_EXPIRED; Get then reads again on a fresh lookup.
TEST_F(ClientTest, ACachedReadEndingAfterTheLeaseIsDoneAgainFresh) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("t", "k", "value"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "k"), "value");
  client_clock_.AdvanceMs(kLeaseTtlMs - kCacheMarginMs - 1);  // the entry's last ms
  advance_ms_ = kCacheMarginMs + 1;                           // reads end past the deadline
  auto got = client.Get("t", "k");
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, "value");
  const LocationCacheStats s = client.location_cache_stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.invalidated, 1u);
  EXPECT_EQ(s.misses, 1u);  // the first Get's; the fresh one bypasses the cache
  EXPECT_EQ(s.entries, 1u);
}

// Stored checksums must stay comparable across versions: pin the function.
TEST(ObjectChecksumTest, IsXxh3With64BitsAndSeedZero) {
  EXPECT_EQ(ObjectChecksum(""), 0x2D06800538D394C2ull);
  EXPECT_NE(ObjectChecksum("a"), ObjectChecksum("b"));
}

TEST_F(ClientTest, CreateRejectsBadOptions) {
  ClientOptions options;
  options.master = "no-port";
  EXPECT_EQ(Client::Create(options).error(), ErrorCode::INVALID_PARAMS);
  options.master = address_;
  options.protocol = "smoke-signals";
  EXPECT_EQ(Client::Create(options).error(), ErrorCode::INVALID_PARAMS);
  options.protocol = "none";  // and no engines given
  EXPECT_EQ(Client::Create(options).error(), ErrorCode::INVALID_PARAMS);
  options.protocol = "loopback";
  options.staging_bytes = 32;  // 0 is "no staging"; else at least 64
  EXPECT_EQ(Client::Create(options).error(), ErrorCode::INVALID_PARAMS);
  options.staging_bytes = 1 << 20;
  options.location_cache = CacheOptions();
  options.location_cache.margin_ms = -1;  // would serve locations past their lease
  EXPECT_EQ(Client::Create(options).error(), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark
