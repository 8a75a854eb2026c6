// The lookup channel's messages: what the encoders write decodes to the same
// values, and every other byte string is refused with a typed error.
#include "rpc/lookup_wire.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shelfmark {
namespace {

GetReplicaListResponse SampleResponse() {
  GetReplicaListResponse r;
  r.size = 4096;
  r.checksum = 0x1234'5678'9abc'def0ULL;
  r.data_type = DataType::TENSOR;
  r.lease_ttl_ms = 5000;
  ReplicaDescriptor mem;
  mem.id = 7;
  mem.status = ReplicaStatus::COMPLETE;
  mem.type = ReplicaType::MEMORY;
  mem.memory = {"10.0.0.1:4000", "ucx", 0x7f00'0000'1000ULL, 4096, std::string("r\0k", 3),
                UUID{1, 2}};
  ReplicaDescriptor disk;
  disk.id = 9;
  disk.status = ReplicaStatus::COMPLETE;
  disk.type = ReplicaType::LOCAL_DISK;
  disk.disk = {UUID{3, 4}, 4096, "10.0.0.2:4001"};
  r.replicas = {mem, disk};
  return r;
}

// The body of the single frame in `frame`.
std::string BodyOf(const std::string& frame) {
  uint32_t body = 0;
  EXPECT_TRUE(ParseLookupHeader(frame, &body));
  EXPECT_EQ(frame.size(), kLookupHeaderBytes + body);
  return frame.substr(kLookupHeaderBytes);
}

std::string GetReplyBody(const Result<GetReplicaListResponse>& r) {
  std::string frame;
  AppendGetReply(r, &frame);
  return BodyOf(frame);
}

TEST(LookupWire, GetReplyRoundTrips) {
  const std::string body = GetReplyBody(SampleResponse());
  auto back = DecodeGetReply(body);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(GetReplyBody(*back), body);  // every field survived
  EXPECT_EQ(back->replicas[0].memory.rkey, std::string("r\0k", 3));
  EXPECT_EQ(back->replicas[1].disk.client_id, (UUID{3, 4}));
  EXPECT_EQ(back->checksum, SampleResponse().checksum);
  auto missing = DecodeGetReply(GetReplyBody(ErrorCode::OBJECT_NOT_FOUND));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), ErrorCode::OBJECT_NOT_FOUND);
}

TEST(LookupWire, EveryTruncationAndTrailingByteIsRefused) {
  const std::string body = GetReplyBody(SampleResponse());
  for (size_t n = 0; n < body.size(); ++n) {
    auto r = DecodeGetReply(body.substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error(), ErrorCode::RPC_FAIL) << n;
  }
  EXPECT_EQ(DecodeGetReply(body + "x").error(), ErrorCode::RPC_FAIL);
  std::string request;
  AppendBatchGetRequest("t", {"a", "bb"}, &request);
  const std::string request_body = BodyOf(request);
  LookupRequest decoded;
  ASSERT_EQ(DecodeLookupRequest(request_body, 16, &decoded), ErrorCode::OK);
  for (size_t n = 0; n < request_body.size(); ++n) {
    EXPECT_EQ(DecodeLookupRequest(request_body.substr(0, n), 16, &decoded),
              ErrorCode::INVALID_PARAMS) << n;
  }
  EXPECT_EQ(DecodeLookupRequest(request_body + "x", 16, &decoded), ErrorCode::INVALID_PARAMS);
}

TEST(LookupWire, OutOfRangeEnumsAndCountsAreRefused) {
  std::string body = GetReplyBody(SampleResponse());
  // Layout: code 4, size 8, has_checksum 1, checksum 8, data_type 1, lease 8,
  // count 4, then the first replica: id 8, status 1, type 1.
  const size_t has_checksum = 12, data_type = 21, count = 30, status = 42, type = 43;
  for (auto [at, value] : std::vector<std::pair<size_t, char>>{
           {has_checksum, 2}, {data_type, 9}, {status, 5}, {type, 2}}) {
    std::string bad = body;
    bad[at] = value;
    EXPECT_EQ(DecodeGetReply(bad).error(), ErrorCode::RPC_FAIL) << at;
  }
  std::string many = body;
  many[count + 3] = 0x7f;  // ~2^30 replicas in a few bytes
  EXPECT_EQ(DecodeGetReply(many).error(), ErrorCode::RPC_FAIL);
  std::string unknown_code = body;
  unknown_code[0] = 0x55;
  unknown_code[3] = 0x55;
  EXPECT_EQ(DecodeGetReply(unknown_code.substr(0, 4)).error(), ErrorCode::INTERNAL_ERROR);
}

TEST(LookupWire, RequestsDecodeToViewsAndBatchesAreBounded) {
  std::string frames;
  AppendGetRequest("acme", "key-1", &frames);
  const std::string get_body = BodyOf(frames);  // the views point into it
  LookupRequest r;
  ASSERT_EQ(DecodeLookupRequest(get_body, 1, &r), ErrorCode::OK);
  EXPECT_EQ(r.op, LookupOp::kGet);
  EXPECT_EQ(r.tenant, "acme");
  EXPECT_EQ(r.key, "key-1");
  std::string batch;
  AppendBatchGetRequest("", {"a", "b", "c"}, &batch);
  const std::string batch_body = BodyOf(batch);
  ASSERT_EQ(DecodeLookupRequest(batch_body, 3, &r), ErrorCode::OK);
  EXPECT_EQ(r.keys, (std::vector<std::string_view>{"a", "b", "c"}));
  EXPECT_EQ(DecodeLookupRequest(batch_body, 2, &r), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLookupRequest(std::string(1, '\x09'), 2, &r), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(DecodeLookupRequest("", 2, &r), ErrorCode::INVALID_PARAMS);
}

TEST(LookupWire, BatchRepliesHoldOneItemPerKey) {
  std::string frame;
  const size_t start = BeginBatchGetReply(3, &frame);
  AppendBatchItem(SampleResponse(), &frame);
  AppendBatchItem(ErrorCode::OBJECT_NOT_FOUND, &frame);
  AppendBatchItem(SampleResponse(), &frame);
  EndLookupFrame(&frame, start);
  const std::string body = BodyOf(frame);
  auto items = DecodeBatchGetReply(body, 3);
  ASSERT_TRUE(items.ok());
  EXPECT_TRUE((*items)[0].ok());
  EXPECT_EQ((*items)[1].error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ((*items)[2]->replicas.size(), 2u);
  EXPECT_EQ(DecodeBatchGetReply(body, 2).error(), ErrorCode::RPC_FAIL);
}

TEST(LookupWire, HandshakeRepliesRoundTrip) {
  std::string frame;
  AppendChallengeReply(ErrorCode::OK, true, std::string(32, 'n'), &frame);
  auto challenge = DecodeChallengeReply(BodyOf(frame));
  ASSERT_TRUE(challenge.ok());
  EXPECT_TRUE(challenge->required);
  EXPECT_EQ(challenge->server_nonce, std::string(32, 'n'));
  frame.clear();
  AppendAuthenticateReply(ErrorCode::UNAUTHENTICATED, "", &frame);
  EXPECT_EQ(DecodeAuthenticateReply(BodyOf(frame)).error(), ErrorCode::UNAUTHENTICATED);
  uint32_t body = 0;
  EXPECT_FALSE(ParseLookupHeader("SMLX0000", &body));
  EXPECT_FALSE(ParseLookupHeader("SMLK", &body));
}

}  // namespace
}  // namespace shelfmark
