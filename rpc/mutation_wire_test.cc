// The framed channel's mutation messages (rpc/mutation_wire.h): every
// request decodes to what was encoded, every reply too, and anything cut
// short or padded is refused (INVALID_PARAMS for a request, RPC_FAIL for a
// reply).
#include "rpc/mutation_wire.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace shelfmark {
namespace {

// The body of the one frame in `frame`.
std::string_view Body(const std::string& frame) {
  uint32_t body = 0;
  EXPECT_TRUE(ParseLookupHeader(frame, &body));
  EXPECT_EQ(frame.size(), kLookupHeaderBytes + body);
  return std::string_view(frame).substr(kLookupHeaderBytes);
}

// Every proper prefix and one byte more are refused.
void ExpectStrictRequest(std::string_view body) {
  LookupRequest r;
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_EQ(DecodeLookupRequest(body.substr(0, n), 16, &r), ErrorCode::INVALID_PARAMS) << n;
  }
  std::string longer(body);
  longer.push_back('\0');
  EXPECT_EQ(DecodeLookupRequest(longer, 16, &r), ErrorCode::INVALID_PARAMS);
}

TEST(MutationWire, PutStartCarriesTheWholeConfig) {
  PutConfig c;
  c.replica_num = 3;
  c.preferred_segments = {"a", "bb"};
  c.prefer_host = "10.0.0.2";
  c.checksum = 77;
  c.data_type = DataType::TENSOR;
  c.hard_pin = true;
  c.soft_pin_ttl_ms = 1234;
  c.group_id = "g";
  c.replace = true;
  const UUID id = UUID::Generate();
  std::string frame;
  AppendPutStartRequest(id, "t", "k", 4096, c, &frame);
  LookupRequest r;
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kPutStart);
  EXPECT_EQ(r.client, id);
  EXPECT_EQ(r.tenant, "t");
  EXPECT_EQ(r.key, "k");
  EXPECT_EQ(r.size, 4096u);
  EXPECT_EQ(r.config.replica_num, 3u);
  EXPECT_EQ(r.config.preferred_segments, c.preferred_segments);
  EXPECT_EQ(r.config.prefer_host, c.prefer_host);
  EXPECT_EQ(r.config.checksum, c.checksum);
  EXPECT_EQ(r.config.data_type, DataType::TENSOR);
  EXPECT_TRUE(r.config.hard_pin);
  EXPECT_EQ(r.config.soft_pin_ttl_ms, 1234);
  EXPECT_EQ(r.config.group_id, "g");
  EXPECT_TRUE(r.config.replace);
  ExpectStrictRequest(Body(frame));
}

TEST(MutationWire, BatchRequestsRoundTripAndRespectTheLimit) {
  const UUID id = UUID::Generate();
  std::string frame;
  AppendBatchPutStartRequest(id, "t", {"a", "b"}, {1, 2}, {}, {5, 6}, &frame);
  LookupRequest r;
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.keys, (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(r.sizes, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(r.checksums, (std::vector<uint64_t>{5, 6}));
  EXPECT_EQ(DecodeLookupRequest(Body(frame), 1, &r), ErrorCode::INVALID_PARAMS);
  ExpectStrictRequest(Body(frame));

  frame.clear();
  AppendBatchRemoveRequest("t", {"x"}, true, &frame);
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kBatchRemove);
  EXPECT_TRUE(r.force);
  EXPECT_EQ(r.keys, std::vector<std::string_view>{"x"});
  ExpectStrictRequest(Body(frame));

  frame.clear();
  AppendPutFinishRequest(LookupOp::kPutRevoke, id, "", "k", ReplicaType::LOCAL_DISK, &frame);
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kPutRevoke);
  EXPECT_EQ(r.type, ReplicaType::LOCAL_DISK);
  ExpectStrictRequest(Body(frame));
}

// PutEnd's and BatchPutEnd's checksums are an optional tail: a frame
// without one is what older clients send (and decodes as none), one with it
// round-trips, a tail cut short or padded is refused, and a revoke has none.
TEST(MutationWire, PutEndsChecksumsAreAnOptionalTail) {
  const UUID id = UUID::Generate();
  LookupRequest r;
  std::string plain, frame;
  AppendPutFinishRequest(LookupOp::kPutEnd, id, "t", "k", ReplicaType::MEMORY, &plain);
  AppendPutFinishRequest(LookupOp::kPutEnd, id, "t", "k", ReplicaType::MEMORY, &frame, 0x1234);
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.end_checksum, std::optional<uint64_t>(0x1234));
  ASSERT_EQ(DecodeLookupRequest(Body(plain), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.end_checksum, std::nullopt);
  const std::string_view body = Body(frame);
  for (size_t cut = 1; cut < 8; ++cut) {
    EXPECT_EQ(DecodeLookupRequest(body.substr(0, body.size() - cut), 16, &r),
              ErrorCode::INVALID_PARAMS)
        << cut;
  }
  std::string longer(body);
  longer.push_back('\0');
  EXPECT_EQ(DecodeLookupRequest(longer, 16, &r), ErrorCode::INVALID_PARAMS);
  std::string revoke(Body(plain));
  revoke[0] = static_cast<char>(LookupOp::kPutRevoke);
  revoke.append(8, '\0');
  EXPECT_EQ(DecodeLookupRequest(revoke, 16, &r), ErrorCode::INVALID_PARAMS);

  frame.clear();
  AppendBatchPutFinishRequest(LookupOp::kBatchPutEnd, id, "t", {"a", "b"}, &frame, {1, 2});
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.checksums, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(DecodeLookupRequest(Body(frame).substr(0, Body(frame).size() - 8), 16, &r),
            ErrorCode::INVALID_PARAMS);
  longer = std::string(Body(frame));
  longer.append(8, '\0');
  EXPECT_EQ(DecodeLookupRequest(longer, 16, &r), ErrorCode::INVALID_PARAMS);
  frame.clear();
  AppendBatchPutFinishRequest(LookupOp::kBatchPutEnd, id, "t", {"a", "b"}, &frame);
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_TRUE(r.checksums.empty());
}

TEST(MutationWire, RepliesRoundTripAndMalformedOnesAreRpcFail) {
  ReplicaDescriptor d;
  d.id = 9;
  d.type = ReplicaType::MEMORY;
  d.memory.endpoint = "10.0.0.1:1";
  d.memory.buffer_address = 0x1000;
  d.memory.size = 64;
  std::string frame;
  AppendBatchPutStartReply({std::vector<ReplicaDescriptor>{d}, ErrorCode::OBJECT_ALREADY_EXISTS},
                           &frame);
  auto batch = DecodeBatchPutStartReply(Body(frame), 2);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE((*batch)[0].ok());
  EXPECT_EQ((*batch)[0]->at(0).memory.buffer_address, 0x1000u);
  EXPECT_EQ((*batch)[1].error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(DecodeBatchPutStartReply(Body(frame), 3).error(), ErrorCode::RPC_FAIL);
  const std::string_view body = Body(frame);
  for (size_t n = 4; n < body.size(); ++n) {
    EXPECT_EQ(DecodeBatchPutStartReply(body.substr(0, n), 2).error(), ErrorCode::RPC_FAIL) << n;
  }

  frame.clear();
  AppendBatchExistReply({true, false, ErrorCode::INVALID_KEY}, &frame);
  auto exist = DecodeBatchExistReply(Body(frame), 3);
  ASSERT_TRUE(exist.ok());
  EXPECT_TRUE(*(*exist)[0]);
  EXPECT_FALSE(*(*exist)[1]);
  EXPECT_EQ((*exist)[2].error(), ErrorCode::INVALID_KEY);

  frame.clear();
  AppendCodesReply({ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND}, &frame);
  auto codes = DecodeCodesReply(Body(frame), 2);
  ASSERT_TRUE(codes.ok());
  EXPECT_EQ(*codes, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND}));

  frame.clear();
  AppendCodeReply(ErrorCode::NOT_LEADER, &frame);
  EXPECT_EQ(DecodeCodeReply(Body(frame)), ErrorCode::NOT_LEADER);
  EXPECT_EQ(DecodePutStartReply(Body(frame)).error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(DecodeExistReply(Body(frame)).error(), ErrorCode::NOT_LEADER);
  std::string padded(Body(frame));
  padded.push_back('\0');
  EXPECT_EQ(DecodeCodeReply(padded), ErrorCode::RPC_FAIL);
}

// The one-round-trip put's two requests carry what the directory needs,
// and their replies carry a grant (or, for a commit, maybe none).
TEST(MutationWire, ReserveAndCommitRoundTrip) {
  const UUID id = UUID::Generate();
  PutConfig c;
  c.replica_num = 2;
  c.prefer_host = "10.0.0.2";
  c.checksum = 0xfeed;
  c.group_id = "g";
  std::string frame;
  AppendReservePutRequest(id, "t", 65536, c, &frame);
  LookupRequest r;
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kReservePut);
  EXPECT_EQ(r.client, id);
  EXPECT_EQ(r.tenant, "t");
  EXPECT_EQ(r.size, 65536u);
  EXPECT_EQ(r.config.replica_num, 2u);
  EXPECT_EQ(r.config.prefer_host, "10.0.0.2");
  ExpectStrictRequest(Body(frame));

  frame.clear();
  AppendCommitPutRequest(id, "t", "key", 42, true, c, &frame);
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kCommitPut);
  EXPECT_EQ(r.client, id);
  EXPECT_EQ(r.tenant, "t");
  EXPECT_EQ(r.key, "key");
  EXPECT_EQ(r.reservation, 42u);
  EXPECT_TRUE(r.renew);
  EXPECT_EQ(r.config.checksum, std::optional<uint64_t>(0xfeed));
  EXPECT_EQ(r.config.group_id, "g");
  ExpectStrictRequest(Body(frame));

  PutReservationGrant g;
  g.id = 7;
  g.ttl_ms = 20'000;
  ReplicaDescriptor& d = g.replicas.emplace_back();
  d.id = 7;
  d.type = ReplicaType::MEMORY;
  d.memory.endpoint = "10.0.0.1:1";
  d.memory.buffer_address = 0x2000;
  d.memory.size = 65536;
  frame.clear();
  AppendReservePutReply(g, &frame);
  auto granted = DecodeReservePutReply(Body(frame));
  ASSERT_TRUE(granted.ok());
  EXPECT_EQ(granted->id, 7u);
  EXPECT_EQ(granted->ttl_ms, 20'000);
  ASSERT_EQ(granted->replicas.size(), 1u);
  EXPECT_EQ(granted->replicas[0].memory.buffer_address, 0x2000u);
  std::string_view body = Body(frame);
  for (size_t n = 4; n < body.size(); ++n) {
    EXPECT_EQ(DecodeReservePutReply(body.substr(0, n)).error(), ErrorCode::RPC_FAIL) << n;
  }

  frame.clear();
  AppendCommitPutReply({ErrorCode::OK, g}, &frame);
  auto committed = DecodeCommitPutReply(Body(frame));
  ASSERT_TRUE(committed.ok());
  ASSERT_TRUE(*committed);
  EXPECT_EQ((*committed)->replicas[0].memory.size, 65536u);
  body = Body(frame);
  for (size_t n = 4; n < body.size(); ++n) {
    EXPECT_EQ(DecodeCommitPutReply(body.substr(0, n)).error(), ErrorCode::RPC_FAIL) << n;
  }
  frame.clear();
  AppendCommitPutReply({ErrorCode::OK, std::nullopt}, &frame);
  committed = DecodeCommitPutReply(Body(frame));
  ASSERT_TRUE(committed.ok());
  EXPECT_FALSE(*committed);
  frame.clear();
  AppendCommitPutReply({ErrorCode::LEASE_EXPIRED, std::nullopt}, &frame);
  EXPECT_EQ(DecodeCommitPutReply(Body(frame)).error(), ErrorCode::LEASE_EXPIRED);
  frame.clear();
  AppendReservePutReply(ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, &frame);
  EXPECT_EQ(DecodeReservePutReply(Body(frame)).error(), ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS);
}

TEST(MutationWire, BatchReserveAndCommitRoundTrip) {
  const UUID id = UUID::Generate();
  PutConfig c;
  c.replica_num = 2;
  c.group_id = "g";
  std::string frame;
  AppendBatchReservePutRequest(id, "t", {4096, 65536}, c, &frame);
  LookupRequest r;
  ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kBatchReservePut);
  EXPECT_EQ(r.client, id);
  EXPECT_EQ(r.tenant, "t");
  EXPECT_EQ(r.sizes, (std::vector<uint64_t>{4096, 65536}));
  EXPECT_EQ(r.config.replica_num, 2u);
  ExpectStrictRequest(Body(frame));
  EXPECT_EQ(DecodeLookupRequest(Body(frame), 1, &r), ErrorCode::INVALID_PARAMS) << "over the limit";

  for (const std::vector<uint64_t>& sums : {std::vector<uint64_t>{}, {0xa, 0xb}}) {
    frame.clear();
    AppendBatchCommitPutRequest(id, "t", {"k1", "k2"}, {41, 42}, sums, true, c, &frame);
    ASSERT_EQ(DecodeLookupRequest(Body(frame), 16, &r), ErrorCode::OK);
    EXPECT_EQ(r.op, LookupOp::kBatchCommitPut);
    EXPECT_EQ(r.client, id);
    ASSERT_EQ(r.keys.size(), 2u);
    EXPECT_EQ(r.keys[1], "k2");
    EXPECT_EQ(r.reservations, (std::vector<uint64_t>{41, 42}));
    EXPECT_EQ(r.checksums, sums);
    EXPECT_TRUE(r.renew);
    EXPECT_EQ(r.config.group_id, "g");
    ExpectStrictRequest(Body(frame));
    EXPECT_EQ(DecodeLookupRequest(Body(frame), 1, &r), ErrorCode::INVALID_PARAMS);
  }

  PutReservationGrant g;
  g.id = 7;
  g.ttl_ms = 20'000;
  ReplicaDescriptor& d = g.replicas.emplace_back();
  d.type = ReplicaType::MEMORY;
  d.memory.buffer_address = 0x2000;
  frame.clear();
  AppendBatchReservePutReply(std::vector<PutReservationGrant>{g, g}, &frame);
  auto granted = DecodeBatchReservePutReply(Body(frame), 2);
  ASSERT_TRUE(granted.ok());
  ASSERT_EQ(granted->size(), 2u);
  EXPECT_EQ((*granted)[1].replicas.at(0).memory.buffer_address, 0x2000u);
  EXPECT_EQ(DecodeBatchReservePutReply(Body(frame), 3).error(), ErrorCode::RPC_FAIL)
      << "not the count asked for";
  std::string_view body = Body(frame);
  for (size_t n = 4; n < body.size(); ++n) {
    EXPECT_EQ(DecodeBatchReservePutReply(body.substr(0, n), 2).error(), ErrorCode::RPC_FAIL) << n;
  }
  frame.clear();
  AppendBatchReservePutReply(ErrorCode::NO_AVAILABLE_HANDLE, &frame);
  EXPECT_EQ(DecodeBatchReservePutReply(Body(frame), 2).error(), ErrorCode::NO_AVAILABLE_HANDLE);

  frame.clear();
  AppendBatchCommitPutReply({{ErrorCode::OK, g},
                             {ErrorCode::OK, std::nullopt},
                             {ErrorCode::OBJECT_ALREADY_EXISTS, std::nullopt}},
                            &frame);
  auto committed = DecodeBatchCommitPutReply(Body(frame), 3);
  ASSERT_TRUE(committed.ok());
  ASSERT_EQ(committed->size(), 3u);
  ASSERT_TRUE((*committed)[0].ok());
  ASSERT_TRUE((*committed)[0].value());
  EXPECT_EQ((*committed)[0].value()->id, 7u);
  ASSERT_TRUE((*committed)[1].ok());
  EXPECT_FALSE((*committed)[1].value());
  EXPECT_EQ((*committed)[2].error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  body = Body(frame);
  for (size_t n = 4; n < body.size(); ++n) {
    EXPECT_EQ(DecodeBatchCommitPutReply(body.substr(0, n), 3).error(), ErrorCode::RPC_FAIL) << n;
  }
  EXPECT_EQ(DecodeBatchCommitPutReply(Body(frame), 2).error(), ErrorCode::RPC_FAIL);
}

}  // namespace
}  // namespace shelfmark
