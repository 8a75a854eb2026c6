#include "transport/ucx_memory_access.h"

#include <cstring>

#include "auth/proof.h"
#include "common/wire_bytes.h"
#include "transport/ucx_wire.h"

namespace shelfmark {
namespace {

constexpr uint32_t kMagicRkey = 0x4b524d53;  // "SMRK"

}  // namespace

std::string EncodeUcxRkey(uint64_t key) {
  return ucx_wire::Writer().Put(kMagicRkey).Put(key).Take();
}

std::optional<uint64_t> DecodeUcxRkey(std::string_view rkey) {
  ucx_wire::Reader in(rkey.data(), rkey.size());
  const auto magic = in.Get<uint32_t>();
  const auto key = in.Get<uint64_t>();
  if (!in.done() || magic != kMagicRkey || key == 0) return std::nullopt;
  return key;
}

std::string EncodeUcxMemoryAccess(const UcxMemoryAccess& access) {
  return ucx_wire::Writer().Put(access.key).Put(access.address).Put(access.length).Take();
}

std::optional<UcxMemoryAccess> DecodeUcxMemoryAccess(std::string_view header) {
  ucx_wire::Reader in(header.data(), header.size());
  UcxMemoryAccess access;
  access.key = in.Get<uint64_t>();
  access.address = in.Get<uint64_t>();
  access.length = in.Get<uint64_t>();
  if (!in.done()) return std::nullopt;
  return access;
}

uint64_t UcxSegments::Add(uintptr_t addr, uint64_t size) {
  WriterLock lock(&mu_);
  uint64_t key = 0;
  while (key == 0 || regions_.contains(key)) auth::RandomBytes(&key, sizeof(key));
  regions_[key] = {addr, size};
  return key;
}

void UcxSegments::Remove(uint64_t key) {
  WriterLock lock(&mu_);
  regions_.erase(key);
}

UcxSegments::Refused UcxSegments::refused() const {
  return {stale_.load(std::memory_order_relaxed), out_of_range_.load(std::memory_order_relaxed),
          malformed_.load(std::memory_order_relaxed)};
}

ErrorCode UcxSegments::Check(const std::optional<UcxMemoryAccess>& access, uint64_t payload_size,
                             bool write, char** at) {
  if (!access || access->length == 0) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return ErrorCode::INVALID_PARAMS;
  }
  auto it = regions_.find(access->key);
  if (it == regions_.end()) {
    stale_.fetch_add(1, std::memory_order_relaxed);
    return ErrorCode::SEGMENT_NOT_FOUND;
  }
  const auto [base, size] = it->second;
  const bool inside = access->address >= base && access->length <= size &&
                      access->address - base <= size - access->length;
  if (!inside || (write && payload_size != access->length)) {
    out_of_range_.fetch_add(1, std::memory_order_relaxed);
    return ErrorCode::INVALID_PARAMS;
  }
  *at = reinterpret_cast<char*>(access->address);
  return ErrorCode::OK;
}

void UcxSegments::Serve(bool write, const AmRequest& request, AmResponder responder) {
  char* at = nullptr;
  const std::optional<UcxMemoryAccess> access = DecodeUcxMemoryAccess(request.header);
  std::string data;
  ErrorCode checked = ErrorCode::OK;
  {
    // Held through the copy: Remove() waits for it, so once a region is
    // removed (before its memory is unmapped) nothing touches it.
    ReaderLock lock(&mu_);
    checked = Check(access, request.payload.size(), write, &at);
    if (checked == ErrorCode::OK && write) {
      std::memcpy(at, request.payload.data(), access->length);
    } else if (checked == ErrorCode::OK) {
      data.assign(at, access->length);
    }
  }
  if (checked != ErrorCode::OK) {
    responder.Fail(checked);
    return;
  }
  responder.Reply("", std::move(data));
}

}  // namespace shelfmark
