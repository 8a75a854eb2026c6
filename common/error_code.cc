#include "common/error_code.h"

#include <utility>

namespace shelfmark {
namespace {

constexpr std::pair<ErrorCode, std::string_view> kNames[] = {
    {ErrorCode::OK, "OK"},
    {ErrorCode::INTERNAL_ERROR, "INTERNAL_ERROR"},
    {ErrorCode::BUFFER_OVERFLOW, "BUFFER_OVERFLOW"},
    {ErrorCode::SEGMENT_NOT_FOUND, "SEGMENT_NOT_FOUND"},
    {ErrorCode::SEGMENT_ALREADY_EXISTS, "SEGMENT_ALREADY_EXISTS"},
    {ErrorCode::NO_AVAILABLE_HANDLE, "NO_AVAILABLE_HANDLE"},
    {ErrorCode::INVALID_KEY, "INVALID_KEY"},
    {ErrorCode::INVALID_PARAMS, "INVALID_PARAMS"},
    {ErrorCode::INVALID_WRITE, "INVALID_WRITE"},
    {ErrorCode::INVALID_READ, "INVALID_READ"},
    {ErrorCode::INVALID_REPLICA, "INVALID_REPLICA"},
    {ErrorCode::REPLICA_IS_NOT_READY, "REPLICA_IS_NOT_READY"},
    {ErrorCode::OBJECT_NOT_FOUND, "OBJECT_NOT_FOUND"},
    {ErrorCode::OBJECT_ALREADY_EXISTS, "OBJECT_ALREADY_EXISTS"},
    {ErrorCode::OBJECT_HAS_LEASE, "OBJECT_HAS_LEASE"},
    {ErrorCode::LEASE_EXPIRED, "LEASE_EXPIRED"},
    {ErrorCode::OBJECT_HAS_REFERENCE, "OBJECT_HAS_REFERENCE"},
    {ErrorCode::TRANSFER_FAIL, "TRANSFER_FAIL"},
    {ErrorCode::CHECKSUM_MISMATCH, "CHECKSUM_MISMATCH"},
    {ErrorCode::RPC_FAIL, "RPC_FAIL"},
    {ErrorCode::ILLEGAL_CLIENT, "ILLEGAL_CLIENT"},
    {ErrorCode::NEED_REMOUNT, "NEED_REMOUNT"},
    {ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS, "UNAVAILABLE_IN_CURRENT_STATUS"},
    {ErrorCode::FILE_NOT_FOUND, "FILE_NOT_FOUND"},
    {ErrorCode::FILE_OPEN_FAIL, "FILE_OPEN_FAIL"},
    {ErrorCode::FILE_READ_FAIL, "FILE_READ_FAIL"},
    {ErrorCode::FILE_WRITE_FAIL, "FILE_WRITE_FAIL"},
    {ErrorCode::DATA_CORRUPTED, "DATA_CORRUPTED"},
    {ErrorCode::VERSION_MISMATCH, "VERSION_MISMATCH"},
    {ErrorCode::STORE_UNAVAILABLE, "STORE_UNAVAILABLE"},
    {ErrorCode::UNAUTHENTICATED, "UNAUTHENTICATED"},
    {ErrorCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
    {ErrorCode::RATE_LIMITED, "RATE_LIMITED"},
    {ErrorCode::ETCD_OPERATION_ERROR, "ETCD_OPERATION_ERROR"},
    {ErrorCode::ETCD_KEY_NOT_EXIST, "ETCD_KEY_NOT_EXIST"},
    {ErrorCode::ETCD_TRANSACTION_FAIL, "ETCD_TRANSACTION_FAIL"},
    {ErrorCode::NOT_LEADER, "NOT_LEADER"},
    {ErrorCode::TASK_NOT_FOUND, "TASK_NOT_FOUND"},
    {ErrorCode::TASK_PENDING_LIMIT_EXCEEDED, "TASK_PENDING_LIMIT_EXCEEDED"},
};

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& [c, name] : kNames) {
    if (c == code) return name;
  }
  return "UNKNOWN_ERROR_CODE";
}

ErrorCode ErrorCodeFromInt(int32_t value) {
  for (const auto& entry : kNames) {
    if (static_cast<int32_t>(entry.first) == value) return entry.first;
  }
  return ErrorCode::INTERNAL_ERROR;
}

}  // namespace shelfmark
