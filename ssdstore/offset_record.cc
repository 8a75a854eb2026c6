#include "ssdstore/offset_record.h"

#include <array>
#include <bit>
#include <cstring>

#include "common/object_key.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace shelfmark {
namespace {

static_assert(std::endian::native == std::endian::little,
              "record encoding assumes a little-endian host");

constexpr uint32_t kPoly = 0x82F63B78;  // Castagnoli, reflected

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

// Works on the raw (pre-inverted) register.
uint32_t PortableRaw(const uint8_t* p, size_t len, uint32_t c) {
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= c;
    c = kTables[7][w & 0xFF] ^ kTables[6][(w >> 8) & 0xFF] ^ kTables[5][(w >> 16) & 0xFF] ^
        kTables[4][(w >> 24) & 0xFF] ^ kTables[3][(w >> 32) & 0xFF] ^ kTables[2][(w >> 40) & 0xFF] ^
        kTables[1][(w >> 48) & 0xFF] ^ kTables[0][w >> 56];
    p += 8;
    len -= 8;
  }
  while (len-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Sse42Raw(const uint8_t* p, size_t len, uint32_t c) {
  uint64_t c64 = c;
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    len -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (len-- > 0) c = _mm_crc32_u8(c, *p++);
  return c;
}

bool HaveSse42() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif

void PutU32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Header bytes [0, 32): everything the CRC covers before tenant/key/value.
void EncodeHeaderFields(const RecordHeader& h, char* out) {
  PutU32(out + 0, kRecordMagic);
  PutU32(out + 4, h.flags);
  PutU32(out + 8, h.tenant_len);
  PutU32(out + 12, h.key_len);
  PutU64(out + 16, h.value_len);
  PutU64(out + 24, h.seq);
}

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t len, uint32_t crc) {
  return ~PortableRaw(static_cast<const uint8_t*>(data), len, ~crc);
}

uint32_t Crc32c(const void* data, size_t len, uint32_t crc) {
#if defined(__x86_64__)
  if (HaveSse42()) return ~Sse42Raw(static_cast<const uint8_t*>(data), len, ~crc);
#endif
  return Crc32cPortable(data, len, crc);
}

uint64_t RecordValueOffset(size_t tenant_len, size_t key_len) {
  const uint64_t prefix = kRecordHeaderSize + tenant_len + key_len;
  return (prefix + kRecordAlignment - 1) / kRecordAlignment * kRecordAlignment;
}

uint64_t RecordTotalSize(size_t tenant_len, size_t key_len, uint64_t value_len) {
  return RecordValueOffset(tenant_len, key_len) + value_len;
}

uint32_t RecordCrc(const RecordHeader& header, std::string_view tenant, std::string_view key,
                   std::string_view value) {
  char fields[32];
  EncodeHeaderFields(header, fields);
  uint32_t crc = Crc32c(fields, sizeof(fields));
  crc = Crc32c(tenant, crc);
  crc = Crc32c(key, crc);
  return Crc32c(value, crc);
}

std::string EncodeRecordPrefix(std::string_view tenant, std::string_view key,
                               std::string_view value, uint64_t seq) {
  RecordHeader h;
  h.tenant_len = static_cast<uint32_t>(tenant.size());
  h.key_len = static_cast<uint32_t>(key.size());
  h.value_len = value.size();
  h.seq = seq;
  std::string out(RecordValueOffset(tenant.size(), key.size()), '\0');
  EncodeHeaderFields(h, out.data());
  PutU32(out.data() + 32, RecordCrc(h, tenant, key, value));
  std::memcpy(out.data() + kRecordHeaderSize, tenant.data(), tenant.size());
  std::memcpy(out.data() + kRecordHeaderSize + tenant.size(), key.data(), key.size());
  return out;
}

Result<RecordHeader> DecodeRecordHeader(std::string_view bytes) {
  if (bytes.size() < kRecordHeaderSize) return ErrorCode::DATA_CORRUPTED;
  const char* p = bytes.data();
  if (GetU32(p) != kRecordMagic || GetU32(p + 36) != 0) return ErrorCode::DATA_CORRUPTED;
  RecordHeader h;
  h.flags = GetU32(p + 4);
  h.tenant_len = GetU32(p + 8);
  h.key_len = GetU32(p + 12);
  h.value_len = GetU64(p + 16);
  h.seq = GetU64(p + 24);
  h.crc = GetU32(p + 32);
  if (h.flags != 0 || h.tenant_len == 0 || h.tenant_len > kMaxTenantLength || h.key_len == 0 ||
      h.key_len > kMaxKeyLength || h.value_len > (uint64_t{1} << 62)) {
    return ErrorCode::DATA_CORRUPTED;
  }
  return h;
}

ErrorCode VerifyRecord(std::string_view prefix, std::string_view value, std::string_view tenant,
                       std::string_view key, uint64_t seq) {
  Result<RecordHeader> h = DecodeRecordHeader(prefix);
  if (!h.ok()) return h.error();
  if (h->tenant_len != tenant.size() || h->key_len != key.size() || h->value_len != value.size() ||
      h->seq != seq || prefix.size() < kRecordHeaderSize + tenant.size() + key.size()) {
    return ErrorCode::DATA_CORRUPTED;
  }
  if (prefix.substr(kRecordHeaderSize, tenant.size()) != tenant ||
      prefix.substr(kRecordHeaderSize + tenant.size(), key.size()) != key) {
    return ErrorCode::DATA_CORRUPTED;
  }
  return RecordCrc(*h, tenant, key, value) == h->crc ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
}

}  // namespace shelfmark
