#include "ssdstore/local_disk_client.h"

#include <atomic>
#include <utility>

#include "ssdstore/local_disk_wire.h"

namespace shelfmark {
namespace {

std::atomic<uint64_t> next_request_id{1};

}  // namespace

Result<LocalDiskRead> ReadLocalDisk(UcxAm& am, std::string_view endpoint, std::string_view tenant,
                                    std::string_view key, uint64_t expected_size,
                                    int64_t timeout_ms) {
  const ErrorCode names = CheckLocalDiskNames(tenant, key);
  if (names != ErrorCode::OK) return names;
  LocalDiskRequest request;
  request.request_id = next_request_id.fetch_add(1, std::memory_order_relaxed);
  request.tenant = std::string(tenant);
  request.key = std::string(key);
  request.expected_size = expected_size;
  auto reply = am.Call(endpoint, kLocalDiskReadAmId, EncodeLocalDiskRequest(request), "",
                       timeout_ms);
  if (!reply.ok()) return reply.error();
  auto header = DecodeLocalDiskReply(reply->header);
  if (!header.ok()) return ErrorCode::DATA_CORRUPTED;
  if (header->status != ErrorCode::OK) return header->status;
  if (header->data_size != reply->data.size() ||
      (expected_size != 0 && expected_size != header->data_size)) {
    return ErrorCode::DATA_CORRUPTED;
  }
  LocalDiskRead read;
  read.data = std::move(reply->data);
  read.bucket_id = header->bucket_id;
  read.offset = header->offset;
  return read;
}

ErrorCode ProbeLocalDisk(UcxAm& am, std::string_view endpoint, uint64_t size, int64_t timeout_ms) {
  if (size > kMaxProbeBytes) return ErrorCode::INVALID_PARAMS;
  auto reply = am.Call(endpoint, kLocalDiskProbeAmId, EncodeLocalDiskProbe(size), "", timeout_ms);
  if (!reply.ok()) return reply.error();
  return reply->data.size() == size ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
}

}  // namespace shelfmark
