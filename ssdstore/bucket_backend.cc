#include "ssdstore/bucket_backend.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <set>
#include <utility>

#include "common/object_key.h"

namespace shelfmark {
namespace {

constexpr std::string_view kBucketSuffix = ".bucket";
constexpr std::string_view kMetaSuffix = ".meta";
constexpr std::string_view kTempSuffix = ".meta.tmp";
constexpr uint64_t kMaxMetaBytes = 1ull << 30;  // larger: treated as corrupt
constexpr size_t kMaxIov = 512;                  // below IOV_MAX (1024)

enum class FileKind { kOther, kBucket, kMeta, kTemp };

// "<decimal id><suffix>" -> kind and id; kOther for every other name.
FileKind ParseName(std::string_view name, uint64_t* id) {
  size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return FileKind::kOther;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + digits, *id);
  if (ec != std::errc() || ptr != name.data() + digits) return FileKind::kOther;
  const std::string_view rest = name.substr(digits);
  if (rest == kBucketSuffix) return FileKind::kBucket;
  if (rest == kMetaSuffix) return FileKind::kMeta;
  if (rest == kTempSuffix) return FileKind::kTemp;
  return FileKind::kOther;
}

// Reads a whole (small) file; DATA_CORRUPTED when it is implausibly large.
Result<std::string> ReadWholeFile(FileIo* io, const std::string& path) {
  Result<int> fd = io->Open(path, O_RDONLY);
  if (!fd.ok()) return fd.error();
  Result<uint64_t> size = io->FileSize(*fd);
  ErrorCode ec = size.ok() ? ErrorCode::OK : size.error();
  std::string bytes;
  if (ec == ErrorCode::OK && *size > kMaxMetaBytes) ec = ErrorCode::DATA_CORRUPTED;
  if (ec == ErrorCode::OK && *size > 0) {
    bytes.resize(*size);
    ec = io->PRead(*fd, bytes.data(), bytes.size(), 0);
  }
  io->Close(*fd);
  if (ec != ErrorCode::OK) return ec;
  return bytes;
}

}  // namespace

// A read fd shared by the fd cache and in-flight reads; closed with the last.
struct OpenFd {
  OpenFd(std::shared_ptr<FileIo> io, int fd) : io(std::move(io)), fd(fd) {}
  ~OpenFd() { io->Close(fd); }
  OpenFd(const OpenFd&) = delete;
  OpenFd& operator=(const OpenFd&) = delete;
  std::shared_ptr<FileIo> io;
  int fd;
};

// One live bucket. Fields other than the constants are guarded by the
// backend's mu_. A doomed bucket removes its .bucket file when the last
// reference (table, in-flight reads, eviction) drops.
struct BucketBackend::Bucket {
  ~Bucket() {
    fd.reset();
    if (doomed) io->Remove(path);
  }
  std::shared_ptr<FileIo> io;
  std::string path;
  uint64_t id = 0;
  uint64_t size = 0;
  uint64_t batch_first = 0;
  uint32_t batch_count = 1;
  std::vector<IndexKey> keys;  // every entry of the .meta, in order
  std::vector<Location> locs;  // parallel to keys
  uint64_t live_keys = 0;      // entries the index still points at
  uint64_t last_used = 0;
  std::shared_ptr<OpenFd> fd;
  bool doomed = false;
};

struct BucketBackend::Victim {
  std::shared_ptr<Bucket> bucket;
  std::vector<IndexKey> evicted;  // keys to report via the callback
};

size_t BucketBackend::IndexKeyHash::operator()(const IndexKey& k) const {
  const size_t h = std::hash<std::string_view>()(k.tenant);
  return h ^ (std::hash<std::string_view>()(k.key) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

BucketBackend::BucketBackend(BucketBackendOptions options, std::shared_ptr<FileIo> io)
    : options_(std::move(options)), io_(std::move(io)) {}

BucketBackend::~BucketBackend() = default;

Result<std::unique_ptr<BucketBackend>> BucketBackend::Open(BucketBackendOptions options,
                                                           std::shared_ptr<FileIo> io) {
  if (options.root.empty() || options.bucket_bytes == 0 || options.bucket_keys == 0 ||
      options.max_open_fds == 0 || io == nullptr) {
    return ErrorCode::INVALID_PARAMS;
  }
  std::unique_ptr<BucketBackend> backend(new BucketBackend(std::move(options), std::move(io)));
  ErrorCode ec = backend->Recover();
  if (ec != ErrorCode::OK) return ec;
  return backend;
}

std::string BucketFileName(uint64_t id) {
  return std::to_string(id) + std::string(kBucketSuffix);
}

std::string BucketBackend::PathOf(uint64_t id, std::string_view suffix) const {
  std::string path = options_.root;
  if (path.back() != '/') path += '/';
  path += std::to_string(id);
  path += suffix;
  return path;
}

ErrorCode BucketBackend::Recover() {
  std::error_code fs_ec;
  std::filesystem::create_directories(options_.root, fs_ec);
  if (fs_ec) return ErrorCode::FILE_OPEN_FAIL;
  Result<std::vector<std::string>> names = io_->List(options_.root);
  if (!names.ok()) return names.error();

  std::set<uint64_t> metas, bucket_files;
  std::vector<std::string> doomed_paths;  // removed only once the scan succeeded
  uint64_t max_id = 0;
  for (const std::string& name : *names) {
    uint64_t id = 0;
    const FileKind kind = ParseName(name, &id);
    if (kind == FileKind::kOther) continue;
    max_id = std::max(max_id, id);
    if (kind == FileKind::kMeta) metas.insert(id);
    if (kind == FileKind::kBucket) bucket_files.insert(id);
    if (kind == FileKind::kTemp) {
      doomed_paths.push_back(PathOf(id, kTempSuffix));
      recovery_.Note(name + ": an unfinished write");
    }
  }
  std::map<uint64_t, std::string> why_not;  // ids whose .meta was not kept, and why

  std::map<uint64_t, BucketMeta> valid;
  for (uint64_t id : metas) {
    Result<std::string> bytes = ReadWholeFile(io_.get(), PathOf(id, kMetaSuffix));
    if (!bytes.ok() && bytes.error() != ErrorCode::DATA_CORRUPTED) return bytes.error();
    Result<BucketMeta> meta =
        bytes.ok() ? DecodeBucketMeta(*bytes) : Result<BucketMeta>(ErrorCode::DATA_CORRUPTED);
    bool keep = meta.ok() && meta->bucket_id == id && bucket_files.count(id) != 0;
    if (!meta.ok() && meta.error() == ErrorCode::VERSION_MISMATCH) {
      // A newer format is not ours to delete; an older one lacks the
      // per-object checksums every read verifies, so its objects go.
      const uint32_t version = BucketMetaVersion(*bytes);
      if (version > kBucketMetaVersion) return meta.error();
      why_not[id] = "format version " + std::to_string(version) + " has no per-object checksums";
    } else if (!meta.ok() || meta->bucket_id != id) {
      why_not[id] = "the .meta does not decode as this bucket's";
    } else if (!keep) {
      why_not[id] = "no .bucket file";
    }
    if (keep) {
      Result<int> fd = io_->Open(PathOf(id, kBucketSuffix), O_RDONLY);
      if (!fd.ok()) return fd.error();
      Result<uint64_t> size = io_->FileSize(*fd);
      io_->Close(*fd);
      if (!size.ok()) return size.error();
      keep = *size >= meta->bucket_size;
      if (!keep) why_not[id] = "the .bucket is shorter than its .meta records";
    }
    if (keep) valid.emplace(id, std::move(*meta));
  }
  // A batch survives only with every one of its buckets intact.
  std::vector<uint64_t> whole_ids;
  for (const auto& [id, meta] : valid) {
    bool whole = true;
    for (uint64_t m = meta.batch_first_id; whole && m - meta.batch_first_id < meta.batch_count;
         ++m) {
      auto it = valid.find(m);
      whole = it != valid.end() && it->second.batch_first_id == meta.batch_first_id &&
              it->second.batch_count == meta.batch_count;
    }
    if (whole) whole_ids.push_back(id);
  }
  std::map<uint64_t, BucketMeta> complete;
  for (uint64_t id : whole_ids) complete.emplace(id, std::move(valid.at(id)));
  auto reason = [&](uint64_t id) -> std::string {
    auto it = why_not.find(id);
    if (it != why_not.end()) return it->second;
    return metas.count(id) != 0 ? "another bucket of its batch is missing or damaged"
                                : "no .meta file";
  };
  for (uint64_t id : metas) {
    if (complete.count(id) != 0) continue;
    doomed_paths.push_back(PathOf(id, kMetaSuffix));
    recovery_.Note(std::to_string(id) + std::string(kMetaSuffix) + ": " + reason(id));
  }
  for (uint64_t id : bucket_files) {
    if (complete.count(id) != 0) continue;
    doomed_paths.push_back(PathOf(id, kBucketSuffix));
    if (metas.count(id) == 0) {
      recovery_.Note(std::to_string(id) + std::string(kBucketSuffix) + ": " + reason(id));
    }
  }
  recovery_.files_discarded = doomed_paths.size();
  for (const std::string& path : doomed_paths) io_->Remove(path);
  if (!doomed_paths.empty()) io_->SyncDir(options_.root);

  std::vector<Victim> empty;
  {
    MutexLock lock(&mu_);
    next_id_ = max_id + 1;
    for (auto& [id, meta] : complete) {
      auto bucket = std::make_shared<Bucket>();
      bucket->io = io_;
      bucket->path = PathOf(id, kBucketSuffix);
      bucket->id = id;
      bucket->size = meta.bucket_size;
      bucket->batch_first = meta.batch_first_id;
      bucket->batch_count = meta.batch_count;
      for (BucketMetaEntry& e : meta.entries) {
        const uint64_t key_size = e.key.size();
        bucket->keys.push_back({std::move(e.tenant), std::move(e.key)});
        bucket->locs.push_back({id, e.offset, key_size, e.data_size, e.checksum});
      }
      InstallLocked(std::move(bucket), &empty);
    }
  }
  FinishVictims(std::move(empty));
  return ErrorCode::OK;
}

ErrorCode BucketBackend::WriteBucket(const std::vector<StoredObject>& batch,
                                     const std::vector<size_t>& items, uint64_t id,
                                     uint64_t first_id, uint32_t count, BucketMeta* meta,
                                     bool* full) {
  meta->bucket_id = id;
  meta->batch_first_id = first_id;
  meta->batch_count = count;
  meta->entries.clear();
  std::vector<iovec> iov;
  uint64_t offset = 0;
  for (size_t i : items) {
    const StoredObject& obj = batch[i];
    iov.push_back({const_cast<char*>(obj.key.data()), obj.key.size()});
    iov.push_back({const_cast<char*>(obj.value.data()), obj.value.size()});
    offset += obj.key.size();
    meta->entries.push_back({std::string(EffectiveTenant(obj.tenant)), obj.key, offset,
                             obj.value.size(), ValueChecksum(obj.value)});
    offset += obj.value.size();
  }
  meta->bucket_size = offset;

  // The first failure's errno says whether the disk is full.
  *full = false;
  auto failed = [full](ErrorCode ec) {
    if (ec != ErrorCode::OK && !*full) *full = errno == ENOSPC || errno == EDQUOT;
    return ec != ErrorCode::OK;
  };
  Result<int> fd = io_->Open(PathOf(id, kBucketSuffix), O_CREAT | O_WRONLY | O_TRUNC);
  if (failed(fd.ok() ? ErrorCode::OK : fd.error())) return fd.error();
  ErrorCode ec = ErrorCode::OK;
  uint64_t at = 0;
  for (size_t i = 0; ec == ErrorCode::OK && i < iov.size(); i += kMaxIov) {
    std::span<const iovec> part(iov.data() + i, std::min(kMaxIov, iov.size() - i));
    ec = io_->PWriteV(*fd, part, at);
    for (const iovec& v : part) at += v.iov_len;
  }
  if (ec == ErrorCode::OK) ec = io_->FDataSync(*fd);
  failed(ec);
  ErrorCode close_ec = io_->Close(*fd);
  if (ec == ErrorCode::OK) ec = close_ec;
  if (ec != ErrorCode::OK) return ec;

  // The bucket is durable: now its record, atomically.
  const std::string bytes = EncodeBucketMeta(*meta);
  const std::string tmp = PathOf(id, kTempSuffix);
  Result<int> mfd = io_->Open(tmp, O_CREAT | O_WRONLY | O_TRUNC);
  if (failed(mfd.ok() ? ErrorCode::OK : mfd.error())) return mfd.error();
  ec = io_->PWrite(*mfd, bytes.data(), bytes.size(), 0);
  if (ec == ErrorCode::OK) ec = io_->FSync(*mfd);
  failed(ec);
  close_ec = io_->Close(*mfd);
  if (ec == ErrorCode::OK) ec = close_ec;
  if (ec == ErrorCode::OK) ec = io_->Rename(tmp, PathOf(id, kMetaSuffix));
  if (ec == ErrorCode::OK) ec = io_->SyncDir(options_.root);
  failed(ec);
  return ec;
}

void BucketBackend::RemoveBucketFiles(const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) {
    io_->Remove(PathOf(id, kMetaSuffix));
    io_->Remove(PathOf(id, kTempSuffix));
    io_->Remove(PathOf(id, kBucketSuffix));
  }
  io_->SyncDir(options_.root);
}

Result<std::vector<StoredLocation>> BucketBackend::WriteBatch(
    const std::vector<StoredObject>& batch) {
  // Validate and split into buckets.
  std::vector<std::vector<size_t>> plan;
  uint64_t total_bytes = 0;
  uint64_t cur_bytes = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const StoredObject& obj = batch[i];
    ErrorCode ec = ValidateTenant(EffectiveTenant(obj.tenant));
    if (ec == ErrorCode::OK) ec = ValidateKey(obj.key);
    if (ec != ErrorCode::OK) return ec;
    const uint64_t bytes = obj.key.size() + obj.value.size();
    if (plan.empty() || plan.back().size() >= options_.bucket_keys ||
        (!plan.back().empty() && cur_bytes + bytes > options_.bucket_bytes)) {
      plan.emplace_back();
      cur_bytes = 0;
    }
    plan.back().push_back(i);
    cur_bytes += bytes;
    total_bytes += bytes;
  }
  if (batch.empty()) return std::vector<StoredLocation>{};
  const uint64_t total_keys = batch.size();
  if ((options_.total_bytes != 0 && total_bytes > options_.total_bytes) ||
      (options_.total_keys != 0 && total_keys > options_.total_keys) ||
      plan.size() > UINT32_MAX) {
    return ErrorCode::INVALID_PARAMS;
  }
  const auto count = static_cast<uint32_t>(plan.size());

  uint64_t first_id = 0;
  std::vector<Victim> victims;
  {
    MutexLock lock(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    first_id = next_id_;
    next_id_ += count;
    EvictForLocked(total_bytes, total_keys, &victims);
    reserved_bytes_ += total_bytes;
    reserved_keys_ += total_keys;
  }
  FinishVictims(std::move(victims));

  std::vector<BucketMeta> metas(count);
  ErrorCode ec = ErrorCode::OK;
  for (bool full = true; full;) {
    ec = ErrorCode::OK;
    uint32_t written = 0;
    for (; ec == ErrorCode::OK && written < count; ++written) {
      ec = WriteBucket(batch, plan[written], first_id + written, first_id, count, &metas[written],
                       &full);
    }
    if (ec == ErrorCode::OK) break;
    std::vector<uint64_t> ids;
    for (uint32_t i = 0; i < written; ++i) ids.push_back(first_id + i);
    RemoveBucketFiles(ids);
    // A full disk is a size limit met: make room as the limits do and try
    // again; the batch fails once nothing is left to evict.
    full = full && EvictForDiskFull();
  }

  std::vector<StoredLocation> out;
  std::vector<Victim> empty;
  {
    MutexLock lock(&mu_);
    reserved_bytes_ -= total_bytes;
    reserved_keys_ -= total_keys;
    if (ec != ErrorCode::OK) return ec;
    ++tick_;
    for (BucketMeta& meta : metas) {
      auto bucket = std::make_shared<Bucket>();
      bucket->io = io_;
      bucket->path = PathOf(meta.bucket_id, kBucketSuffix);
      bucket->id = meta.bucket_id;
      bucket->size = meta.bucket_size;
      bucket->batch_first = first_id;
      bucket->batch_count = count;
      for (BucketMetaEntry& e : meta.entries) {
        out.push_back({e.tenant, e.key, static_cast<int64_t>(meta.bucket_id),
                       static_cast<int64_t>(e.offset), static_cast<int64_t>(e.key.size()),
                       static_cast<int64_t>(e.data_size), e.checksum});
        const uint64_t key_size = e.key.size();
        bucket->keys.push_back({std::move(e.tenant), std::move(e.key)});
        bucket->locs.push_back({meta.bucket_id, e.offset, key_size, e.data_size, e.checksum});
      }
      InstallLocked(std::move(bucket), &empty);
    }
  }
  FinishVictims(std::move(empty));
  return out;
}

bool BucketBackend::EvictForDiskFull() {
  std::vector<Victim> victims;
  {
    MutexLock lock(&mu_);
    if (closed_ || buckets_.empty()) return false;
    DetachGroupLocked(PickVictimLocked(), /*collect_keys=*/true, &victims);
    disk_full_evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  FinishVictims(std::move(victims));
  return true;
}

void BucketBackend::InstallLocked(std::shared_ptr<Bucket> bucket, std::vector<Victim>* empty) {
  Bucket* b = bucket.get();
  b->last_used = ++tick_;
  used_bytes_ += b->size;
  buckets_[b->id] = std::move(bucket);
  for (size_t i = 0; i < b->keys.size(); ++i) {
    ++b->live_keys;
    auto [it, inserted] = index_.try_emplace(b->keys[i], b->locs[i]);
    if (inserted) continue;
    const Location old = it->second;
    it->second = b->locs[i];
    DropKeyLocked(old, empty);
  }
}

void BucketBackend::DropKeyLocked(const Location& loc, std::vector<Victim>* empty) {
  auto it = buckets_.find(loc.bucket_id);
  if (it == buckets_.end()) return;
  Bucket* b = it->second.get();
  if (--b->live_keys != 0) return;
  for (uint64_t m = b->batch_first; m - b->batch_first < b->batch_count; ++m) {
    auto member = buckets_.find(m);
    if (member != buckets_.end() && member->second->live_keys != 0) return;
  }
  DetachGroupLocked(b->id, /*collect_keys=*/false, empty);
}

void BucketBackend::DetachGroupLocked(uint64_t any_id, bool collect_keys,
                                      std::vector<Victim>* out) {
  auto any = buckets_.find(any_id);
  if (any == buckets_.end()) return;
  const uint64_t first = any->second->batch_first;
  const uint32_t count = any->second->batch_count;
  for (uint64_t m = first; m - first < count; ++m) {
    auto it = buckets_.find(m);
    if (it == buckets_.end()) continue;
    Victim victim;
    victim.bucket = std::move(it->second);
    buckets_.erase(it);
    Bucket* b = victim.bucket.get();
    used_bytes_ -= b->size;
    if (b->fd != nullptr) --open_fds_;  // closed with the bucket, outside the lock
    b->doomed = true;
    for (const IndexKey& k : b->keys) {
      auto idx = index_.find(k);
      if (idx == index_.end() || idx->second.bucket_id != b->id) continue;
      if (collect_keys) victim.evicted.push_back(k);
      index_.erase(idx);
    }
    b->live_keys = 0;
    out->push_back(std::move(victim));
  }
}

uint64_t BucketBackend::PickVictimLocked() const {
  if (options_.eviction == BucketEviction::kFifo) return buckets_.begin()->first;
  // A batch goes whole, so it is as recent as its most recently used
  // bucket. Its buckets have consecutive ids: one pass, group by group.
  uint64_t victim = 0, victim_used = UINT64_MAX;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const uint64_t first = it->second->batch_first;
    uint64_t used = 0;
    for (; it != buckets_.end() && it->second->batch_first == first; ++it) {
      used = std::max(used, it->second->last_used);
    }
    if (used < victim_used) {
      victim = first;
      victim_used = used;
    }
  }
  return buckets_.lower_bound(victim)->first;
}

void BucketBackend::EvictForLocked(uint64_t bytes, uint64_t keys, std::vector<Victim>* out) {
  auto over = [&]() REQUIRES(mu_) {
    return (options_.total_bytes != 0 &&
            used_bytes_ + reserved_bytes_ + bytes > options_.total_bytes) ||
           (options_.total_keys != 0 &&
            index_.size() + reserved_keys_ + keys > options_.total_keys);
  };
  while (over() && !buckets_.empty()) DetachGroupLocked(PickVictimLocked(), true, out);
}

void BucketBackend::FinishVictims(std::vector<Victim> victims) {
  if (victims.empty()) return;
  EvictCallback cb;
  {
    MutexLock lock(&cb_mu_);
    cb = on_evict_;
  }
  if (cb) {
    for (const Victim& v : victims) {
      for (const IndexKey& k : v.evicted) cb(k.tenant, k.key);
    }
  }
  for (const Victim& v : victims) io_->Remove(PathOf(v.bucket->id, kMetaSuffix));
  io_->SyncDir(options_.root);
  // Dropping `victims` removes each .bucket unless a read still holds it.
}

ErrorCode BucketBackend::ReadValue(std::string_view tenant, std::string_view key,
                                   uint64_t expected_size, std::string* out, DiskPlace* place) {
  bool served = false;
  return ReadIndexed(tenant, key, expected_size, out, place, /*cached_only=*/false, &served);
}

ErrorCode BucketBackend::ReadValueCached(std::string_view tenant, std::string_view key,
                                         uint64_t expected_size, std::string* out,
                                         DiskPlace* place, bool* served) {
  return ReadIndexed(tenant, key, expected_size, out, place, /*cached_only=*/true, served);
}

ErrorCode BucketBackend::ReadIndexed(std::string_view tenant, std::string_view key,
                                     uint64_t expected_size, std::string* out, DiskPlace* place,
                                     bool cached_only, bool* served) {
  *served = true;
  const IndexKey k{std::string(EffectiveTenant(tenant)), std::string(key)};
  std::shared_ptr<Bucket> bucket;
  Location loc;
  {
    MutexLock lock(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    auto it = index_.find(k);
    if (it == index_.end()) return ErrorCode::OBJECT_NOT_FOUND;
    loc = it->second;
    if (expected_size != 0 && expected_size != loc.data_size) return ErrorCode::INVALID_PARAMS;
    bucket = buckets_.at(loc.bucket_id);
    bucket->last_used = ++tick_;
  }
  const ErrorCode ec = ReadAt(bucket, loc, out, cached_only, served);
  if (ec == ErrorCode::DATA_CORRUPTED) DropCorrupt(k, loc);
  if (ec == ErrorCode::OK && *served && place != nullptr) {
    *place = {static_cast<int64_t>(loc.bucket_id), static_cast<int64_t>(loc.offset)};
  }
  return ec;
}

void BucketBackend::DropCorrupt(const IndexKey& k, const Location& loc) {
  std::vector<Victim> empty;
  {
    MutexLock lock(&mu_);
    auto it = index_.find(k);
    // Only the record that failed: the key may have been written again.
    if (closed_ || it == index_.end() || it->second.bucket_id != loc.bucket_id ||
        it->second.offset != loc.offset) {
      return;
    }
    index_.erase(it);
    DropKeyLocked(loc, &empty);
  }
  LogCorruptRecord(name(), options_.root, k.tenant, k.key,
                   corrupt_records_.fetch_add(1, std::memory_order_relaxed) + 1);
  FinishVictims(std::move(empty));
}

ErrorCode BucketBackend::ReadAt(const std::shared_ptr<Bucket>& bucket, const Location& loc,
                                std::string* out, bool cached_only, bool* served) {
  std::shared_ptr<OpenFd> fd;
  {
    MutexLock lock(&mu_);
    fd = bucket->fd;
  }
  if (fd == nullptr && cached_only) {  // opening the file could wait for the device
    *served = false;
    return ErrorCode::OK;
  }
  if (fd == nullptr) {
    Result<int> raw = io_->Open(bucket->path, O_RDONLY);
    if (!raw.ok()) return ErrorCode::DATA_CORRUPTED;  // the file is gone
    fd = std::make_shared<OpenFd>(io_, *raw);
    std::shared_ptr<OpenFd> dropped;  // closed outside the lock
    MutexLock lock(&mu_);
    if (bucket->fd != nullptr) {
      fd = bucket->fd;
    } else if (!bucket->doomed && !closed_) {
      bucket->fd = fd;
      if (++open_fds_ > options_.max_open_fds) {
        Bucket* oldest = nullptr;
        for (auto& [id, b] : buckets_) {
          if (b->fd != nullptr && b.get() != bucket.get() &&
              (oldest == nullptr || b->last_used < oldest->last_used)) {
            oldest = b.get();
          }
        }
        if (oldest != nullptr) {
          dropped = std::move(oldest->fd);
          --open_fds_;
        }
      }
    }
    lock.unlock();
  }
  out->resize(loc.data_size);
  ErrorCode ec = ErrorCode::OK;
  if (loc.data_size != 0) {
    ec = cached_only ? io_->PReadCached(fd->fd, out->data(), loc.data_size, loc.offset, served)
                     : io_->PRead(fd->fd, out->data(), loc.data_size, loc.offset);
  }
  if (ec == ErrorCode::OK && !*served) {
    out->clear();
    return ErrorCode::OK;
  }
  // A read error (a truncated file reads short) or other bytes than were
  // written: never returned. The progress thread leaves the verdict to a
  // ReadValue, which drops the record.
  if (ec != ErrorCode::OK || ValueChecksum(*out) != loc.checksum) {
    out->clear();
    if (!cached_only) return ErrorCode::DATA_CORRUPTED;
    *served = false;
  }
  return ErrorCode::OK;
}

ErrorCode BucketBackend::Remove(std::string_view tenant, std::string_view key) {
  const IndexKey k{std::string(EffectiveTenant(tenant)), std::string(key)};
  std::vector<Victim> empty;
  {
    MutexLock lock(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    auto it = index_.find(k);
    if (it == index_.end()) return ErrorCode::OBJECT_NOT_FOUND;
    const Location loc = it->second;
    index_.erase(it);
    DropKeyLocked(loc, &empty);
  }
  FinishVictims(std::move(empty));
  return ErrorCode::OK;
}

std::vector<StoredLocation> BucketBackend::List() const {
  MutexLock lock(&mu_);
  std::vector<StoredLocation> out;
  out.reserve(index_.size());
  for (const auto& [k, loc] : index_) {
    out.push_back({k.tenant, k.key, static_cast<int64_t>(loc.bucket_id),
                   static_cast<int64_t>(loc.offset), static_cast<int64_t>(loc.key_size),
                   static_cast<int64_t>(loc.data_size), loc.checksum});
  }
  return out;
}

uint64_t BucketBackend::object_count() const {
  MutexLock lock(&mu_);
  return index_.size();
}

uint64_t BucketBackend::used_bytes() const {
  MutexLock lock(&mu_);
  return used_bytes_;
}

uint64_t BucketBackend::corrupt_records() const {
  return corrupt_records_.load(std::memory_order_relaxed);
}

void BucketBackend::SetEvictCallback(EvictCallback cb) {
  MutexLock lock(&cb_mu_);
  on_evict_ = std::move(cb);
}

ErrorCode BucketBackend::Close() {
  std::vector<std::shared_ptr<OpenFd>> fds;  // closed outside the lock
  MutexLock lock(&mu_);
  closed_ = true;
  for (auto& [id, b] : buckets_) {
    if (b->fd != nullptr) fds.push_back(std::move(b->fd));
  }
  open_fds_ = 0;
  lock.unlock();
  return ErrorCode::OK;
}

std::vector<uint64_t> BucketBackend::BucketIds() const {
  MutexLock lock(&mu_);
  std::vector<uint64_t> ids;
  for (const auto& [id, b] : buckets_) ids.push_back(id);
  return ids;
}

}  // namespace shelfmark
