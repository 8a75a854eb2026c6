// Conversions between the Cap'n Proto wire structs of schemas/master.capnp
// and the Directory's value types (common/types.h). The one place that
// knows the mapping; used by the RPC server and MasterClient alike.
//
// Encoders (Encode*) never fail: they fill a builder from a value.
// Decoders (Decode*) read untrusted input: they return OK, or INVALID_PARAMS
// for a value that does not map onto the types (enum or union discriminant
// out of range, a list or a blob longer than its limit below) and leave *out
// partly filled. Reading a malformed message may additionally throw a
// kj::Exception from the capnp accessors (out-of-bounds pointer, traversal
// limit, ...): callers decode inside GuardedDecode() (or their own catch).
//
// Thread safety: stateless; all functions may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <capnp/blob.h>
#include <capnp/list.h>
#include <kj/exception.h>

#include "common/error_code.h"
#include "common/uuid.h"
#include "common/types.h"
#include "schemas/master.capnp.h"

namespace shelfmark::rpcconv {

// Limits applied while decoding (the Directory validates keys and tenants).
inline constexpr size_t kMaxBlobBytes = 4096;           // name, endpoint, protocol, rkey, group id
inline constexpr size_t kMaxReplicasPerObject = 1024;   // replica lists
inline constexpr size_t kMaxPreferredSegments = 1024;   // PutConfig.preferredSegments
inline constexpr uint64_t kMaxListKeysLimit = 1u << 20; // ListKeys limit cap (server side)
// Receive limits for both ends of the connection: batches of max_batch
// (65536) keys of up to 4 KiB fit comfortably.
inline constexpr uint64_t kTraversalLimitWords = 64ull * 1024 * 1024;
inline constexpr int kNestingLimit = 64;

inline std::string_view View(capnp::Text::Reader text) {
  return std::string_view(text.begin(), text.size());
}
inline std::string_view View(capnp::Data::Reader data) {
  return std::string_view(reinterpret_cast<const char*>(data.begin()), data.size());
}
inline capnp::Data::Reader AsData(std::string_view bytes) {
  return capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(bytes.data()), bytes.size());
}
// Copies `src` into a text field initialized with src.size() bytes, e.g.
// CopyText(req.initKey(key.size()), key). (A capnp::Text::Reader must not be
// built from a string_view: it requires NUL termination.)
inline void CopyText(capnp::Text::Builder dst, std::string_view src) {
  if (!src.empty()) std::memcpy(dst.begin(), src.data(), src.size());
}
// A Text::Reader over a std::string (NUL-terminated by the standard).
inline capnp::Text::Reader AsText(const std::string& s) {
  return capnp::Text::Reader(s.c_str(), s.size());
}

inline int32_t CodeToWire(ErrorCode code) { return static_cast<int32_t>(code); }
// Unknown values map to INTERNAL_ERROR (ErrorCodeFromInt).
inline ErrorCode CodeFromWire(int32_t code) { return ErrorCodeFromInt(code); }

// Runs `fn` (returning ErrorCode); a kj::Exception (malformed message) or
// std::exception thrown while decoding becomes INVALID_PARAMS.
template <typename Fn>
ErrorCode GuardedDecode(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const kj::Exception&) {
    return ErrorCode::INVALID_PARAMS;
  } catch (const std::exception&) {
    return ErrorCode::INVALID_PARAMS;
  }
}

// --- enums -------------------------------------------------------------------
wire::ReplicaStatus EncodeEnum(ReplicaStatus v);
wire::ReplicaType EncodeEnum(ReplicaType v);
wire::DataType EncodeEnum(DataType v);
wire::ClientStatus EncodeEnum(ClientStatus v);
ErrorCode DecodeEnum(wire::ReplicaStatus v, ReplicaStatus* out);
ErrorCode DecodeEnum(wire::ReplicaType v, ReplicaType* out);
ErrorCode DecodeEnum(wire::DataType v, DataType* out);
ErrorCode DecodeEnum(wire::ClientStatus v, ClientStatus* out);

// --- structs -----------------------------------------------------------------
void Encode(const UUID& v, wire::Uuid::Builder b);
UUID Decode(wire::Uuid::Reader r);

void Encode(const Segment& v, wire::Segment::Builder b);
ErrorCode Decode(wire::Segment::Reader r, Segment* out);

void Encode(const MemoryDescriptor& v, wire::MemoryDescriptor::Builder b);
ErrorCode Decode(wire::MemoryDescriptor::Reader r, MemoryDescriptor* out);

void Encode(const DiskDescriptor& v, wire::DiskDescriptor::Builder b);
ErrorCode Decode(wire::DiskDescriptor::Reader r, DiskDescriptor* out);

void Encode(const ReplicaDescriptor& v, wire::ReplicaDescriptor::Builder b);
ErrorCode Decode(wire::ReplicaDescriptor::Reader r, ReplicaDescriptor* out);

void Encode(const PutConfig& v, wire::PutConfig::Builder b);
ErrorCode Decode(wire::PutConfig::Reader r, PutConfig* out);

void Encode(const GetReplicaListResponse& v, wire::GetReplicaListResponse::Builder b);
ErrorCode Decode(wire::GetReplicaListResponse::Reader r, GetReplicaListResponse* out);

void Encode(const ObjectInfo& v, wire::ObjectInfo::Builder b);
ErrorCode Decode(wire::ObjectInfo::Reader r, ObjectInfo* out);

void Encode(const OffloadTask& v, wire::OffloadTask::Builder b);
ErrorCode Decode(wire::OffloadTask::Reader r, OffloadTask* out);

void Encode(const StorageObjectMetadata& v, wire::StorageObjectMetadata::Builder b);
ErrorCode Decode(wire::StorageObjectMetadata::Reader r, StorageObjectMetadata* out);

void Encode(const OffloadedObject& v, wire::OffloadedObject::Builder b);
ErrorCode Decode(wire::OffloadedObject::Reader r, OffloadedObject* out);

void Encode(const PromoteRequest& v, wire::PromoteRequest::Builder b);
ErrorCode Decode(wire::PromoteRequest::Reader r, PromoteRequest* out);

void Encode(const PromoteGrant& v, wire::PromoteGrant::Builder b);
ErrorCode Decode(wire::PromoteGrant::Reader r, PromoteGrant* out);

void Encode(const PromoteResult& v, wire::PromoteResult::Builder b);
ErrorCode Decode(wire::PromoteResult::Reader r, PromoteResult* out);
void Encode(const OffloadFailure& v, wire::OffloadFailure::Builder b);
ErrorCode Decode(wire::OffloadFailure::Reader r, OffloadFailure* out);

// --- lists -------------------------------------------------------------------
// Fills an already-initialized list builder (init it with items.size()).
void EncodeReplicas(const std::vector<ReplicaDescriptor>& items,
                    capnp::List<wire::ReplicaDescriptor>::Builder b);
ErrorCode DecodeReplicas(capnp::List<wire::ReplicaDescriptor>::Reader r,
                         std::vector<ReplicaDescriptor>* out);

void EncodeTexts(const std::vector<std::string>& items, capnp::List<capnp::Text>::Builder b);
// INVALID_PARAMS for more than `max_items` entries. Reuses out's capacity
// (and its strings' capacity), so a thread-local scratch vector avoids
// allocations on the hot path.
ErrorCode DecodeTexts(capnp::List<capnp::Text>::Reader r, size_t max_items,
                      std::vector<std::string>* out);

// Decodes every struct of a list with Decode(r[i], &out[i]); INVALID_PARAMS
// for more than `max_items` entries or an entry that does not decode.
template <typename ListReader, typename T>
ErrorCode DecodeList(ListReader r, size_t max_items, std::vector<T>* out) {
  if (r.size() > max_items) return ErrorCode::INVALID_PARAMS;
  out->clear();
  out->resize(r.size());
  for (unsigned i = 0; i < r.size(); ++i) {
    if (ErrorCode rc = Decode(r[i], &(*out)[i]); rc != ErrorCode::OK) return rc;
  }
  return ErrorCode::OK;
}

// Encodes `items` into an already-initialized list builder of items.size().
template <typename ListBuilder, typename T>
void EncodeList(const std::vector<T>& items, ListBuilder b) {
  for (size_t i = 0; i < items.size(); ++i) Encode(items[i], b[i]);
}

}  // namespace shelfmark::rpcconv
