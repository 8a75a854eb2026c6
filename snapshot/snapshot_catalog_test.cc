#include "snapshot/snapshot_catalog.h"

#include <gtest/gtest.h>

#include "snapshot/codec.h"
#include "snapshot/local_store.h"
#include "snapshot/snapshot_test_util.h"

namespace shelfmark {
namespace {

class SnapshotCatalogTest : public ::testing::Test {
 protected:
  // Writes the objects of a snapshot; `complete` = all five of them.
  void WriteSnapshot(const std::string& id, bool complete = true) {
    size_t n = complete ? std::size(kSnapshotObjects) : 2;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(store_->Put(catalog_.ObjectKey(id, kSnapshotObjects[i]), "x"), ErrorCode::OK);
    }
  }
  std::vector<std::string> Ids() {
    auto listed = catalog_.List();
    EXPECT_TRUE(listed.ok());
    std::vector<std::string> ids;
    for (const auto& l : *listed) ids.push_back(l.id);
    return ids;
  }

  testing::TempDir dir_;
  std::unique_ptr<LocalStore> store_ = testing::OpenLocalStore(dir_.path());
  SnapshotCatalog catalog_{store_.get(), "c1"};
};

const std::string kOld = SnapshotIdAt(1'700'000'000'000);
const std::string kMid = SnapshotIdAt(1'700'000'100'000);
const std::string kNew = SnapshotIdAt(1'700'000'200'000);
const std::string kNewest = SnapshotIdAt(1'700'000'300'000);

TEST_F(SnapshotCatalogTest, KeyLayout) {
  EXPECT_EQ(catalog_.ObjectKey("20260829_103000_123", "metadata"),
            "mooncake_master_snapshot/c1/20260829_103000_123/metadata");
  EXPECT_EQ(catalog_.LatestKey(), "mooncake_master_snapshot/c1/latest.txt");
  EXPECT_EQ(catalog_.ClusterPrefix(), "mooncake_master_snapshot/c1/");
}

TEST_F(SnapshotCatalogTest, EmptyStoreHasNoCandidates) {
  EXPECT_EQ(*catalog_.Latest(), "");
  EXPECT_TRUE(catalog_.List()->empty());
  EXPECT_TRUE(catalog_.Candidates()->empty());
}

TEST_F(SnapshotCatalogTest, LatestFirstThenOthersNewestFirst) {
  for (const auto& id : {kOld, kNew, kMid}) WriteSnapshot(id);
  ASSERT_EQ(catalog_.SetLatest(kMid), ErrorCode::OK);
  EXPECT_EQ(*catalog_.Latest(), kMid);
  EXPECT_EQ(*catalog_.Candidates(), (std::vector<std::string>{kMid, kNew, kOld}));
}

TEST_F(SnapshotCatalogTest, LatestNamingAMissingSnapshotStaysFirstOthersFollow) {
  WriteSnapshot(kOld);
  ASSERT_EQ(catalog_.SetLatest(kNew), ErrorCode::OK);
  EXPECT_EQ(*catalog_.Candidates(), (std::vector<std::string>{kNew, kOld}));
}

TEST_F(SnapshotCatalogTest, GarbageLatestIsIgnored) {
  WriteSnapshot(kOld);
  ASSERT_EQ(store_->Put(catalog_.LatestKey(), "not-an-id\n"), ErrorCode::OK);
  EXPECT_EQ(*catalog_.Latest(), "");
  EXPECT_EQ(*catalog_.Candidates(), std::vector<std::string>{kOld});
  EXPECT_EQ(catalog_.SetLatest("../x"), ErrorCode::INVALID_PARAMS);
}

TEST_F(SnapshotCatalogTest, ForeignNamesAndOtherClustersAreNotListed) {
  WriteSnapshot(kOld);
  ASSERT_EQ(store_->Put("mooncake_master_snapshot/c1/not_an_id/metadata", "x"), ErrorCode::OK);
  ASSERT_EQ(store_->Put("mooncake_master_snapshot/c1/notes.txt", "x"), ErrorCode::OK);
  ASSERT_EQ(store_->Put("mooncake_master_snapshot/c10/" + kNew + "/metadata", "x"),
            ErrorCode::OK);
  SnapshotCatalog other(store_.get(), "c2");
  ASSERT_EQ(store_->Put(other.ObjectKey(kNewest, "metadata"), "x"), ErrorCode::OK);
  EXPECT_EQ(Ids(), std::vector<std::string>{kOld});
}

TEST_F(SnapshotCatalogTest, ListTellsCompleteFromIncomplete) {
  WriteSnapshot(kOld);
  WriteSnapshot(kNew, /*complete=*/false);
  auto listed = catalog_.List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, kNew);
  EXPECT_FALSE((*listed)[0].complete);
  EXPECT_TRUE((*listed)[1].complete);
}

TEST_F(SnapshotCatalogTest, RetentionKeepsNewestCompleteAndLatest) {
  for (const auto& id : {kOld, kMid, kNew}) WriteSnapshot(id);
  WriteSnapshot(kNewest, /*complete=*/false);  // a child that died mid-write
  ASSERT_EQ(catalog_.SetLatest(kNew), ErrorCode::OK);
  auto deleted = catalog_.ApplyRetention(2);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, (std::vector<std::string>{kNewest, kOld}));
  EXPECT_EQ(Ids(), (std::vector<std::string>{kNew, kMid}));
  EXPECT_EQ(*catalog_.Latest(), kNew);
  // Nothing is left of the deleted ones.
  for (const auto& id : {kOld, kNewest}) {
    EXPECT_TRUE(store_->List(catalog_.ClusterPrefix() + id + "/")->empty()) << id;
  }
}

TEST_F(SnapshotCatalogTest, RetentionNeverDeletesTheSnapshotLatestNames) {
  for (const auto& id : {kOld, kMid, kNew}) WriteSnapshot(id);
  ASSERT_EQ(catalog_.SetLatest(kOld), ErrorCode::OK);
  ASSERT_TRUE(catalog_.ApplyRetention(1).ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{kNew, kOld}));
}

TEST_F(SnapshotCatalogTest, RetentionKeepsTheProtectedSnapshotBesideTheNewest) {
  for (const auto& id : {kOld, kMid, kNew, kNewest}) WriteSnapshot(id);
  ASSERT_EQ(catalog_.SetLatest(kNewest), ErrorCode::OK);
  ASSERT_EQ(catalog_.SetProtected(kOld), ErrorCode::OK);
  EXPECT_EQ(*catalog_.Protected(), kOld);
  // Three passes, as three snapshots' children would run them.
  for (int pass = 0; pass < 3; ++pass) ASSERT_TRUE(catalog_.ApplyRetention(2).ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{kNewest, kNew, kOld}));
  // Released, it goes at the next pass.
  ASSERT_EQ(catalog_.ClearProtected(), ErrorCode::OK);
  EXPECT_EQ(*catalog_.Protected(), "");
  ASSERT_TRUE(catalog_.ApplyRetention(2).ok());
  EXPECT_EQ(Ids(), (std::vector<std::string>{kNewest, kNew}));
}

TEST_F(SnapshotCatalogTest, GarbageProtectedProtectsNothingAndSaysSo) {
  for (const auto& id : {kOld, kNew}) WriteSnapshot(id);
  ASSERT_EQ(catalog_.SetLatest(kNew), ErrorCode::OK);
  ASSERT_EQ(store_->Put(catalog_.ProtectedKey(), "../../etc\n"), ErrorCode::OK);
  std::string problem;
  EXPECT_EQ(*catalog_.Protected(&problem), "");
  EXPECT_NE(problem.find("protected.txt holds no valid snapshot id"), std::string::npos)
      << problem;
  EXPECT_EQ(catalog_.SetProtected("../x"), ErrorCode::INVALID_PARAMS);
  ASSERT_TRUE(catalog_.ApplyRetention(1).ok());
  EXPECT_EQ(Ids(), std::vector<std::string>{kNew});
}

TEST_F(SnapshotCatalogTest, AnOperatorsFirstCandidateGoesBeforeLatest) {
  for (const auto& id : {kOld, kMid, kNew}) WriteSnapshot(id);
  ASSERT_EQ(catalog_.SetLatest(kNew), ErrorCode::OK);
  EXPECT_EQ(*catalog_.Candidates(nullptr, kOld), (std::vector<std::string>{kOld, kNew, kMid}));
  EXPECT_EQ(*catalog_.Candidates(nullptr, kNew), (std::vector<std::string>{kNew, kMid, kOld}));
  // One the store lacks changes nothing.
  EXPECT_EQ(*catalog_.Candidates(nullptr, kNewest), (std::vector<std::string>{kNew, kMid, kOld}));
}

TEST_F(SnapshotCatalogTest, RetentionOfZeroIsRejected) {
  WriteSnapshot(kOld);
  EXPECT_EQ(catalog_.ApplyRetention(0).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(Ids(), std::vector<std::string>{kOld});
}

}  // namespace
}  // namespace shelfmark
