#include "ssdstore/offset_checkpoint.h"

#include <fcntl.h>

#include <cstring>

#include "ssdstore/offset_record.h"

namespace shelfmark {
namespace {

constexpr std::string_view kMagic = "SMKVMETA";
// Smallest encodings, to bound counts by the bytes left before allocating.
constexpr uint64_t kMinEntryBytes = 4 + 4 + 8 * 4;
constexpr uint64_t kMinTombstoneBytes = 4 + 4;
constexpr uint64_t kExtentBytes = 16;

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }
void PutStrings(std::string* out, const std::string& tenant, const std::string& key) {
  PutU32(out, static_cast<uint32_t>(tenant.size()));
  PutU32(out, static_cast<uint32_t>(key.size()));
  out->append(tenant);
  out->append(key);
}

// Bounds-checked cursor; every getter returns false once data runs out.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  bool U32(uint32_t* v) { return Raw(v, 4); }
  bool U64(uint64_t* v) { return Raw(v, 8); }
  bool Bytes(uint64_t n, std::string* out) {
    if (n > rest_.size()) return false;
    out->assign(rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  bool Strings(std::string* tenant, std::string* key) {
    uint32_t tl = 0, kl = 0;
    return U32(&tl) && U32(&kl) && Bytes(tl, tenant) && Bytes(kl, key);
  }
  // A count of items of at least `min_bytes` each that can fit in what is left.
  bool Count(uint64_t min_bytes, uint64_t* n) { return U64(n) && *n <= rest_.size() / min_bytes; }
  size_t left() const { return rest_.size(); }

 private:
  bool Raw(void* v, size_t n) {
    if (rest_.size() < n) return false;
    std::memcpy(v, rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  std::string_view rest_;
};

bool DecodeBody(Reader* r, Checkpoint* c) {
  uint64_t n = 0;
  if (!r->U64(&c->data_file_size) || !r->U64(&c->alignment) || !r->U64(&c->next_seq)) return false;
  if (!r->Count(kExtentBytes, &n)) return false;
  c->free_extents.resize(n);
  for (auto& [off, size] : c->free_extents) {
    if (!r->U64(&off) || !r->U64(&size)) return false;
  }
  if (!r->Count(kMinEntryBytes, &n)) return false;
  c->entries.resize(n);
  for (CheckpointEntry& e : c->entries) {
    if (!r->Strings(&e.tenant, &e.key) || !r->U64(&e.offset) || !r->U64(&e.total_size) ||
        !r->U64(&e.value_size) || !r->U64(&e.seq)) {
      return false;
    }
  }
  if (!r->Count(kMinTombstoneBytes, &n)) return false;
  c->tombstones.resize(n);
  for (auto& [tenant, key] : c->tombstones) {
    if (!r->Strings(&tenant, &key)) return false;
  }
  return r->left() == 0;
}

std::string Join(const std::string& dir, std::string_view name) {
  std::string path = dir;
  if (path.empty() || path.back() != '/') path += '/';
  path.append(name);
  return path;
}

ErrorCode WriteWhole(FileIo* io, const std::string& path, const std::string& bytes) {
  Result<int> fd = io->Open(path, O_CREAT | O_RDWR | O_TRUNC);
  if (!fd.ok()) return fd.error();
  ErrorCode rc = io->PWrite(*fd, bytes.data(), bytes.size(), 0);
  if (rc == ErrorCode::OK) rc = io->FSync(*fd);
  ErrorCode close_rc = io->Close(*fd);
  return rc != ErrorCode::OK ? rc : close_rc;
}

}  // namespace

std::string EncodeCheckpoint(const Checkpoint& c) {
  std::string out(kMagic);
  PutU32(&out, kCheckpointVersion);
  PutU64(&out, c.data_file_size);
  PutU64(&out, c.alignment);
  PutU64(&out, c.next_seq);
  PutU64(&out, c.free_extents.size());
  for (const auto& [off, size] : c.free_extents) {
    PutU64(&out, off);
    PutU64(&out, size);
  }
  PutU64(&out, c.entries.size());
  for (const CheckpointEntry& e : c.entries) {
    PutStrings(&out, e.tenant, e.key);
    PutU64(&out, e.offset);
    PutU64(&out, e.total_size);
    PutU64(&out, e.value_size);
    PutU64(&out, e.seq);
  }
  PutU64(&out, c.tombstones.size());
  for (const auto& [tenant, key] : c.tombstones) PutStrings(&out, tenant, key);
  PutU32(&out, Crc32c(out));
  return out;
}

Result<Checkpoint> DecodeCheckpoint(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 4 + 4 || bytes.substr(0, kMagic.size()) != kMagic) {
    return ErrorCode::DATA_CORRUPTED;
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  std::string_view covered = bytes.substr(0, bytes.size() - 4);
  if (Crc32c(covered) != stored_crc) return ErrorCode::DATA_CORRUPTED;
  Reader r(covered.substr(kMagic.size()));
  uint32_t version = 0;
  if (!r.U32(&version)) return ErrorCode::DATA_CORRUPTED;
  if (version != kCheckpointVersion) return ErrorCode::VERSION_MISMATCH;
  Checkpoint c;
  if (!DecodeBody(&r, &c)) return ErrorCode::DATA_CORRUPTED;
  return c;
}

ErrorCode WriteCheckpointFile(FileIo* io, const std::string& dir, const Checkpoint& checkpoint) {
  const std::string tmp = Join(dir, kCheckpointTempFileName);
  ErrorCode rc = WriteWhole(io, tmp, EncodeCheckpoint(checkpoint));
  if (rc == ErrorCode::OK) rc = io->Rename(tmp, Join(dir, kCheckpointFileName));
  if (rc == ErrorCode::OK) rc = io->SyncDir(dir);
  return rc;
}

Result<Checkpoint> ReadCheckpointFile(FileIo* io, const std::string& dir) {
  Result<int> fd = io->Open(Join(dir, kCheckpointFileName), O_RDONLY);
  if (!fd.ok()) return fd.error();
  Result<uint64_t> size = io->FileSize(*fd);
  std::string bytes;
  ErrorCode rc = size.ok() ? ErrorCode::OK : size.error();
  if (rc == ErrorCode::OK) {
    bytes.resize(*size);
    rc = io->PRead(*fd, bytes.data(), bytes.size(), 0);
  }
  io->Close(*fd);
  if (rc != ErrorCode::OK) return rc;
  return DecodeCheckpoint(bytes);
}

}  // namespace shelfmark
