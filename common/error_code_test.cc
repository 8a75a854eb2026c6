#include "common/error_code.h"

#include <gtest/gtest.h>

#include "common/object_key.h"
#include "common/result.h"

namespace shelfmark {
namespace {

TEST(ErrorCode, NamesAreStable) {
  EXPECT_EQ(ErrorCodeName(ErrorCode::OK), "OK");
  EXPECT_EQ(ErrorCodeName(ErrorCode::OBJECT_NOT_FOUND), "OBJECT_NOT_FOUND");
  EXPECT_EQ(ErrorCodeName(static_cast<ErrorCode>(12345)), "UNKNOWN_ERROR_CODE");
}

TEST(ErrorCode, WireValuesRoundTripAndUnknownValuesAreInternal) {
  EXPECT_EQ(static_cast<int32_t>(ErrorCode::OBJECT_NOT_FOUND), -704);
  EXPECT_EQ(ErrorCodeFromInt(-704), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(ErrorCodeFromInt(-705), ErrorCode::OBJECT_ALREADY_EXISTS);
  EXPECT_EQ(ErrorCodeFromInt(77), ErrorCode::INTERNAL_ERROR);
  EXPECT_EQ(ErrorCodeFromInt(-1300), ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(ErrorCodeName(ErrorCode::PERMISSION_DENIED), "PERMISSION_DENIED");
  EXPECT_EQ(ErrorCodeName(ErrorCode::RATE_LIMITED), "RATE_LIMITED");
}

TEST(ErrorCode, HaCodesUseTheirOwnRange) {
  EXPECT_EQ(ErrorCodeFromInt(-1400), ErrorCode::ETCD_OPERATION_ERROR);
  EXPECT_EQ(ErrorCodeFromInt(-1401), ErrorCode::ETCD_KEY_NOT_EXIST);
  EXPECT_EQ(ErrorCodeFromInt(-1402), ErrorCode::ETCD_TRANSACTION_FAIL);
  EXPECT_EQ(ErrorCodeFromInt(-1410), ErrorCode::NOT_LEADER);
  EXPECT_EQ(ErrorCodeName(ErrorCode::NOT_LEADER), "NOT_LEADER");
  EXPECT_EQ(ErrorCodeFromInt(-1420), ErrorCode::TASK_NOT_FOUND);
  EXPECT_EQ(ErrorCodeName(ErrorCode::TASK_PENDING_LIMIT_EXCEEDED), "TASK_PENDING_LIMIT_EXCEEDED");
  // Mooncake's etcd numbers stay Shelfmark's own codes.
  EXPECT_EQ(ErrorCodeFromInt(-1000), ErrorCode::ILLEGAL_CLIENT);
}

TEST(Result, HoldsValueOrError) {
  Result<int> good = 5;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 5);
  EXPECT_EQ(good.error(), ErrorCode::OK);
  Result<int> bad = ErrorCode::INVALID_KEY;
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), ErrorCode::INVALID_KEY);
}

TEST(ObjectKey, LimitsKeysAndTenants) {
  EXPECT_EQ(ValidateKey(""), ErrorCode::INVALID_KEY);
  EXPECT_EQ(ValidateKey("k"), ErrorCode::OK);
  EXPECT_EQ(ValidateKey(std::string(kMaxKeyLength, 'x')), ErrorCode::OK);
  EXPECT_EQ(ValidateKey(std::string(kMaxKeyLength + 1, 'x')), ErrorCode::INVALID_KEY);
  EXPECT_EQ(ValidateTenant(""), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(EffectiveTenant(""), kDefaultTenant);
  EXPECT_EQ(EffectiveTenant("t1"), "t1");
}

}  // namespace
}  // namespace shelfmark
