#include "ssdstore/bucket_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

#include "common/object_key.h"

namespace shelfmark {
namespace {

constexpr std::string_view kMagic = "SMBKMETA";
// magic + version + count + bucket_id + bucket_size + batch_first + batch_count
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8 + 8 + 4;
constexpr size_t kChecksumSize = 8;
// tenant_size + 1 byte + key_size + 1 byte + offset + data_size + checksum
constexpr size_t kMinEntrySize = 4 + 1 + 4 + 1 + 8 + 8 + 8;

template <typename T>
void Put(std::string* out, T v) {
  char buf[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(buf, sizeof(T));
}

void PutBytes(std::string* out, std::string_view s) {
  Put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Bounds-checked little-endian reader over the record body.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    T r = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      r |= static_cast<T>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    *v = r;
    return true;
  }
  bool GetBytes(size_t max, std::string* s) {
    uint32_t n = 0;
    if (!Get(&n) || n == 0 || n > max || in_.size() - pos_ < n) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

bool EntryFits(const BucketMetaEntry& e, uint64_t bucket_size) {
  const uint64_t key_size = e.key.size();
  return e.offset >= key_size && e.offset <= bucket_size &&
         e.data_size <= bucket_size - e.offset;
}

ErrorCode DecodeEntries(Reader* r, uint32_t count, BucketMeta* meta) {
  // Every entry needs kMinEntrySize bytes: no allocation beyond the input.
  if (count > r->remaining() / kMinEntrySize) return ErrorCode::DATA_CORRUPTED;
  meta->entries.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    BucketMetaEntry e;
    if (!r->GetBytes(kMaxTenantLength, &e.tenant) || !r->GetBytes(kMaxKeyLength, &e.key) ||
        !r->Get(&e.offset) || !r->Get(&e.data_size) || !r->Get(&e.checksum) ||
        !EntryFits(e, meta->bucket_size)) {
      return ErrorCode::DATA_CORRUPTED;
    }
    meta->entries.push_back(std::move(e));
  }
  return r->remaining() == 0 ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
}

}  // namespace

std::string EncodeBucketMeta(const BucketMeta& meta) {
  std::string out;
  size_t size = kHeaderSize + kChecksumSize;
  for (const auto& e : meta.entries) size += kMinEntrySize - 2 + e.tenant.size() + e.key.size();
  out.reserve(size);
  out.append(kMagic);
  Put<uint32_t>(&out, kBucketMetaVersion);
  Put<uint32_t>(&out, static_cast<uint32_t>(meta.entries.size()));
  Put<uint64_t>(&out, meta.bucket_id);
  Put<uint64_t>(&out, meta.bucket_size);
  Put<uint64_t>(&out, meta.batch_first_id);
  Put<uint32_t>(&out, meta.batch_count);
  for (const auto& e : meta.entries) {
    PutBytes(&out, e.tenant);
    PutBytes(&out, e.key);
    Put<uint64_t>(&out, e.offset);
    Put<uint64_t>(&out, e.data_size);
    Put<uint64_t>(&out, e.checksum);
  }
  Put<uint64_t>(&out, XXH3_64bits(out.data(), out.size()));
  return out;
}

Result<BucketMeta> DecodeBucketMeta(std::string_view bytes) {
  if (bytes.size() < kHeaderSize + kChecksumSize || bytes.substr(0, kMagic.size()) != kMagic) {
    return ErrorCode::DATA_CORRUPTED;
  }
  const std::string_view body = bytes.substr(0, bytes.size() - kChecksumSize);
  uint64_t stored = 0;
  Reader(bytes.substr(body.size())).Get(&stored);
  if (stored != XXH3_64bits(body.data(), body.size())) return ErrorCode::DATA_CORRUPTED;

  Reader r(body.substr(kMagic.size()));
  uint32_t version = 0;
  uint32_t count = 0;
  BucketMeta meta;
  r.Get(&version);
  if (version != kBucketMetaVersion) return ErrorCode::VERSION_MISMATCH;
  r.Get(&count);
  r.Get(&meta.bucket_id);
  r.Get(&meta.bucket_size);
  r.Get(&meta.batch_first_id);
  r.Get(&meta.batch_count);
  if (meta.batch_count == 0 || meta.bucket_id < meta.batch_first_id ||
      meta.bucket_id - meta.batch_first_id >= meta.batch_count) {
    return ErrorCode::DATA_CORRUPTED;
  }
  ErrorCode ec = DecodeEntries(&r, count, &meta);
  if (ec != ErrorCode::OK) return ec;
  return meta;
}

uint32_t BucketMetaVersion(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 4 || bytes.substr(0, kMagic.size()) != kMagic) return 0;
  uint32_t version = 0;
  Reader(bytes.substr(kMagic.size())).Get(&version);
  return version;
}

}  // namespace shelfmark
