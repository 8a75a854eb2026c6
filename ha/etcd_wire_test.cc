#include "ha/etcd_wire.h"

#include <gtest/gtest.h>

#include "ha/base64.h"
#include "ha/json_reader.h"

namespace shelfmark::ha::etcdwire {
namespace {

TEST(EtcdWire, RequestsAreJsonWithBase64KeysAndStringInts) {
  auto put = ParseJson(PutRequest("k", "v", 42));
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->Find("key")->text, Base64Encode("k"));
  EXPECT_EQ(put->Find("lease")->text, "42");
  auto txn = ParseJson(CreateIfAbsentRequest("k", "v", 7));
  ASSERT_TRUE(txn.ok());
  EXPECT_EQ(txn->Find("compare")->items[0].Find("target")->text, "CREATE");
  EXPECT_EQ(txn->Find("success")->items[0].Find("request_put")->Find("lease")->text, "7");
  EXPECT_EQ(txn->Find("success")->items.size(), 1u);
  auto recorded = ParseJson(CreateIfAbsentRequest("k", "v", 7, "r"));
  ASSERT_TRUE(recorded.ok());
  ASSERT_EQ(recorded->Find("success")->items.size(), 2u);
  const auto* record = recorded->Find("success")->items[1].Find("request_put");
  EXPECT_EQ(record->Find("key")->text, Base64Encode("r"));
  EXPECT_EQ(record->Find("value")->text, Base64Encode("v"));
  EXPECT_EQ(record->Find("lease")->text, "0") << "the record outlives the lease";
  auto del = ParseJson(DeleteIfCreatedAtRequest("k", 9));
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->Find("compare")->items[0].Find("create_revision")->text, "9");
  EXPECT_TRUE(ParseJson(LeaseGrantRequest(2)).ok());
  EXPECT_TRUE(ParseJson(LeaseIdRequest(-5)).ok());
}

TEST(EtcdWire, DecodesReplies) {
  auto range = DecodeRange(R"({"header":{"revision":"8"},"kvs":[{"key":"aw==",
      "create_revision":"5","mod_revision":"6","version":"2","value":"dg==","lease":"77"}],
      "count":"1"})");
  ASSERT_TRUE(range.ok());
  ASSERT_TRUE(range->has_value());
  EXPECT_EQ((*range)->key, "k");
  EXPECT_EQ((*range)->value, "v");
  EXPECT_EQ((*range)->create_revision, 5);
  EXPECT_EQ((*range)->lease, 77);
  auto none = DecodeRange(R"({"header":{"revision":"8"}})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto grant = DecodeLeaseGrant(R"({"header":{},"ID":"694d7f","TTL":"2"})");
  EXPECT_EQ(grant.error(), ErrorCode::DATA_CORRUPTED);  // not decimal
  grant = DecodeLeaseGrant(R"({"header":{},"ID":"7587","TTL":"2"})");
  ASSERT_TRUE(grant.ok());
  EXPECT_EQ(grant->id, 7587);
  EXPECT_EQ(grant->ttl_s, 2);

  auto alive = DecodeKeepAlive(R"({"result":{"header":{},"ID":"7587","TTL":"2"}})");
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(alive->ttl_s, 2);
  alive = DecodeKeepAlive(R"({"result":{"header":{},"ID":"7587"}})");
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(alive->ttl_s, 0);  // unknown lease
}

TEST(EtcdWire, DecodesBothOutcomesOfCreateIfAbsent) {
  auto won = DecodeCreateIfAbsent(
      R"({"header":{"revision":"11"},"succeeded":true,"responses":[{"response_put":{}}]})");
  ASSERT_TRUE(won.ok());
  EXPECT_TRUE(won->created);
  EXPECT_EQ(won->revision, 11);
  auto lost = DecodeCreateIfAbsent(R"({"header":{"revision":"12"},"responses":[
      {"response_range":{"kvs":[{"key":"aw==","create_revision":"11","value":"aDox"}]}}]})");
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(lost->created);
  EXPECT_EQ(lost->revision, 11);
  EXPECT_EQ(lost->holder.value, "h:1");
  // A failed compare with no holder cannot happen: corrupted.
  EXPECT_EQ(DecodeCreateIfAbsent(R"({"responses":[{"response_range":{}}]})").error(),
            ErrorCode::DATA_CORRUPTED);
}

TEST(EtcdWire, WrongShapesAreCorruptedAndGatewayErrorsAreEtcdErrors) {
  for (const char* bad : {"[]", "1", R"({"kvs":{}})", R"({"kvs":[1]})",
                          R"({"kvs":[{"key":"***"}]})", R"({"kvs":[{"lease":true}]})"}) {
    EXPECT_EQ(DecodeRange(bad).error(), ErrorCode::DATA_CORRUPTED) << bad;
  }
  EXPECT_EQ(DecodeKeepAlive("{}").error(), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(DecodeCreateIfAbsent(R"({"header":[],"succeeded":true})").error(),
            ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(DecodeTxnSucceeded(R"({"succeeded":"yes"})").error(), ErrorCode::DATA_CORRUPTED);
  const char* error = R"({"error":"etcdserver: requested lease not found","code":5})";
  EXPECT_EQ(DecodeEmpty(error), ErrorCode::ETCD_OPERATION_ERROR);
  auto gateway = DecodeGatewayError(error);
  ASSERT_TRUE(gateway.has_value());
  EXPECT_EQ(gateway->grpc_code, 5);
  EXPECT_EQ(gateway->message, "etcdserver: requested lease not found");
  gateway = DecodeGatewayError(R"({"error":{"grpc_code":14,"message":"unavailable"}})");
  ASSERT_TRUE(gateway.has_value());
  EXPECT_EQ(gateway->grpc_code, 14);
  EXPECT_EQ(gateway->message, "unavailable");
  EXPECT_FALSE(DecodeGatewayError("{}").has_value());
  EXPECT_FALSE(DecodeGatewayError("garbage").has_value());
}

}  // namespace
}  // namespace shelfmark::ha::etcdwire
