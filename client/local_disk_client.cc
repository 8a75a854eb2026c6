#include "client/local_disk_client.h"

#include <atomic>
#include <utility>

#include "rpc/local_disk_wire.h"

namespace shelfmark {
namespace {

std::atomic<uint64_t> next_request_id{1};

// One LOCAL_DISK read request; the reply's data goes to `into` (or to the
// reply when into.data is null). `size` 0: any size.
Result<LocalDiskPlace> Request(AmTransport& am, std::string_view endpoint, std::string_view tenant,
                               std::string_view key, uint64_t size, AmReplyTarget into,
                               int64_t timeout_ms, AmReply* reply) {
  const ErrorCode names = CheckLocalDiskNames(tenant, key);
  if (names != ErrorCode::OK) return names;
  LocalDiskRequest request;
  request.request_id = next_request_id.fetch_add(1, std::memory_order_relaxed);
  request.tenant = std::string(tenant);
  request.key = std::string(key);
  request.expected_size = size;
  auto answer =
      am.CallInto(endpoint, kLocalDiskReadAmId, EncodeLocalDiskRequest(request), "", into,
                  timeout_ms);
  if (!answer.ok()) return answer.error();
  auto header = DecodeLocalDiskReply(answer->header);
  if (!header.ok()) return ErrorCode::DATA_CORRUPTED;
  if (header->status != ErrorCode::OK) return header->status;
  if (header->data_size != answer->data_size || (size != 0 && size != header->data_size)) {
    return ErrorCode::DATA_CORRUPTED;
  }
  *reply = std::move(answer).value();
  return LocalDiskPlace{header->bucket_id, header->offset};
}

}  // namespace

Result<LocalDiskPlace> ReadLocalDiskInto(AmTransport& am, std::string_view endpoint,
                                         std::string_view tenant, std::string_view key,
                                         void* dst, uint64_t size, int64_t timeout_ms) {
  if (dst == nullptr && size != 0) return ErrorCode::INVALID_PARAMS;
  AmReply reply;
  return Request(am, endpoint, tenant, key, size, AmReplyTarget{dst, size}, timeout_ms, &reply);
}

Result<LocalDiskRead> ReadLocalDisk(AmTransport& am, std::string_view endpoint,
                                    std::string_view tenant, std::string_view key,
                                    uint64_t expected_size, int64_t timeout_ms) {
  AmReply reply;
  auto place =
      Request(am, endpoint, tenant, key, expected_size, AmReplyTarget{}, timeout_ms, &reply);
  if (!place.ok()) return place.error();
  return LocalDiskRead{std::move(reply.data), place->bucket_id, place->offset};
}

ErrorCode ProbeLocalDisk(AmTransport& am, std::string_view endpoint, uint64_t size,
                         int64_t timeout_ms, void* dst) {
  if (size > kMaxProbeBytes) return ErrorCode::INVALID_PARAMS;
  const AmReplyTarget into = dst == nullptr ? AmReplyTarget{} : AmReplyTarget{dst, size};
  auto reply = am.CallInto(endpoint, kLocalDiskProbeAmId, EncodeLocalDiskProbe(size), "", into,
                           timeout_ms);
  if (!reply.ok()) return reply.error();
  return reply->data_size == size ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
}

}  // namespace shelfmark
