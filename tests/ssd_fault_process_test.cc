// An SSD tier that goes wrong under a running shelfmark-node (real master and
// node processes, tests/tier_cluster.h, both backends): what a client sees
// is the right bytes or a miss, never other bytes, and puts keep being
// accepted.
//  - A record with a flipped byte and a record whose file was cut short:
//    a get is a miss (OBJECT_NOT_FOUND), never the wrong bytes; the master
//    forgot the key before the miss was answered, so the key is put again
//    at once; the node counts the corrupt records; nothing corrupt is
//    promoted back into DRAM (promotion after one hit: a served read would
//    be promoted); a healthy record next to them still reads back and is
//    promoted.
//  - The store's directory removed: every object reads back byte-exact or
//    is a miss (bucket backend: records never read before are misses), and
//    a second burst of puts is accepted within a bounded time (the node
//    reports the copies it cannot make; the master evicts without them).
//  - A full disk (bucket backend without a size limit on a small tmpfs;
//    root only): the store evicts to take new batches, puts keep being
//    accepted, and what is gone is accounted for by the store's evictions
//    and the master's evictions without a copy.
// Every wait is a condition with a deadline; no timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "tests/tier_cluster.h"

namespace shelfmark {
namespace {

using testing::BurstResult;
using testing::HasComplete;
using testing::kBurstObjects;
using testing::kObjectBytes;
using testing::kSegmentBytes;
using testing::kWaitMs;

// Where a value's bytes lie in the store's files.
struct Place {
  std::string path;
  uint64_t offset = 0;
};
using StoreFiles = std::vector<std::pair<std::string, std::string>>;  // (path, bytes)

class SsdFaultProcessTest : public testing::TierClusterTest {
 protected:
  bool Bucket() const { return GetParam() == "bucket_storage_backend"; }

  // The keys whose only replica is on the SSD.
  std::vector<std::string> SsdOnly(const std::vector<std::string>& keys) {
    std::vector<std::string> out;
    for (const std::string& key : keys) {
      const auto replicas = Replicas(key);
      if (HasComplete(replicas, ReplicaType::LOCAL_DISK) &&
          !HasComplete(replicas, ReplicaType::MEMORY)) {
        out.push_back(key);
      }
    }
    return out;
  }

  // Every place the value of `key` lies in the store's files, found by its
  // first 4 KiB (the values are distinct streams per key). More than one
  // when the key was written twice (a copy queued again): the space of the
  // older one is free but keeps its bytes.
  std::vector<Place> FindAll(const std::string& key, const StoreFiles& files) {
    const std::string head = LoadValue(key, kObjectBytes).substr(0, 4096);
    // Boyer-Moore-Horspool skips about a head's length a step: the offset
    // backend's file is hundreds of MiB and every burst key is looked up.
    const std::boyer_moore_horspool_searcher searcher(head.begin(), head.end());
    std::vector<Place> found;
    for (const auto& [path, bytes] : files) {
      for (auto at = std::search(bytes.begin(), bytes.end(), searcher); at != bytes.end();
           at = std::search(at + 1, bytes.end(), searcher)) {
        found.push_back({path, static_cast<uint64_t>(at - bytes.begin())});
      }
    }
    return found;
  }

  // The store's files, each read whole once (read again after changing one).
  StoreFiles ReadStore() {
    StoreFiles files;
    for (const auto& entry : std::filesystem::directory_iterator(StoreDir())) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      files.emplace_back(entry.path().string(),
                         std::string((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>()));
    }
    return files;
  }

  // A get afresh that must be a miss; wrong bytes fail the test loudly.
  void ExpectMiss(const std::string& key) {
    GetOptions fresh;
    fresh.use_location_cache = false;
    auto got = client_->Get("", key, fresh);
    if (got.ok()) {
      ADD_FAILURE() << key << ": served, "
                    << (*got == LoadValue(key, kObjectBytes) ? "the right bytes" : "WRONG BYTES");
      return;
    }
    EXPECT_EQ(got.error(), ErrorCode::OBJECT_NOT_FOUND) << key;
  }

  // The master forgot the key when the miss was answered: a put of it is
  // accepted (no OBJECT_ALREADY_EXISTS, no stale entry to wait out) and
  // reads back. A full memory segment may answer NO_AVAILABLE_HANDLE while
  // its newest objects are copied to the SSD first (eviction waits for
  // their copies): only that is retried, as the burst does.
  void ExpectPutAgain(const std::string& key) {
    EXPECT_EQ(master_client_->Stat("", key).error(), ErrorCode::OBJECT_NOT_FOUND) << key;
    const std::string value = LoadValue(key + "-again", kObjectBytes);
    uint64_t full_retries = 0;
    ASSERT_EQ(PutRetryingWhileFull(*client_, "", key, value, PutOptions{}, 20'000, &full_retries),
              ErrorCode::OK)
        << key;
    GetOptions fresh;
    fresh.use_location_cache = false;
    auto got = client_->Get("", key, fresh);
    ASSERT_TRUE(got.ok()) << key << ": " << ErrorCodeName(got.error());
    EXPECT_TRUE(*got == value) << key;
  }
};

TEST_P(SsdFaultProcessTest, CorruptRecordsAreMissesNeverServedNeverPromoted) {
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {}, {"--promote_after_hits=1"}));
  const BurstResult burst = Burst(kBurstObjects, 20'000);
  ASSERT_TRUE(burst.refused.empty()) << burst.refused.size() << " puts refused";
  ASSERT_TRUE(WaitSettled()) << "offload did not settle: " << settle_state_;
  const std::vector<std::string> on_ssd = SsdOnly(burst.acknowledged);
  ASSERT_GE(on_ssd.size(), 3u) << "too few objects left on SSD only";

  // One byte flipped in the middle of a value (in every copy of it).
  const std::string flipped = on_ssd[0];
  const std::vector<Place> flips = FindAll(flipped, ReadStore());
  ASSERT_FALSE(flips.empty()) << flipped << " not found in the store's files";
  for (const Place& p : flips) testing::FlipBits(p.path, p.offset + kObjectBytes / 2);
  ExpectMiss(flipped);
  ExpectPutAgain(flipped);
  EXPECT_EQ(NodeMetric("shelfmark_node_disk_corrupt_records_total"), 1);
  EXPECT_EQ(NodeMetric("shelfmark_node_disk_lost_reported_total"), 1);

  // A file cut short in the middle of a value (the offset backend's one
  // file: every record after it too): the key whose first copy lies last
  // in its file, cut there (its other copies lie after it); a healthy key
  // lies wholly before the cut or in another file.
  std::vector<std::vector<Place>> places;
  const StoreFiles files = ReadStore();
  for (size_t i = 1; i < on_ssd.size(); ++i) {
    places.push_back(FindAll(on_ssd[i], files));
    ASSERT_FALSE(places.back().empty()) << on_ssd[i] << " not found in the store's files";
  }
  size_t last = 0;
  for (size_t i = 1; i < places.size(); ++i) {
    if (places[i].front().offset > places[last].front().offset) last = i;
  }
  const std::string cut = on_ssd[last + 1];
  const Place cut_at = places[last].front();
  std::string healthy;
  for (size_t i = 0; i < places.size() && healthy.empty(); ++i) {
    const bool before = std::all_of(places[i].begin(), places[i].end(), [&](const Place& p) {
      return p.path != cut_at.path || p.offset + kObjectBytes <= cut_at.offset;
    });
    if (i != last && before) healthy = on_ssd[i + 1];
  }
  ASSERT_FALSE(healthy.empty()) << "no record lies before the cut";
  std::filesystem::resize_file(cut_at.path, cut_at.offset + 10);
  ExpectMiss(cut);
  ExpectPutAgain(cut);
  EXPECT_EQ(NodeMetric("shelfmark_node_disk_corrupt_records_total"), 2);

  // Never promoted: with a promotion after one hit, the healthy record's
  // first read promotes it, and only it (room under the eviction watermark
  // for its copy: the objects in DRAM go; the rest stays on SSD only).
  std::vector<std::string> rest;
  for (const std::string& key : burst.acknowledged) {
    if (HasComplete(Replicas(key), ReplicaType::MEMORY)) {
      ASSERT_EQ(client_->Remove("", key, true), ErrorCode::OK) << key;
    } else if (key != healthy) {
      rest.push_back(key);
    }
  }
  GetOptions fresh;
  fresh.use_location_cache = false;
  auto got = client_->Get("", healthy, fresh);
  ASSERT_TRUE(got.ok()) << healthy << ": " << ErrorCodeName(got.error());
  EXPECT_TRUE(*got == LoadValue(healthy, kObjectBytes)) << healthy << ": wrong bytes";
  ASSERT_TRUE(testing::WaitFor(
      [&] { return HasComplete(Replicas(healthy), ReplicaType::MEMORY); }, kWaitMs))
      << healthy << " was not promoted: "
      << NodeMetric("shelfmark_node_promotions_requested_total") << " requested, "
      << NodeMetric("shelfmark_node_promotions_refused_total") << " refused, "
      << NodeMetric("shelfmark_node_promotion_failures_total") << " failed; master "
      << MasterMetric("shelfmark_master_promotions_refused_total") << " refused, allocated "
      << MasterMetric("shelfmark_master_allocated_bytes") << " of "
      << MasterMetric("shelfmark_master_total_capacity_bytes");
  // The node counts its promotion once PromoteEnd is answered, which may be
  // after the replica became visible.
  ASSERT_TRUE(testing::WaitFor(
      [&] { return NodeMetric("shelfmark_node_promoted_total") >= 1; }, kWaitMs));
  EXPECT_EQ(NodeMetric("shelfmark_node_promoted_total"), 1);
  EXPECT_EQ(MasterMetric("shelfmark_master_promoted_total"), 1);

  // Whatever else the cut took: misses, never other bytes.
  ServedOrGone(rest);
}

TEST_P(SsdFaultProcessTest, ARemovedStoreNeverServesWrongBytesAndNeverBlocksPuts) {
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {}));
  const BurstResult first = Burst(kBurstObjects, 20'000);
  ASSERT_TRUE(first.refused.empty()) << first.refused.size() << " puts refused";
  ASSERT_TRUE(WaitSettled()) << "offload did not settle: " << settle_state_;
  const std::vector<std::string> on_ssd = SsdOnly(first.acknowledged);
  ASSERT_FALSE(on_ssd.empty());
  std::filesystem::remove_all(StoreDir());

  // The store cannot take a copy any more (the bucket backend creates a
  // file per batch); puts are still accepted, retried for a bounded time.
  const BurstResult second = Burst(2 * kBurstObjects, 20'000, "after");
  EXPECT_TRUE(second.refused.empty()) << second.refused.size() << " puts refused";
  const int gone = ServedOrGone(first.acknowledged);
  ServedOrGone(second.acknowledged);
  if (Bucket()) {
    // Its records were never read: no file of theirs is open, all misses.
    EXPECT_GE(gone, static_cast<int>(on_ssd.size()));
    EXPECT_GT(NodeMetric("shelfmark_node_offload_failures_reported_total"), 0);
    EXPECT_GT(MasterMetric("shelfmark_master_evicted_without_copy_total"), 0);
  }
}

TEST_P(SsdFaultProcessTest, AFullDiskNeverBlocksPuts) {
  if (!Bucket()) GTEST_SKIP() << "the offset backend preallocates its file: no disk fills up";
  if (!MountSmallStore(24ull << 20)) GTEST_SKIP() << "needs root with mount rights (tmpfs)";
  ASSERT_NO_FATAL_FAILURE(StartCluster({}, {}));
  const int objects = 5 * static_cast<int>(kSegmentBytes / kObjectBytes);
  const BurstResult burst = Burst(objects, 20'000);
  EXPECT_TRUE(burst.refused.empty()) << burst.refused.size() << " puts refused";
  ASSERT_TRUE(WaitSettled()) << "offload did not settle: " << settle_state_;
  const double disk_evictions = NodeMetric("shelfmark_node_disk_evictions_total");
  EXPECT_GT(disk_evictions, 0) << "the disk never filled";
  const double without_copy = MasterMetric("shelfmark_master_evicted_without_copy_total");
  EXPECT_LE(ServedOrGone(burst.acknowledged), disk_evictions + without_copy);
  EXPECT_GT(DiskCopiesExact(burst.acknowledged), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, SsdFaultProcessTest, testing::SsdBackends(),
                         testing::SsdBackendName);

}  // namespace
}  // namespace shelfmark
