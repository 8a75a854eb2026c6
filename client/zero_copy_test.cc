// The zero-copy calls (PutFrom, PutParts, GetInto, their batch forms,
// GetIntoRanges), GetSize, BatchRemove / RemoveAll, a client without
// staging, and local segments, against the real master service and real
// Nodes on loopback engines (client/client_test_util.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "client/client.h"
#include "client/client_test_util.h"
#include "rpc/master_client.h"

namespace shelfmark {
namespace {

TEST_F(ClientTest, PutFromAndGetIntoUseRegisteredMemoryOnly) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient();
  const std::string value = Pattern(70'000, 1);
  std::string unregistered = value;
  EXPECT_EQ(client.PutFrom("t", "k", unregistered.data(), unregistered.size()),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.PutFrom("t", "k", nullptr, 10), ErrorCode::INVALID_PARAMS);
  EXPECT_FALSE(*client.Exist("t", "k"));

  Registered src(client, value.size());
  std::memcpy(src.data(), value.data(), value.size());
  PutOptions two;
  two.config.replica_num = 2;
  two.compute_checksum = true;
  transfers_ = 0;
  ASSERT_EQ(client.PutFrom("t", "k", src.data(), value.size(), two), ErrorCode::OK);
  EXPECT_EQ(transfers_.load(), 1);  // both replicas in one Transfer
  auto loc = client.Locate("t", "k");
  ASSERT_TRUE(loc.ok());
  ASSERT_EQ(loc->info.replicas.size(), 2u);
  EXPECT_EQ(*loc->info.checksum, ObjectChecksum(value));
  for (const ReplicaDescriptor& r : loc->info.replicas) {
    EXPECT_EQ(std::memcmp(NodeOf(r.memory)->At(r.memory.buffer_address), value.data(),
                          value.size()), 0);
  }
  EXPECT_EQ(*client.GetSize("t", "k"), value.size());
  EXPECT_EQ(client.GetSize("t", "missing").error(), ErrorCode::OBJECT_NOT_FOUND);

  Registered dst(client, value.size() + 10);
  EXPECT_EQ(client.GetInto("t", "k", unregistered.data(), unregistered.size()).error(),
            ErrorCode::INVALID_PARAMS);
  // Past the registered buffer's end by one byte.
  EXPECT_EQ(client.GetInto("t", "k", dst.data() + 11, value.size()).error(),
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.GetInto("t", "k", dst.data(), value.size() - 1).error(),
            ErrorCode::BUFFER_OVERFLOW);
  auto got = client.GetInto("t", "k", dst.data(), value.size() + 10);
  ASSERT_TRUE(got.ok()) << ErrorCodeName(got.error());
  EXPECT_EQ(*got, value.size());
  EXPECT_EQ(dst.Str(0, value.size()), value);
  EXPECT_EQ(client.GetInto("t", "missing", dst.data(), 10).error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(ClientTest, PartsAreWrittenAtTheirOffsetsAndScatteredOnRead) {
  StartNode("seg-a");
  Client& client = MakeClient();
  const std::string value = Pattern(30'000, 2);
  Registered src(client, value.size());
  std::memcpy(src.data(), value.data(), value.size());
  // Three "layers" given out of memory order: the object is the parts' order.
  const std::vector<ConstBuffer> parts = {{src.data() + 20'000, 10'000},
                                          {src.data(), 0},
                                          {src.data(), 20'000}};
  const std::string expected = value.substr(20'000) + value.substr(0, 20'000);
  PutOptions sum;
  sum.compute_checksum = true;
  transfers_ = 0;
  ASSERT_EQ(client.PutParts("t", "kv", parts, sum), ErrorCode::OK);
  EXPECT_EQ(transfers_.load(), 1);
  auto loc = client.Locate("t", "kv");
  ASSERT_TRUE(loc.ok());
  EXPECT_EQ(loc->info.size, expected.size());
  EXPECT_EQ(*loc->info.checksum, ObjectChecksum(expected));
  EXPECT_EQ(*client.Get("t", "kv"), expected);  // the checksum verified over the whole

  Registered dst(client, 40'000);
  const std::vector<MutableBuffer> pieces = {{dst.data(), 7}, {dst.data() + 100, 29'000},
                                             {dst.data() + 30'000, 10'000}};
  const std::vector<MutableBuffer> short_pieces = {{dst.data(), 100}};
  auto got = client.BatchGetIntoParts("t", {"kv", "kv"}, {pieces, short_pieces});
  ASSERT_TRUE(got[0].ok()) << ErrorCodeName(got[0].error());
  EXPECT_EQ(*got[0], expected.size());
  EXPECT_EQ(dst.Str(0, 7), expected.substr(0, 7));
  EXPECT_EQ(dst.Str(100, 29'000), expected.substr(7, 29'000));
  EXPECT_EQ(dst.Str(30'000, 993), expected.substr(29'007));
  EXPECT_EQ(got[1].error(), ErrorCode::BUFFER_OVERFLOW);
  std::string outside(10, 'x');
  const std::vector<ConstBuffer> unregistered = {{src.data(), 10}, {outside.data(), 10}};
  EXPECT_EQ(client.PutParts("t", "bad", unregistered), ErrorCode::INVALID_PARAMS);
}

TEST_F(ClientTest, BatchPutFromAndBatchGetIntoMoveEverythingInOneTransfer) {
  StartNode("seg-a");
  StartNode("seg-b");
  Client& client = MakeClient(/*staging_bytes=*/64 << 10);  // smaller than the batch: no staging used
  constexpr size_t kItems = 8, kSize = 50'000;
  Registered src(client, kItems * kSize);
  std::vector<std::string> keys, values;
  std::vector<ConstBuffer> buffers;
  for (size_t i = 0; i < kItems; ++i) {
    keys.push_back("b" + std::to_string(i));
    values.push_back(Pattern(kSize - i, static_cast<int>(i)));
    std::memcpy(src.data() + i * kSize, values[i].data(), values[i].size());
    buffers.push_back({src.data() + i * kSize, values[i].size()});
  }
  std::string outside(10, 'x');
  keys.push_back("unregistered");
  buffers.push_back({outside.data(), outside.size()});
  PutOptions two;  // with the default checksums: each key's in the one BatchPutStart
  two.config.replica_num = 2;
  transfers_ = 0;
  auto put = client.BatchPutFrom("t", keys, buffers, two);
  ASSERT_EQ(put.size(), keys.size());
  for (size_t i = 0; i < kItems; ++i) EXPECT_EQ(put[i], ErrorCode::OK) << keys[i];
  EXPECT_EQ(put[kItems], ErrorCode::INVALID_PARAMS);
  EXPECT_FALSE(*client.Exist("t", "unregistered"));
  EXPECT_EQ(transfers_.load(), 1);
  for (size_t i = 0; i < kItems; ++i) {
    auto loc = client.Locate("t", keys[i]);
    ASSERT_TRUE(loc.ok() && loc->info.checksum.has_value()) << keys[i];
    EXPECT_EQ(*loc->info.checksum, ObjectChecksum(values[i])) << keys[i];
  }

  Registered dst(client, kItems * kSize);
  std::vector<MutableBuffer> dsts;
  for (size_t i = 0; i < kItems; ++i) dsts.push_back({dst.data() + i * kSize, kSize});
  keys.back() = "missing";
  dsts.push_back({dst.data(), 10});
  transfers_ = 0;
  auto got = client.BatchGetInto("t", keys, dsts);
  EXPECT_EQ(transfers_.load(), 1);
  for (size_t i = 0; i < kItems; ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << ErrorCodeName(got[i].error());
    EXPECT_EQ(*got[i], values[i].size());
    EXPECT_EQ(dst.Str(i * kSize, values[i].size()), values[i]) << keys[i];
  }
  EXPECT_EQ(got[kItems].error(), ErrorCode::OBJECT_NOT_FOUND);

  // One node's region gone: the batch falls over to the other replicas.
  std::memset(dst.data(), 0, kItems * kSize);
  nodes_[0]->engine->UnregisterMemory(nodes_[0]->node->region());
  keys.pop_back();
  dsts.pop_back();
  got = client.BatchGetInto("t", keys, dsts);
  for (size_t i = 0; i < kItems; ++i) {
    ASSERT_TRUE(got[i].ok()) << keys[i] << ": " << ErrorCodeName(got[i].error());
    EXPECT_EQ(dst.Str(i * kSize, values[i].size()), values[i]) << keys[i];
  }
  EXPECT_EQ(client.BatchGetInto("t", {"b0"}, {}).at(0).error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.BatchPutFrom("t", {"x"}, {}).at(0), ErrorCode::INVALID_PARAMS);
}

TEST_F(ClientTest, BatchPartsCarryEachKeysChecksumInOneTransfer) {
  StartNode("seg-a");
  Client& client = MakeClient();
  const std::string a = Pattern(5000, 3), b = Pattern(7000, 4);
  Registered src(client, a.size() + b.size());
  std::memcpy(src.data(), a.data(), a.size());
  std::memcpy(src.data() + a.size(), b.data(), b.size());
  PutOptions sum;
  sum.compute_checksum = true;
  transfers_ = 0;
  auto put = client.BatchPutParts(
      "t", {"ab", "b"},
      {{{src.data(), a.size()}, {src.data() + a.size(), b.size()}}, {{src.data() + a.size(), b.size()}}},
      sum);
  ASSERT_EQ(put[0], ErrorCode::OK);
  ASSERT_EQ(put[1], ErrorCode::OK);
  EXPECT_EQ(transfers_.load(), 1);
  EXPECT_EQ(*client.Locate("t", "ab")->info.checksum, ObjectChecksum(a + b));
  EXPECT_EQ(*client.Locate("t", "b")->info.checksum, ObjectChecksum(b));
  // Without checksums (asked for explicitly), none is stored.
  PutOptions none;
  none.compute_checksum = false;
  ASSERT_EQ(client.BatchPutParts("t", {"plain"}, {{{src.data(), a.size()}}}, none)[0],
            ErrorCode::OK);
  EXPECT_FALSE(client.Locate("t", "plain")->info.checksum.has_value());
  EXPECT_EQ(*client.Get("t", "ab"), a + b);
  EXPECT_EQ(*client.Get("t", "b"), b);
}

TEST_F(ClientTest, RangesAreReadWithoutTheChecksum) {
  StartNode("seg-a");
  Client& client = MakeClient();
  PutOptions sum;
  sum.compute_checksum = true;
  const std::string value = Pattern(10'000, 5);
  ASSERT_EQ(client.Put("t", "r", value, sum), ErrorCode::OK);
  Registered dst(client, 100);
  std::vector<ReadRange> ranges = {{9'990, 10, dst.data()}, {0, 5, dst.data() + 20},
                                   {500, 0, dst.data()}};
  ASSERT_EQ(client.GetIntoRanges("t", "r", ranges), ErrorCode::OK);
  EXPECT_EQ(dst.Str(0, 10), value.substr(9'990));
  EXPECT_EQ(dst.Str(20, 5), value.substr(0, 5));
  EXPECT_EQ(client.GetIntoRanges("t", "r", {{9'991, 10, dst.data()}}), ErrorCode::INVALID_PARAMS);
  std::string outside(10, 'x');
  EXPECT_EQ(client.GetIntoRanges("t", "r", {{0, 10, outside.data()}}), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.GetIntoRanges("t", "missing", {{0, 1, dst.data()}}),
            ErrorCode::OBJECT_NOT_FOUND);
  // A byte outside the ranges changes: a whole read fails its checksum, the
  // ranged read does not verify it.
  auto loc = client.Locate("t", "r");
  ASSERT_TRUE(loc.ok());
  NodeOf(loc->info.replicas[0].memory)->At(loc->info.replicas[0].memory.buffer_address)[5000] ^= 1;
  EXPECT_EQ(client.Get("t", "r").error(), ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(client.GetIntoRanges("t", "r", {{0, 5, dst.data()}}), ErrorCode::OK);
}

TEST_F(ClientTest, BatchRemoveAndRemoveAll) {
  StartNode("seg-a");
  Client& client = MakeClient();
  for (const char* key : {"a", "b", "c"}) ASSERT_EQ(client.Put("t", key, key), ErrorCode::OK);
  ASSERT_EQ(client.Put("other", "a", "a"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "a"), "a");  // cached, and leased
  auto removed = client.BatchRemove("t", {"a", "b", "missing"});
  ASSERT_EQ(removed.size(), 3u);
  EXPECT_EQ(removed[0], ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(removed[1], ErrorCode::OK);
  EXPECT_EQ(removed[2], ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(client.location_cache_stats().entries, 0u);
  removed = client.BatchRemove("t", {"a"}, /*force=*/true);
  EXPECT_EQ(removed[0], ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "c"), "c");
  auto all = client.RemoveAll("t", /*force=*/true);
  ASSERT_TRUE(all.ok()) << ErrorCodeName(all.error());
  EXPECT_EQ(*all, 1u);
  EXPECT_EQ(client.location_cache_stats().entries, 0u);
  EXPECT_EQ(client.Get("t", "c").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*client.Get("other", "a"), "a");
}

// Upsert (PutConfig::replace): the client's own cached location of the old
// version is dropped, so its next get reads the new one; RemoveByRegex.
TEST_F(ClientTest, UpsertReplacesAndRemoveByRegexMatches) {
  StartNode("seg-a");
  Client& client = MakeClient();
  ASSERT_EQ(client.Put("t", "k", "old"), ErrorCode::OK);
  ASSERT_EQ(*client.Get("t", "k"), "old");  // cached
  EXPECT_EQ(client.Put("t", "k", "x"), ErrorCode::OBJECT_ALREADY_EXISTS);
  PutOptions replace;
  replace.config.replace = true;
  ASSERT_EQ(client.Put("t", "k", "a longer new value", replace), ErrorCode::OK);
  EXPECT_EQ(*client.Get("t", "k"), "a longer new value");
  EXPECT_EQ(*client.GetSize("t", "k"), 18u);
  ASSERT_EQ(client.Put("t", "k2", "v2"), ErrorCode::OK);
  ASSERT_EQ(client.Put("t", "x1", "v"), ErrorCode::OK);
  auto removed = client.RemoveByRegex("t", "^k[0-9]*$", /*force=*/true);
  ASSERT_TRUE(removed.ok()) << ErrorCodeName(removed.error());
  EXPECT_EQ(*removed, 2u);
  EXPECT_EQ(client.Get("t", "k").error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(*client.Get("t", "x1"), "v");
  EXPECT_EQ(client.RemoveByRegex("t", "(", true).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(ClientTest, WithoutStagingOnlyRegisteredMemoryMovesBytes) {
  StartNode("seg-a");
  Client& client = MakeClient(/*staging_bytes=*/0);
  EXPECT_EQ(client.Put("t", "k", "value"), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.BatchPut("t", {"k"}, {"value"})[0], ErrorCode::INVALID_PARAMS);
  EXPECT_FALSE(*client.Exist("t", "k"));
  Registered buf(client, 64);
  std::memcpy(buf.data(), "value", 5);
  ASSERT_EQ(client.PutFrom("t", "k", buf.data(), 5), ErrorCode::OK);
  EXPECT_EQ(client.Get("t", "k").error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(client.BatchGet("t", {"k"})[0].error(), ErrorCode::INVALID_PARAMS);
  ASSERT_EQ(*client.GetInto("t", "k", buf.data() + 10, 10), 5u);
  EXPECT_EQ(buf.Str(10, 5), "value");
}

// A segment attached as this process's own is read and written by memcpy:
// with the node's registration gone, the transport could not move a byte.
TEST_F(ClientTest, AnAttachedSegmentIsCopiedWithoutTheTransport) {
  TestNode& node = StartNode("own");
  Client& client = MakeClient();
  const Segment& seg = node.node->segment();
  EXPECT_EQ(client.AttachLocalSegment(seg.id, nullptr, 10), ErrorCode::INVALID_PARAMS);
  ASSERT_EQ(client.AttachLocalSegment(seg.id, node.node->memory(), seg.size), ErrorCode::OK);
  node.engine->UnregisterMemory(node.node->region());
  transfers_ = 0;
  const std::string value = Pattern(100'000, 6);
  ASSERT_EQ(client.Put("t", "k", value), ErrorCode::OK);
  EXPECT_EQ(*client.Get("t", "k"), value);
  Registered dst(client, value.size());
  EXPECT_EQ(*client.BatchGetInto("t", {"k"}, {{dst.data(), value.size()}})[0], value.size());
  EXPECT_EQ(dst.Str(0, value.size()), value);
  EXPECT_EQ(transfers_.load(), 0);
  EXPECT_EQ(client.local_stats().copies, 3u);
  EXPECT_EQ(client.local_stats().bytes, 3 * value.size());
  client.DetachLocalSegment(seg.id);
  EXPECT_EQ(client.Get("t", "k").error(), ErrorCode::TRANSFER_FAIL);
}

// An own segment's reads are copied and checksummed in one pass
// (CopyChecksum64): a byte changed in the segment is still
// CHECKSUM_MISMATCH, for the batch and the single read alike.
TEST_F(ClientTest, AnAttachedSegmentsReadsAreVerifiedAsTheyAreCopied) {
  TestNode& node = StartNode("own");
  Client& client = MakeClient();
  const Segment& seg = node.node->segment();
  ASSERT_EQ(client.AttachLocalSegment(seg.id, node.node->memory(), seg.size), ErrorCode::OK);
  PutOptions with_sum;
  with_sum.compute_checksum = true;
  const std::string value = Pattern(100'000, 7);
  ASSERT_EQ(client.Put("t", "k", value, with_sum), ErrorCode::OK);
  Registered dst(client, value.size());
  ASSERT_EQ(*client.BatchGetInto("t", {"k"}, {{dst.data(), value.size()}})[0], value.size());
  EXPECT_EQ(dst.Str(0, value.size()), value);
  auto loc = client.Locate("t", "k");
  ASSERT_TRUE(loc.ok());
  const MemoryDescriptor& r = loc->info.replicas[0].memory;
  NodeOf(r)->At(r.buffer_address)[77'777] ^= 0x40;
  EXPECT_EQ(client.BatchGetInto("t", {"k"}, {{dst.data(), value.size()}})[0].error(),
            ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(client.GetInto("t", "k", dst.data(), value.size()).error(),
            ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_GE(client.local_stats().copies, 3u);  // the reads were memcpy, not the transport
}

// The zero-copy puts into an own segment copy and checksum in one pass
// (StreamChecksum64) and send the checksum with PutEnd: the object has the
// value's checksum as soon as it is readable, a one-piece and a two-piece
// value alike, and a byte changed in the segment after the copy is still
// CHECKSUM_MISMATCH on get.
TEST_F(ClientTest, AnAttachedSegmentsPutsAreChecksummedAsTheyAreCopied) {
  TestNode& node = StartNode("own");
  Client& client = MakeClient();
  const Segment& seg = node.node->segment();
  ASSERT_EQ(client.AttachLocalSegment(seg.id, node.node->memory(), seg.size), ErrorCode::OK);
  const std::string value = Pattern(100'000, 9);
  Registered src(client, 2 * value.size());
  std::memcpy(src.data(), value.data(), value.size());
  std::memcpy(src.data() + value.size(), value.data(), value.size());
  const std::vector<std::string> keys = {"a", "b"};
  const std::vector<ConstBuffer> buffers = {{src.data(), value.size()},
                                            {src.data() + value.size(), value.size()}};
  for (ErrorCode rc : client.BatchPutFrom("t", keys, buffers)) ASSERT_EQ(rc, ErrorCode::OK);
  ASSERT_EQ(client.PutFrom("t", "c", src.data(), value.size()), ErrorCode::OK);
  ASSERT_EQ(client.PutParts("t", "d", buffers), ErrorCode::OK);
  EXPECT_EQ(transfers_.load(), 0);  // every write was a memcpy
  for (const char* key : {"a", "b", "c"}) {
    auto loc = client.Locate("t", key);
    ASSERT_TRUE(loc.ok()) << key;
    ASSERT_TRUE(loc->info.checksum.has_value()) << key;
    EXPECT_EQ(*loc->info.checksum, ObjectChecksum(value)) << key;
  }
  auto parts = client.Locate("t", "d");
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->info.checksum, std::optional<uint64_t>(ObjectChecksum(value + value)));
  Registered dst(client, value.size());
  ASSERT_EQ(*client.GetInto("t", "a", dst.data(), value.size()), value.size());
  EXPECT_EQ(dst.Str(0, value.size()), value);
  auto loc = client.Locate("t", "b");
  ASSERT_TRUE(loc.ok());
  const MemoryDescriptor& r = loc->info.replicas[0].memory;
  NodeOf(r)->At(r.buffer_address)[4'321] ^= 0x10;
  EXPECT_EQ(client.GetInto("t", "b", dst.data(), value.size()).error(),
            ErrorCode::CHECKSUM_MISMATCH);
  EXPECT_EQ(client.BatchGetInto("t", {"b"}, {{dst.data(), value.size()}})[0].error(),
            ErrorCode::CHECKSUM_MISMATCH);
}

}  // namespace
}  // namespace shelfmark
