#include "rpc/local_disk_wire.h"

#include "common/object_key.h"
#include "common/wire_bytes.h"

namespace shelfmark {

ErrorCode CheckLocalDiskNames(std::string_view tenant, std::string_view key) {
  if (tenant.size() > kMaxTenantLength) return ErrorCode::INVALID_PARAMS;
  if (key.empty() || key.size() > kMaxKeyLength) return ErrorCode::INVALID_PARAMS;
  return ErrorCode::OK;
}

std::string EncodeLocalDiskRequest(const LocalDiskRequest& request) {
  wire::Writer w;
  w.Put(kLocalDiskRequestMagic).Put(kLocalDiskWireVersion).Put(request.request_id);
  w.Bytes(request.tenant).Bytes(request.key).Put(request.expected_size);
  return w.Take();
}

Result<LocalDiskRequest> DecodeLocalDiskRequest(std::string_view bytes) {
  wire::Reader r(bytes.data(), bytes.size());
  const uint32_t magic = r.Get<uint32_t>();
  const uint8_t version = r.Get<uint8_t>();
  LocalDiskRequest request;
  request.request_id = r.Get<uint64_t>();
  request.tenant = r.Bytes();
  request.key = r.Bytes();
  request.expected_size = r.Get<uint64_t>();
  if (!r.done() || magic != kLocalDiskRequestMagic || version != kLocalDiskWireVersion) {
    return ErrorCode::INVALID_PARAMS;
  }
  const ErrorCode names = CheckLocalDiskNames(request.tenant, request.key);
  if (names != ErrorCode::OK) return names;
  return request;
}

std::string EncodeLocalDiskReply(const LocalDiskReply& reply) {
  wire::Writer w;
  w.Put(kLocalDiskReplyMagic).Put(kLocalDiskWireVersion).Put(static_cast<int32_t>(reply.status));
  w.Put(reply.bucket_id).Put(reply.offset).Put(reply.data_size);
  return w.Take();
}

Result<LocalDiskReply> DecodeLocalDiskReply(std::string_view bytes) {
  wire::Reader r(bytes.data(), bytes.size());
  const uint32_t magic = r.Get<uint32_t>();
  const uint8_t version = r.Get<uint8_t>();
  LocalDiskReply reply;
  reply.status = ErrorCodeFromInt(r.Get<int32_t>());
  reply.bucket_id = r.Get<int64_t>();
  reply.offset = r.Get<int64_t>();
  reply.data_size = r.Get<uint64_t>();
  if (!r.done() || magic != kLocalDiskReplyMagic || version != kLocalDiskWireVersion) {
    return ErrorCode::INVALID_PARAMS;
  }
  return reply;
}

std::string EncodeLocalDiskProbe(uint64_t size) {
  wire::Writer w;
  w.Put(kLocalDiskProbeMagic).Put(size);
  return w.Take();
}

Result<uint64_t> DecodeLocalDiskProbe(std::string_view bytes) {
  wire::Reader r(bytes.data(), bytes.size());
  const uint32_t magic = r.Get<uint32_t>();
  const uint64_t size = r.Get<uint64_t>();
  if (!r.done() || magic != kLocalDiskProbeMagic || size > kMaxProbeBytes) {
    return ErrorCode::INVALID_PARAMS;
  }
  return size;
}

}  // namespace shelfmark
