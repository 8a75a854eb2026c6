// Directory rules for objects: the put lifecycle, reads and leases, removal,
// pins, groups, tenants and batches.
#include "directory/directory.h"

#include <set>
#include <string>
#include <vector>

#include "directory/directory_test_util.h"

namespace shelfmark {
namespace {

class ObjectsTest : public DirectoryFixture {
 protected:
  void SetUp() override { seg_ = Mount(node_, "seg-a"); }
  Segment seg_;
};

TEST_F(ObjectsTest, PutLifecycleMakesReplicasComplete) {
  auto started = dir_->PutStart(writer_, "", "k", 100, {});
  ASSERT_TRUE(started.ok());
  ASSERT_EQ(started->size(), 1u);
  const ReplicaDescriptor& d = (*started)[0];
  EXPECT_EQ(d.status, ReplicaStatus::PROCESSING);
  EXPECT_EQ(d.type, ReplicaType::MEMORY);
  EXPECT_EQ(d.memory.endpoint, seg_.endpoint);
  EXPECT_EQ(d.memory.rkey, seg_.rkey);
  EXPECT_EQ(d.memory.size, 100u);
  EXPECT_GE(d.memory.buffer_address, seg_.base);
  EXPECT_LE(d.memory.buffer_address + 100, seg_.base + seg_.size);

  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_FALSE(*dir_->ExistKey("", "k"));
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  auto got = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->replicas.size(), 1u);
  EXPECT_EQ(got->replicas[0].status, ReplicaStatus::COMPLETE);
  EXPECT_EQ(got->replicas[0].memory.buffer_address, d.memory.buffer_address);
  EXPECT_EQ(got->size, 100u);
  EXPECT_TRUE(*dir_->ExistKey("", "k"));
  EXPECT_EQ(dir_->Stats().key_count, 1u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 128u);  // 64-byte alignment
}

TEST_F(ObjectsTest, PutStartRejectsBadInput) {
  EXPECT_EQ(dir_->PutStart(writer_, "", "", 10, {}).error(), ErrorCode::INVALID_KEY);
  EXPECT_EQ(dir_->PutStart(writer_, "", std::string(5000, 'k'), 10, {}).error(),
            ErrorCode::INVALID_KEY);
  EXPECT_EQ(dir_->PutStart(writer_, "", "k", 0, {}).error(), ErrorCode::INVALID_PARAMS);
  PutConfig zero;
  zero.replica_num = 0;
  EXPECT_EQ(dir_->PutStart(writer_, "", "k", 10, zero).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->PutStart(UUID{}, "", "k", 10, {}).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->PutStart(writer_, "", "big", 2 << 20, {}).error(),
            ErrorCode::NO_AVAILABLE_HANDLE);
  EXPECT_EQ(dir_->Stats().key_count, 0u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(ObjectsTest, DuplicatePutIsRefusedAndOnlyTheWriterEndsIt) {
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 10, {}).ok());
  EXPECT_EQ(dir_->PutStart(writer_, "", "k", 10, {}).error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(dir_->PutEnd(UUID::Generate(), "", "k"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->PutRevoke(UUID::Generate(), "", "k"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->PutEnd(writer_, "", "missing"), ErrorCode::OBJECT_NOT_FOUND);
  ASSERT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->PutStart(writer_, "", "k", 10, {}).error(), ErrorCode::OBJECT_ALREADY_EXISTS);
}

TEST_F(ObjectsTest, RevokeFreesSpaceAndForgetsTheObject) {
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 1000, {}).ok());
  EXPECT_GT(dir_->Stats().allocated_bytes, 0u);
  ASSERT_EQ(dir_->PutRevoke(writer_, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->Stats().key_count, 0u);
}

TEST_F(ObjectsTest, StalePutIsReplacedAfterDiscardTimeoutOnly) {
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 10, {}).ok());
  clock_.AdvanceMs(dir_->options().put_start_discard_timeout_ms - 1);
  EXPECT_EQ(dir_->PutStart(writer_, "", "k", 10, {}).error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  clock_.AdvanceMs(2);
  UUID other = UUID::Generate();
  ASSERT_TRUE(dir_->PutStart(other, "", "k", 10, {}).ok());
  EXPECT_EQ(dir_->PutEnd(writer_, "", "k"), ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->PutEnd(other, "", "k"), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 64u);
}

TEST_F(ObjectsTest, BackgroundReclaimsPutsPastReleaseTimeout) {
  ASSERT_TRUE(dir_->PutStart(writer_, "", "k", 10, {}).ok());
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().key_count, 1u);
  clock_.AdvanceMs(dir_->options().put_start_release_timeout_ms + 1);
  dir_->Ping(node_);  // keep the node alive
  dir_->RunBackgroundOnce();
  EXPECT_EQ(dir_->Stats().key_count, 0u);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(ObjectsTest, ReadGrantsLeaseThatBlocksRemoveUntilExpiry) {
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  EXPECT_EQ(dir_->Remove("", "k", false), ErrorCode::OK);  // PutEnd grants no lease
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  auto got = dir_->GetReplicaList("", "k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->lease_ttl_ms, dir_->options().default_kv_lease_ttl_ms);
  EXPECT_EQ(dir_->Remove("", "k", false), ErrorCode::OBJECT_HAS_LEASE);
  clock_.AdvanceMs(dir_->options().default_kv_lease_ttl_ms + 1);
  EXPECT_EQ(dir_->Remove("", "k", false), ErrorCode::OK);
  EXPECT_EQ(dir_->Remove("", "k", false), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(ObjectsTest, ForceRemovesLeasedObject) {
  ASSERT_EQ(Put("k"), ErrorCode::OK);
  ASSERT_TRUE(*dir_->ExistKey("", "k"));  // Exist grants a lease too
  EXPECT_EQ(dir_->Remove("", "k", false), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(dir_->Remove("", "k", true), ErrorCode::OK);
  EXPECT_EQ(dir_->Stats().allocated_bytes, 0u);
}

TEST_F(ObjectsTest, RemoveAllSkipsLeasedUnlessForced) {
  for (int i = 0; i < 10; ++i) ASSERT_EQ(Put("k" + std::to_string(i)), ErrorCode::OK);
  ASSERT_TRUE(dir_->GetReplicaList("", "k3").ok());
  EXPECT_EQ(dir_->RemoveAll("", false, false), 9u);
  EXPECT_EQ(dir_->CountKeys("", false), 1u);
  EXPECT_EQ(dir_->RemoveAll("", false, true), 1u);
  EXPECT_EQ(dir_->CountKeys("", false), 0u);
}

TEST_F(ObjectsTest, TenantsAreIsolated) {
  ASSERT_EQ(Put("k", 100, {}, "t1"), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("t2", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(dir_->GetReplicaList("", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(dir_->GetReplicaList("t1", "k").ok());
  ASSERT_EQ(Put("k", 100, {}, "t2"), ErrorCode::OK);
  EXPECT_EQ(dir_->CountKeys("t1", false), 1u);
  EXPECT_EQ(dir_->CountKeys("", true), 2u);
  EXPECT_EQ(dir_->RemoveAll("t2", false, true), 1u);
  EXPECT_TRUE(dir_->GetReplicaList("t1", "k").ok());
  EXPECT_EQ(Put("k", 100, {}, "default"), ErrorCode::OK);
  EXPECT_TRUE(dir_->GetReplicaList("", "k").ok());  // "" is "default"
}

// A writer that hashes while it copies sends the checksum with PutEnd: it
// is on the object before the object is readable; one that differs from
// PutStart's is refused (INVALID_PARAMS) and the put stays unfinished; only
// the put's writer may set it; a batch takes none or one per key.
TEST_F(ObjectsTest, PutEndCarriesTheChecksumWhenPutStartHadNone) {
  ASSERT_TRUE(dir_->PutStart(writer_, "", "late", 100, {}).ok());
  EXPECT_EQ(dir_->PutEnd(UUID::Generate(), "", "late", ReplicaType::MEMORY, 7),
            ErrorCode::ILLEGAL_CLIENT);
  EXPECT_EQ(dir_->Stat("", "late")->checksum, std::nullopt);
  ASSERT_EQ(dir_->PutEnd(writer_, "", "late", ReplicaType::MEMORY, 0x77), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "late")->checksum, std::optional<uint64_t>(0x77));
  // A repeated PutEnd finds the version sealed: the same checksum is OK,
  // another one is refused and changes nothing.
  EXPECT_EQ(dir_->PutEnd(writer_, "", "late", ReplicaType::MEMORY, 0x77), ErrorCode::OK);
  EXPECT_EQ(dir_->PutEnd(writer_, "", "late", ReplicaType::MEMORY, 0x78),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->GetReplicaList("", "late")->checksum, std::optional<uint64_t>(0x77));
  ASSERT_EQ(Put("sealed", 100), ErrorCode::OK);  // no checksum at either step
  EXPECT_EQ(dir_->PutEnd(writer_, "", "sealed", ReplicaType::MEMORY, 9), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "sealed")->checksum, std::nullopt)
      << "a checksum never lands on an object already readable";

  PutConfig early;
  early.checksum = 5;
  ASSERT_TRUE(dir_->PutStart(writer_, "", "both", 100, early).ok());
  EXPECT_EQ(dir_->PutEnd(writer_, "", "both", ReplicaType::MEMORY, 6), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(dir_->GetReplicaList("", "both").error(), ErrorCode::REPLICA_IS_NOT_READY);
  EXPECT_EQ(dir_->Stat("", "both")->checksum, std::optional<uint64_t>(5));
  ASSERT_EQ(dir_->PutEnd(writer_, "", "both", ReplicaType::MEMORY, 5), ErrorCode::OK);
  EXPECT_EQ(dir_->GetReplicaList("", "both")->checksum, std::optional<uint64_t>(5));

  const std::vector<std::string> keys = {"b1", "b2"};
  for (const auto& r : dir_->BatchPutStart(writer_, "", keys, {10, 20}, {})) ASSERT_TRUE(r.ok());
  for (ErrorCode rc : dir_->BatchPutEnd(writer_, "", keys, {1})) {
    EXPECT_EQ(rc, ErrorCode::INVALID_PARAMS);
  }
  EXPECT_EQ(dir_->GetReplicaList("", "b1").error(), ErrorCode::REPLICA_IS_NOT_READY);
  for (ErrorCode rc : dir_->BatchPutEnd(writer_, "", keys, {11, 22})) {
    EXPECT_EQ(rc, ErrorCode::OK);
  }
  EXPECT_EQ(dir_->GetReplicaList("", "b1")->checksum, std::optional<uint64_t>(11));
  EXPECT_EQ(dir_->GetReplicaList("", "b2")->checksum, std::optional<uint64_t>(22));
}

TEST_F(ObjectsTest, StatShowsEverything) {
  PutConfig c;
  c.checksum = 0xabcdef;
  c.data_type = DataType::KVCACHE;
  c.hard_pin = true;
  c.soft_pin_ttl_ms = 5000;
  c.group_id = "g";
  ASSERT_EQ(Put("k", 77, c), ErrorCode::OK);
  auto info = dir_->Stat("", "k");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 77u);
  EXPECT_EQ(info->checksum, std::optional<uint64_t>(0xabcdef));
  EXPECT_EQ(info->data_type, DataType::KVCACHE);
  EXPECT_TRUE(info->hard_pin);
  EXPECT_EQ(info->soft_pin_remaining_ms, 5000);
  EXPECT_EQ(info->group_id, "g");
  EXPECT_EQ(info->writer, writer_);
  EXPECT_EQ(info->lease_remaining_ms, 0);
  ASSERT_EQ(info->replicas.size(), 1u);
  auto got = dir_->GetReplicaList("", "k");
  EXPECT_EQ(got->checksum, std::optional<uint64_t>(0xabcdef));
  EXPECT_EQ(dir_->Stat("", "k")->lease_remaining_ms, dir_->options().default_kv_lease_ttl_ms);
}

TEST_F(ObjectsTest, GroupsTrackMembersAcrossShards) {
  PutConfig c;
  c.group_id = "req-1";
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Put("layer" + std::to_string(i), 10, c), ErrorCode::OK);
  auto members = dir_->GroupMembers("", "req-1");
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(members->size(), 20u);
  ASSERT_EQ(dir_->Remove("", "layer3", false), ErrorCode::OK);
  EXPECT_EQ(dir_->GroupMembers("", "req-1")->size(), 19u);
  EXPECT_EQ(dir_->GroupMembers("other", "req-1").error(), ErrorCode::OBJECT_NOT_FOUND);
  dir_->RemoveAll("", false, true);
  EXPECT_EQ(dir_->GroupMembers("", "req-1").error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(ObjectsTest, ListKeysSortedByPrefixWithLimit) {
  for (const char* k : {"b/2", "a/1", "b/1", "c"}) ASSERT_EQ(Put(k), ErrorCode::OK);
  EXPECT_EQ(dir_->ListKeys("", "b/", 10), (std::vector<std::string>{"b/1", "b/2"}));
  EXPECT_EQ(dir_->ListKeys("", "", 2), (std::vector<std::string>{"a/1", "b/1"}));
  EXPECT_TRUE(dir_->ListKeys("t9", "", 10).empty());
}

TEST_F(ObjectsTest, ReplicasLandOnDistinctSegmentsPreferredFirst) {
  Mount(node_, "seg-b");
  Mount(node_, "seg-c");
  PutConfig c;
  c.replica_num = 2;
  c.preferred_segments = {"seg-c"};
  auto started = dir_->PutStart(writer_, "", "k", 10, c);
  ASSERT_TRUE(started.ok());
  ASSERT_EQ(started->size(), 2u);
  EXPECT_EQ((*started)[0].memory.endpoint, "seg-c:1234");
  EXPECT_NE((*started)[0].memory.segment_id, (*started)[1].memory.segment_id);
  c.replica_num = 4;
  EXPECT_EQ(dir_->PutStart(writer_, "", "k2", 10, c).error(), ErrorCode::NO_AVAILABLE_HANDLE);
}

// prefer_host (Mooncake's prefer_alloc_in_same_node): after the named
// segments, those whose endpoint is on that host, whatever the round-robin
// start; a host with no segment changes nothing.
TEST_F(ObjectsTest, PreferHostPlacesOnThatHostsSegmentsAfterNamedOnes) {
  const UUID other_node = UUID::Generate();
  Mount(other_node, "far-1");  // endpoint far-1:1234
  Mount(other_node, "far-2");
  for (const char* name : {"near-1", "near-2"}) {
    const uint16_t port = name[5] == '1' ? 7001 : 7002;
    ASSERT_EQ(dir_->MountSegment(node_, MakeTestSegment(name, 0x100000, 1 << 20,
                                                        "10.0.0.2:" + std::to_string(port),
                                                        std::string("rkey-") + name)),
              ErrorCode::OK);
  }
  PutConfig c;
  c.prefer_host = "10.0.0.2";
  for (int i = 0; i < 8; ++i) {  // every round-robin start
    auto started = dir_->PutStart(writer_, "", "near-" + std::to_string(i), 10, c);
    ASSERT_TRUE(started.ok());
    EXPECT_EQ((*started)[0].memory.endpoint.rfind("10.0.0.2:", 0), 0u)
        << (*started)[0].memory.endpoint;
  }
  c.replica_num = 3;  // both on the host first, the third elsewhere
  auto three = dir_->PutStart(writer_, "", "three", 10, c);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ((*three)[0].memory.endpoint.rfind("10.0.0.2:", 0), 0u);
  EXPECT_EQ((*three)[1].memory.endpoint.rfind("10.0.0.2:", 0), 0u);
  EXPECT_NE((*three)[2].memory.endpoint.rfind("10.0.0.2:", 0), 0u);
  c.replica_num = 1;
  c.preferred_segments = {"far-2"};  // a named segment still comes first
  auto named = dir_->PutStart(writer_, "", "named", 10, c);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ((*named)[0].memory.endpoint, "far-2:1234");
  c.preferred_segments.clear();
  c.prefer_host = "10.9.9.9";  // no segment there: round-robin over all
  std::set<std::string> hosts;
  for (int i = 0; i < 8; ++i) {
    auto started = dir_->PutStart(writer_, "", "any-" + std::to_string(i), 10, c);
    ASSERT_TRUE(started.ok());
    hosts.insert((*started)[0].memory.endpoint.substr(0, 4));
  }
  EXPECT_EQ(hosts, (std::set<std::string>{"10.0", "far-", "seg-"}));  // seg-a: the fixture's
}

TEST_F(ObjectsTest, BatchesAnswerPerItemInOrder) {
  ASSERT_EQ(Put("b"), ErrorCode::OK);
  std::vector<std::string> keys = {"a", "b", "", "c"};
  auto started = dir_->BatchPutStart(writer_, "", keys, {10, 10, 10, 10}, {});
  ASSERT_EQ(started.size(), 4u);
  EXPECT_TRUE(started[0].ok());
  EXPECT_EQ(started[1].error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(started[2].error(), ErrorCode::INVALID_KEY);
  EXPECT_TRUE(started[3].ok());
  auto ended = dir_->BatchPutEnd(writer_, "", {"a", "c", "zz"});
  EXPECT_EQ(ended, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OK,
                                           ErrorCode::OBJECT_NOT_FOUND}));
  auto got = dir_->BatchGetReplicaList("", {"c", "missing", "a"});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].ok());
  EXPECT_EQ(got[1].error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_TRUE(got[2].ok());
  auto exist = dir_->BatchExistKey("", {"missing", "b"});
  EXPECT_FALSE(*exist[0]);
  EXPECT_TRUE(*exist[1]);
  auto removed = dir_->BatchRemove("", {"a", "missing", "b"}, true);
  EXPECT_EQ(removed, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND,
                                             ErrorCode::OK}));
  auto short_sizes = dir_->BatchPutStart(writer_, "", {"x", "y"}, {10}, {});
  EXPECT_TRUE(short_sizes[0].ok());
  EXPECT_EQ(short_sizes[1].error(), ErrorCode::INVALID_PARAMS);
}

// Batches on a directory that prefetches at any size (the pipelined loop of
// directory/batch_pipeline.h) answer as the one-key calls do, in order.
class PrefetchingBatchesTest : public DirectoryFixture {
 protected:
  PrefetchingBatchesTest() : DirectoryFixture(PrefetchingOptions()) {}
  void SetUp() override { Mount(node_, "seg-a", 1 << 26); }

  // "k0".."k{n-1}"
  static std::vector<std::string> Keys(int n) {
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back("k" + std::to_string(i));
    return keys;
  }
};

TEST_F(PrefetchingBatchesTest, AnswerAsOneKeyCalls) {
  for (const std::string tenant : {"", "t1"}) {
    SCOPED_TRACE(tenant);
    const std::vector<std::string> all = Keys(600);
    // Every third key is put by itself first; the batch's second "k1" meets the first.
    for (size_t i = 0; i < all.size(); i += 3)
      ASSERT_EQ(Put(all[i], 100, {}, tenant), ErrorCode::OK);
    std::vector<std::string> batch = all;
    batch.insert(batch.begin() + 2, "k1");
    auto started =
        dir_->BatchPutStart(writer_, tenant, batch, std::vector<uint64_t>(batch.size(), 100), {});
    ASSERT_EQ(started.size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const bool exists = (i != 2 && std::stoi(batch[i].substr(1)) % 3 == 0) || i == 2;
      EXPECT_EQ(started[i].ok(), !exists) << batch[i];
    }
    // Only the even keys end; all of them exist (PutEnd of a complete one is OK).
    std::vector<std::string> even;
    for (size_t i = 0; i < all.size(); i += 2) even.push_back(all[i]);
    for (ErrorCode c : dir_->BatchPutEnd(writer_, tenant, even)) EXPECT_EQ(c, ErrorCode::OK);

    std::vector<std::string> asked = Keys(700);  // the last 100 are missing
    auto exist = dir_->BatchExistKey(tenant, asked);
    auto got = dir_->BatchGetReplicaList(tenant, asked);
    ASSERT_EQ(exist.size(), asked.size());
    ASSERT_EQ(got.size(), asked.size());
    for (size_t i = 0; i < asked.size(); ++i) {
      auto one = dir_->GetReplicaList(tenant, asked[i]);
      ASSERT_EQ(got[i].ok(), one.ok()) << asked[i];
      if (one.ok()) {
        EXPECT_EQ(got[i]->replicas[0].memory.buffer_address,
                  one->replicas[0].memory.buffer_address);
      } else {
        EXPECT_EQ(got[i].error(), one.error()) << asked[i];
      }
      EXPECT_EQ(*exist[i], *dir_->ExistKey(tenant, asked[i])) << asked[i];
      EXPECT_EQ(*exist[i], i < 600 && (i % 2 == 0 || i % 3 == 0)) << asked[i];
    }
    // The odd keys not put by themselves are still mid-put: revoked, then gone.
    std::vector<std::string> unfinished;
    for (size_t i = 1; i < all.size(); i += 2) {
      if (i % 3 != 0) unfinished.push_back(all[i]);
    }
    for (ErrorCode c : dir_->BatchPutRevoke(writer_, tenant, unfinished)) {
      EXPECT_EQ(c, ErrorCode::OK);
    }
    auto removed = dir_->BatchRemove(tenant, asked, /*force=*/true);
    for (size_t i = 0; i < asked.size(); ++i) {
      const bool there = i < 600 && (i % 2 == 0 || i % 3 == 0);
      EXPECT_EQ(removed[i], there ? ErrorCode::OK : ErrorCode::OBJECT_NOT_FOUND) << asked[i];
    }
    EXPECT_EQ(dir_->CountKeys(tenant, false), 0u);
  }
}

}  // namespace
}  // namespace shelfmark
