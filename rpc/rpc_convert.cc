#include "rpc/rpc_convert.h"

namespace shelfmark::rpcconv {
namespace {

constexpr ErrorCode kBad = ErrorCode::INVALID_PARAMS;

#define SM_DECODE_OR_RETURN(expr)               \
  do {                                          \
    ErrorCode sm_code_ = (expr);                \
    if (sm_code_ != ErrorCode::OK) return sm_code_; \
  } while (0)

// Copies a bounded blob (text or data) into a std::string.
template <typename Reader>
ErrorCode CopyBlob(Reader r, size_t max_bytes, std::string* out) {
  std::string_view v = View(r);
  if (v.size() > max_bytes) return kBad;
  out->assign(v.data(), v.size());
  return ErrorCode::OK;
}

template <typename ChecksumReader>
ErrorCode DecodeChecksum(ChecksumReader r, std::optional<uint64_t>* out) {
  switch (r.which()) {
    case ChecksumReader::Reads::NONE:
      out->reset();
      return ErrorCode::OK;
    case ChecksumReader::Reads::VALUE:
      *out = r.getValue();
      return ErrorCode::OK;
  }
  return kBad;
}

template <typename ChecksumBuilder>
void EncodeChecksum(const std::optional<uint64_t>& v, ChecksumBuilder b) {
  if (v.has_value()) {
    b.setValue(*v);
  } else {
    b.setNone();
  }
}

}  // namespace

// --- enums -------------------------------------------------------------------

wire::ReplicaStatus EncodeEnum(ReplicaStatus v) {
  return static_cast<wire::ReplicaStatus>(static_cast<uint16_t>(v));
}
wire::ReplicaType EncodeEnum(ReplicaType v) {
  return static_cast<wire::ReplicaType>(static_cast<uint16_t>(v));
}
wire::DataType EncodeEnum(DataType v) {
  return static_cast<wire::DataType>(static_cast<uint16_t>(v));
}
wire::ClientStatus EncodeEnum(ClientStatus v) {
  return static_cast<wire::ClientStatus>(static_cast<uint16_t>(v));
}

ErrorCode DecodeEnum(wire::ReplicaStatus v, ReplicaStatus* out) {
  switch (v) {
    case wire::ReplicaStatus::INITIALIZED: *out = ReplicaStatus::INITIALIZED; return ErrorCode::OK;
    case wire::ReplicaStatus::PROCESSING: *out = ReplicaStatus::PROCESSING; return ErrorCode::OK;
    case wire::ReplicaStatus::COMPLETE: *out = ReplicaStatus::COMPLETE; return ErrorCode::OK;
    case wire::ReplicaStatus::REMOVED: *out = ReplicaStatus::REMOVED; return ErrorCode::OK;
    case wire::ReplicaStatus::FAILED: *out = ReplicaStatus::FAILED; return ErrorCode::OK;
  }
  return kBad;
}

ErrorCode DecodeEnum(wire::ReplicaType v, ReplicaType* out) {
  switch (v) {
    case wire::ReplicaType::MEMORY: *out = ReplicaType::MEMORY; return ErrorCode::OK;
    case wire::ReplicaType::LOCAL_DISK: *out = ReplicaType::LOCAL_DISK; return ErrorCode::OK;
  }
  return kBad;
}

ErrorCode DecodeEnum(wire::DataType v, DataType* out) {
  switch (v) {
    case wire::DataType::UNKNOWN: *out = DataType::UNKNOWN; return ErrorCode::OK;
    case wire::DataType::KVCACHE: *out = DataType::KVCACHE; return ErrorCode::OK;
    case wire::DataType::TENSOR: *out = DataType::TENSOR; return ErrorCode::OK;
    case wire::DataType::WEIGHT: *out = DataType::WEIGHT; return ErrorCode::OK;
  }
  return kBad;
}

ErrorCode DecodeEnum(wire::ClientStatus v, ClientStatus* out) {
  switch (v) {
    case wire::ClientStatus::OK: *out = ClientStatus::OK; return ErrorCode::OK;
    case wire::ClientStatus::NEED_REMOUNT: *out = ClientStatus::NEED_REMOUNT; return ErrorCode::OK;
  }
  return kBad;
}

// --- structs -----------------------------------------------------------------

void Encode(const UUID& v, wire::Uuid::Builder b) {
  b.setHi(v.hi);
  b.setLo(v.lo);
}

UUID Decode(wire::Uuid::Reader r) { return UUID{r.getHi(), r.getLo()}; }

void Encode(const Segment& v, wire::Segment::Builder b) {
  Encode(v.id, b.initId());
  b.setName(AsText(v.name));
  b.setBase(v.base);
  b.setSize(v.size);
  b.setEndpoint(AsText(v.endpoint));
  b.setProtocol(AsText(v.protocol));
  b.setRkey(AsData(v.rkey));
}

ErrorCode Decode(wire::Segment::Reader r, Segment* out) {
  out->id = Decode(r.getId());
  SM_DECODE_OR_RETURN(CopyBlob(r.getName(), kMaxBlobBytes, &out->name));
  out->base = r.getBase();
  out->size = r.getSize();
  SM_DECODE_OR_RETURN(CopyBlob(r.getEndpoint(), kMaxBlobBytes, &out->endpoint));
  SM_DECODE_OR_RETURN(CopyBlob(r.getProtocol(), kMaxBlobBytes, &out->protocol));
  SM_DECODE_OR_RETURN(CopyBlob(r.getRkey(), kMaxBlobBytes, &out->rkey));
  return ErrorCode::OK;
}

void Encode(const MemoryDescriptor& v, wire::MemoryDescriptor::Builder b) {
  b.setEndpoint(AsText(v.endpoint));
  b.setProtocol(AsText(v.protocol));
  b.setBufferAddress(v.buffer_address);
  b.setSize(v.size);
  b.setRkey(AsData(v.rkey));
  Encode(v.segment_id, b.initSegmentId());
}

ErrorCode Decode(wire::MemoryDescriptor::Reader r, MemoryDescriptor* out) {
  SM_DECODE_OR_RETURN(CopyBlob(r.getEndpoint(), kMaxBlobBytes, &out->endpoint));
  SM_DECODE_OR_RETURN(CopyBlob(r.getProtocol(), kMaxBlobBytes, &out->protocol));
  out->buffer_address = r.getBufferAddress();
  out->size = r.getSize();
  SM_DECODE_OR_RETURN(CopyBlob(r.getRkey(), kMaxBlobBytes, &out->rkey));
  out->segment_id = Decode(r.getSegmentId());
  return ErrorCode::OK;
}

void Encode(const DiskDescriptor& v, wire::DiskDescriptor::Builder b) {
  Encode(v.client_id, b.initClientId());
  b.setObjectSize(v.object_size);
  b.setEndpoint(AsText(v.endpoint));
}

ErrorCode Decode(wire::DiskDescriptor::Reader r, DiskDescriptor* out) {
  out->client_id = Decode(r.getClientId());
  out->object_size = r.getObjectSize();
  return CopyBlob(r.getEndpoint(), kMaxBlobBytes, &out->endpoint);
}

void Encode(const ReplicaDescriptor& v, wire::ReplicaDescriptor::Builder b) {
  b.setId(v.id);
  b.setStatus(EncodeEnum(v.status));
  if (v.type == ReplicaType::LOCAL_DISK) {
    Encode(v.disk, b.initDisk());
  } else {
    Encode(v.memory, b.initMemory());
  }
}

ErrorCode Decode(wire::ReplicaDescriptor::Reader r, ReplicaDescriptor* out) {
  out->id = r.getId();
  SM_DECODE_OR_RETURN(DecodeEnum(r.getStatus(), &out->status));
  switch (r.which()) {
    case wire::ReplicaDescriptor::MEMORY:
      out->type = ReplicaType::MEMORY;
      out->disk = DiskDescriptor{};
      return Decode(r.getMemory(), &out->memory);
    case wire::ReplicaDescriptor::DISK:
      out->type = ReplicaType::LOCAL_DISK;
      out->memory = MemoryDescriptor{};
      return Decode(r.getDisk(), &out->disk);
  }
  return kBad;
}

void Encode(const PutConfig& v, wire::PutConfig::Builder b) {
  b.setReplicaNum(v.replica_num);
  if (!v.preferred_segments.empty()) {
    EncodeTexts(v.preferred_segments, b.initPreferredSegments(v.preferred_segments.size()));
  }
  EncodeChecksum(v.checksum, b.initChecksum());
  b.setDataType(EncodeEnum(v.data_type));
  b.setHardPin(v.hard_pin);
  b.setSoftPinTtlMs(v.soft_pin_ttl_ms);
  b.setGroupId(AsText(v.group_id));
  b.setReplace(v.replace);
  b.setPreferHost(AsText(v.prefer_host));
}

ErrorCode Decode(wire::PutConfig::Reader r, PutConfig* out) {
  out->replica_num = r.getReplicaNum();
  auto preferred = r.getPreferredSegments();
  if (preferred.size() > kMaxPreferredSegments) return kBad;
  out->preferred_segments.clear();
  out->preferred_segments.reserve(preferred.size());
  for (auto name : preferred) {
    if (name.size() > kMaxBlobBytes) return kBad;
    out->preferred_segments.emplace_back(View(name));
  }
  SM_DECODE_OR_RETURN(DecodeChecksum(r.getChecksum(), &out->checksum));
  SM_DECODE_OR_RETURN(DecodeEnum(r.getDataType(), &out->data_type));
  out->hard_pin = r.getHardPin();
  out->soft_pin_ttl_ms = r.getSoftPinTtlMs();
  out->replace = r.getReplace();
  SM_DECODE_OR_RETURN(CopyBlob(r.getPreferHost(), kMaxBlobBytes, &out->prefer_host));
  return CopyBlob(r.getGroupId(), kMaxBlobBytes, &out->group_id);
}

void Encode(const GetReplicaListResponse& v, wire::GetReplicaListResponse::Builder b) {
  EncodeReplicas(v.replicas, b.initReplicas(v.replicas.size()));
  b.setSize(v.size);
  EncodeChecksum(v.checksum, b.initChecksum());
  b.setDataType(EncodeEnum(v.data_type));
  b.setLeaseTtlMs(v.lease_ttl_ms);
}

ErrorCode Decode(wire::GetReplicaListResponse::Reader r, GetReplicaListResponse* out) {
  SM_DECODE_OR_RETURN(DecodeReplicas(r.getReplicas(), &out->replicas));
  out->size = r.getSize();
  SM_DECODE_OR_RETURN(DecodeChecksum(r.getChecksum(), &out->checksum));
  SM_DECODE_OR_RETURN(DecodeEnum(r.getDataType(), &out->data_type));
  out->lease_ttl_ms = r.getLeaseTtlMs();
  return ErrorCode::OK;
}

void Encode(const ObjectInfo& v, wire::ObjectInfo::Builder b) {
  b.setKey(AsText(v.key));
  b.setSize(v.size);
  EncodeChecksum(v.checksum, b.initChecksum());
  b.setDataType(EncodeEnum(v.data_type));
  Encode(v.writer, b.initWriter());
  b.setLeaseRemainingMs(v.lease_remaining_ms);
  b.setSoftPinRemainingMs(v.soft_pin_remaining_ms);
  b.setHardPin(v.hard_pin);
  b.setGroupId(AsText(v.group_id));
  EncodeReplicas(v.replicas, b.initReplicas(v.replicas.size()));
}

ErrorCode Decode(wire::ObjectInfo::Reader r, ObjectInfo* out) {
  // Keys are validated by their consumer; the traversal limit bounds them.
  out->key.assign(View(r.getKey()));
  out->size = r.getSize();
  SM_DECODE_OR_RETURN(DecodeChecksum(r.getChecksum(), &out->checksum));
  SM_DECODE_OR_RETURN(DecodeEnum(r.getDataType(), &out->data_type));
  out->writer = Decode(r.getWriter());
  out->lease_remaining_ms = r.getLeaseRemainingMs();
  out->soft_pin_remaining_ms = r.getSoftPinRemainingMs();
  out->hard_pin = r.getHardPin();
  SM_DECODE_OR_RETURN(CopyBlob(r.getGroupId(), kMaxBlobBytes, &out->group_id));
  return DecodeReplicas(r.getReplicas(), &out->replicas);
}

void Encode(const OffloadTask& v, wire::OffloadTask::Builder b) {
  b.setTenant(AsText(v.tenant));
  b.setKey(AsText(v.key));
  b.setSize(v.size);
  b.setBufferAddress(v.buffer_address);
}

ErrorCode Decode(wire::OffloadTask::Reader r, OffloadTask* out) {
  out->tenant.assign(View(r.getTenant()));
  out->key.assign(View(r.getKey()));
  out->size = r.getSize();
  out->buffer_address = r.getBufferAddress();
  return ErrorCode::OK;
}

void Encode(const StorageObjectMetadata& v, wire::StorageObjectMetadata::Builder b) {
  b.setBucketId(v.bucket_id);
  b.setOffset(v.offset);
  b.setKeySize(v.key_size);
  b.setDataSize(v.data_size);
  b.setTransportEndpoint(AsText(v.transport_endpoint));
}

ErrorCode Decode(wire::StorageObjectMetadata::Reader r, StorageObjectMetadata* out) {
  out->bucket_id = r.getBucketId();
  out->offset = r.getOffset();
  out->key_size = r.getKeySize();
  out->data_size = r.getDataSize();
  return CopyBlob(r.getTransportEndpoint(), kMaxBlobBytes, &out->transport_endpoint);
}

void Encode(const OffloadedObject& v, wire::OffloadedObject::Builder b) {
  b.setTenant(AsText(v.tenant));
  b.setKey(AsText(v.key));
  Encode(v.location, b.initLocation());
  EncodeChecksum(v.checksum, b.initChecksum());
}

ErrorCode Decode(wire::OffloadedObject::Reader r, OffloadedObject* out) {
  out->tenant.assign(View(r.getTenant()));
  out->key.assign(View(r.getKey()));
  SM_DECODE_OR_RETURN(DecodeChecksum(r.getChecksum(), &out->checksum));
  return Decode(r.getLocation(), &out->location);
}

void Encode(const PromoteRequest& v, wire::PromoteRequest::Builder b) {
  b.setTenant(AsText(v.tenant));
  b.setKey(AsText(v.key));
  b.setSize(v.size);
}

ErrorCode Decode(wire::PromoteRequest::Reader r, PromoteRequest* out) {
  out->tenant.assign(View(r.getTenant()));
  out->key.assign(View(r.getKey()));
  out->size = r.getSize();
  return ErrorCode::OK;
}

void Encode(const PromoteGrant& v, wire::PromoteGrant::Builder b) {
  b.setCode(CodeToWire(v.code));
  b.setBufferAddress(v.buffer_address);
}

ErrorCode Decode(wire::PromoteGrant::Reader r, PromoteGrant* out) {
  out->code = CodeFromWire(r.getCode());
  out->buffer_address = r.getBufferAddress();
  return ErrorCode::OK;
}

void Encode(const PromoteResult& v, wire::PromoteResult::Builder b) {
  b.setTenant(AsText(v.tenant));
  b.setKey(AsText(v.key));
  b.setCopied(v.copied);
}

ErrorCode Decode(wire::PromoteResult::Reader r, PromoteResult* out) {
  out->tenant.assign(View(r.getTenant()));
  out->key.assign(View(r.getKey()));
  out->copied = r.getCopied();
  return ErrorCode::OK;
}

void Encode(const OffloadFailure& v, wire::OffloadFailure::Builder b) {
  b.setTenant(AsText(v.tenant));
  b.setKey(AsText(v.key));
  b.setCode(CodeToWire(v.code));
}

ErrorCode Decode(wire::OffloadFailure::Reader r, OffloadFailure* out) {
  out->tenant.assign(View(r.getTenant()));
  out->key.assign(View(r.getKey()));
  out->code = CodeFromWire(r.getCode());
  return ErrorCode::OK;
}

// --- lists -------------------------------------------------------------------

void EncodeReplicas(const std::vector<ReplicaDescriptor>& items,
                    capnp::List<wire::ReplicaDescriptor>::Builder b) {
  for (size_t i = 0; i < items.size(); ++i) Encode(items[i], b[i]);
}

ErrorCode DecodeReplicas(capnp::List<wire::ReplicaDescriptor>::Reader r,
                         std::vector<ReplicaDescriptor>* out) {
  if (r.size() > kMaxReplicasPerObject) return kBad;
  out->clear();
  out->resize(r.size());
  for (unsigned i = 0; i < r.size(); ++i) SM_DECODE_OR_RETURN(Decode(r[i], &(*out)[i]));
  return ErrorCode::OK;
}

void EncodeTexts(const std::vector<std::string>& items, capnp::List<capnp::Text>::Builder b) {
  for (size_t i = 0; i < items.size(); ++i) b.set(i, AsText(items[i]));
}

ErrorCode DecodeTexts(capnp::List<capnp::Text>::Reader r, size_t max_items,
                      std::vector<std::string>* out) {
  if (r.size() > max_items) return kBad;
  out->resize(r.size());
  for (unsigned i = 0; i < r.size(); ++i) (*out)[i].assign(View(r[i]));
  return ErrorCode::OK;
}

#undef SM_DECODE_OR_RETURN

}  // namespace shelfmark::rpcconv
