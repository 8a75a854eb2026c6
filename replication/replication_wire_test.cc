// The replication stream's messages: round trips, and every malformed body
// refused with a typed error.
#include "replication/replication_wire.h"

#include <gtest/gtest.h>

#include <string>

#include "directory/shard.h"

namespace shelfmark {
namespace {

ReplicationBatch SampleBatch() {
  ReplicationBatch b;
  b.flags = kBatchReset | kBatchSynced;
  b.changes.seq = 42;
  b.changes.has_segments = true;
  SegmentState seg;
  seg.owner = UUID{1, 2};
  seg.segment.id = UUID{3, 4};
  seg.segment.name = "seg";
  seg.segment.size = 1 << 20;
  seg.segment.endpoint = "10.0.0.1:1";
  seg.segment.protocol = "ucx";
  b.changes.segments.segments.push_back(seg);
  b.changes.segments.next_replica_id = 9;
  ObjectState o;
  o.tenant = "default";
  o.key = "k";
  o.size = 100;
  o.replicas.push_back({7, ReplicaStatus::COMPLETE, ReplicaType::MEMORY, UUID{3, 4}, 64});
  ShardState shard;
  shard.index = static_cast<uint32_t>(ShardIndex(o.tenant, o.key));
  shard.objects.push_back(o);
  b.changes.shards.push_back(shard);
  b.changes.removed.emplace_back("default", "gone");
  b.changes.held.push_back({11, UUID{3, 4}, 4096, 100, 59'000});
  b.changes.released = {5, 6};
  return b;
}

std::string Body(const std::string& frame) {
  uint32_t size = 0;
  EXPECT_TRUE(ParseReplicationHeader(frame, &size));
  EXPECT_EQ(frame.size(), kReplicationHeaderBytes + size);
  return frame.substr(kReplicationHeaderBytes);
}

TEST(ReplicationWire, BatchRoundTrips) {
  std::string frame;
  AppendBatch(SampleBatch(), &frame);
  auto back = DecodeBatch(Body(frame));
  ASSERT_TRUE(back.ok()) << ErrorCodeName(back.error());
  EXPECT_EQ(back->flags, kBatchReset | kBatchSynced);
  EXPECT_EQ(back->changes.seq, 42u);
  ASSERT_TRUE(back->changes.has_segments);
  EXPECT_EQ(back->changes.segments.segments.at(0).segment.name, "seg");
  ASSERT_EQ(back->changes.shards.size(), 1u);
  EXPECT_EQ(back->changes.shards[0].objects.at(0).replicas.at(0).offset, 64u);
  EXPECT_EQ(back->changes.removed.at(0).second, "gone");
  ASSERT_EQ(back->changes.held.size(), 1u);
  const HeldRangeState& h = back->changes.held[0];
  EXPECT_EQ(h.id, 11u);
  EXPECT_EQ(h.segment, (UUID{3, 4}));
  EXPECT_EQ(h.offset, 4096u);
  EXPECT_EQ(h.size, 100u);
  EXPECT_EQ(h.remaining_ms, 59'000);
  EXPECT_EQ(back->changes.released, (std::vector<uint64_t>{5, 6}));
  std::string again;
  AppendBatch(*back, &again);
  EXPECT_EQ(again, frame);
}

TEST(ReplicationWire, ACopyFrameCarriesTheSameBatchCompressed) {
  ReplicationBatch big = SampleBatch();
  ObjectState o = big.changes.shards[0].objects.at(0);
  for (int i = 0; i < 200; ++i) {
    o.key = "key-" + std::to_string(i);
    big.changes.shards[0].objects.push_back(o);
  }
  std::string stored, compressed;
  AppendBatch(big, &stored);
  AppendCopyBatch(big, &compressed);
  EXPECT_LT(compressed.size(), stored.size());
  for (const std::string* frame : {&stored, &compressed}) {
    auto back = DecodeBatch(Body(*frame));
    ASSERT_TRUE(back.ok()) << ErrorCodeName(back.error());
    std::string again;
    AppendBatch(*back, &again);
    EXPECT_EQ(again, stored);
  }
}

TEST(ReplicationWire, EveryTruncationIsRefused) {
  std::string frame;
  AppendBatch(SampleBatch(), &frame);
  const std::string body = Body(frame);
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_FALSE(DecodeBatch(body.substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeBatch(body + "x").ok());
  std::string bad_flags = body;
  bad_flags[1] = 0x40;
  EXPECT_EQ(DecodeBatch(bad_flags).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(ReplicationWire, HandshakeMessagesRoundTrip) {
  std::string f;
  AppendHello({"cluster-a", "nonce", 0, ""}, &f);
  auto hello = DecodeHello(Body(f));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->cluster_id, "cluster-a");
  EXPECT_EQ(hello->flags, 0);
  // A watch connection's hello carries the flag; unknown flags and bytes
  // after it are refused.
  f.clear();
  AppendHello({"cluster-a", "nonce", kHelloWatch, ""}, &f);
  auto watch = DecodeHello(Body(f));
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(watch->flags, kHelloWatch);
  std::string named;
  AppendHello({"cluster-a", "nonce", 0, "10.0.0.2:50051"}, &named);
  auto with_id = DecodeHello(Body(named));
  ASSERT_TRUE(with_id.ok());
  EXPECT_EQ(with_id->id, "10.0.0.2:50051");
  EXPECT_EQ(with_id->flags, 0);
  for (size_t n = 0; n < Body(named).size(); ++n) {
    EXPECT_FALSE(DecodeHello(Body(named).substr(0, n)).ok() &&
                 DecodeHello(Body(named).substr(0, n))->id == "10.0.0.2:50051")
        << n;
  }
  std::string unknown = Body(f);
  unknown.back() = 0x02;
  EXPECT_EQ(DecodeHello(unknown).error(), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(DecodeHello(Body(f) + "x").error(), ErrorCode::DATA_CORRUPTED);
  f.clear();
  AppendChallenge({ErrorCode::PERMISSION_DENIED, true, "n"}, &f);
  auto c = DecodeChallenge(Body(f));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->code, ErrorCode::PERMISSION_DENIED);
  EXPECT_TRUE(c->required);
  f.clear();
  AppendAck(77, &f);
  EXPECT_EQ(*DecodeAck(Body(f)), 77u);
  EXPECT_FALSE(DecodeHello(Body(f)).ok());  // an ack is no hello
  f.clear();
  AppendWelcome({ErrorCode::OK, "proof"}, &f);
  EXPECT_EQ(DecodeWelcome(Body(f))->server_proof, "proof");
  f.clear();
  AppendProof("p", &f);
  EXPECT_EQ(*DecodeProof(Body(f)), "p");
  EXPECT_FALSE(MessageOf("").ok());
  uint32_t size = 0;
  EXPECT_FALSE(ParseReplicationHeader("SMLK\1\0\0\0", &size));
}

}  // namespace
}  // namespace shelfmark
