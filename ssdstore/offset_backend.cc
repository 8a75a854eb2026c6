#include "ssdstore/offset_backend.h"

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

#include "common/checksum.h"
#include "common/object_key.h"
#include "ssdstore/offset_record.h"

namespace shelfmark {
namespace {

constexpr uint64_t kVerifyChunk = 1 << 20;

std::string JoinPath(const std::string& dir, std::string_view name) {
  std::string path = dir;
  if (path.back() != '/') path += '/';
  path.append(name);
  return path;
}

ErrorCode ValidateOptions(const OffsetBackendOptions& o) {
  if (o.root.empty() || o.root.front() != '/') return ErrorCode::INVALID_PARAMS;
  if (o.capacity_bytes < kRecordAlignment) return ErrorCode::INVALID_PARAMS;
  if (!(o.low_watermark > 0 && o.low_watermark <= o.high_watermark && o.high_watermark <= 1)) {
    return ErrorCode::INVALID_PARAMS;
  }
  return ErrorCode::OK;
}

// Bytes an allocation of a record of `total` bytes takes (0 on overflow).
uint64_t AllocSize(uint64_t total) {
  if (total == 0 || total > UINT64_MAX - kRecordAlignment) return 0;
  return (total + kRecordAlignment - 1) / kRecordAlignment * kRecordAlignment;
}

ErrorCode IgnoreMissing(ErrorCode rc) {
  return rc == ErrorCode::FILE_NOT_FOUND ? ErrorCode::OK : rc;
}

}  // namespace

OffsetBackendOptions OffsetOptionsFromConfig(const StorageConfig& config) {
  OffsetBackendOptions o;
  o.root = config.storage_path;
  o.capacity_bytes = config.total_size_limit_bytes;
  o.persist_mode = config.persist_mode;
  o.persist_interval_seconds = config.persist_interval_seconds;
  o.high_watermark = config.high_watermark;
  o.low_watermark = config.low_watermark;
  o.max_objects = config.total_keys_limit;
  return o;
}

size_t OffsetBackend::IndexKeyHash::operator()(const IndexKey& k) const {
  const size_t h = std::hash<std::string>()(k.first);
  return h ^ (std::hash<std::string>()(k.second) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

OffsetBackend::OffsetBackend(FileIo* io, OffsetBackendOptions options, uint64_t capacity)
    : io_(io),
      options_(std::move(options)),
      capacity_(capacity),
      allocator_(capacity, kRecordAlignment) {}

Result<std::unique_ptr<OffsetBackend>> OffsetBackend::Open(FileIo* io,
                                                           OffsetBackendOptions options) {
  if (io == nullptr) return ErrorCode::INVALID_PARAMS;
  if (ErrorCode rc = ValidateOptions(options); rc != ErrorCode::OK) return rc;
  options.persist_interval_seconds =
      std::max(options.persist_interval_seconds, kMinPersistIntervalSeconds);
  const uint64_t capacity = options.capacity_bytes / kRecordAlignment * kRecordAlignment;
  std::unique_ptr<OffsetBackend> b(new OffsetBackend(io, std::move(options), capacity));
  ErrorCode rc = b->OpenFiles();
  if (rc == ErrorCode::OK) rc = b->Recover();
  if (rc != ErrorCode::OK) return rc;  // the destructor closes the data file
  if (b->options_.persist_mode == OffsetPersistMode::kRelaxed) {
    MutexLock l(&b->join_mu_);
    b->checkpointer_ = std::thread([raw = b.get()] { raw->CheckpointLoop(); });
  }
  return b;
}

OffsetBackend::~OffsetBackend() {
  StopCheckpointer();
  MutexLock l(&mu_);
  while (active_reads_ > 0) reads_done_.wait(l);
  if (data_fd_ >= 0) io_->Close(data_fd_);
  data_fd_ = -1;
}

ErrorCode OffsetBackend::OpenFiles() {
  std::error_code ec;
  std::filesystem::create_directories(options_.root, ec);
  if (ec) return ErrorCode::FILE_OPEN_FAIL;
  Result<std::vector<std::string>> listed = io_->List(options_.root);  // readable at all?
  if (!listed.ok()) return listed.error();
  Result<int> fd = io_->Open(JoinPath(options_.root, kOffsetDataFileName), O_CREAT | O_RDWR);
  if (!fd.ok()) return fd.error();
  data_fd_ = *fd;
  Result<uint64_t> size = io_->FileSize(data_fd_);
  if (!size.ok()) return size.error();
  if (*size < capacity_) return io_->Fallocate(data_fd_, 0, capacity_);
  return ErrorCode::OK;
}

ErrorCode OffsetBackend::Recover() {
  if (options_.persist_mode == OffsetPersistMode::kDisabled) {
    ErrorCode rc = IgnoreMissing(io_->Remove(JoinPath(options_.root, kCheckpointFileName)));
    if (rc == ErrorCode::OK) rc = IgnoreMissing(io_->SyncDir(options_.root));
    return rc;
  }
  Result<Checkpoint> cp = ReadCheckpointFile(io_, options_.root);
  if (cp.error() == ErrorCode::FILE_NOT_FOUND) return ErrorCode::OK;
  if (cp.error() == ErrorCode::DATA_CORRUPTED) {
    report_.checkpoint_found = true;
    report_.checkpoint_corrupt = true;
    std::fprintf(stderr, "shelfmark ssdstore: %s/%s is corrupt; starting empty\n",
                 options_.root.c_str(), std::string(kCheckpointFileName).c_str());
    return ErrorCode::OK;
  }
  if (!cp.ok()) return cp.error();
  report_.checkpoint_found = true;
  return RecoverEntries(*cp);
}

ErrorCode OffsetBackend::VerifyOnDisk(const CheckpointEntry& e, uint64_t* checksum) {
  const uint64_t value_offset = RecordValueOffset(e.tenant.size(), e.key.size());
  std::string buf(value_offset, '\0');
  if (ErrorCode rc = io_->PRead(data_fd_, buf.data(), buf.size(), e.offset); rc != ErrorCode::OK) {
    return rc;
  }
  // Header, tenant, key and seq must match; the CRC then runs over the value
  // in chunks (VerifyRecord with an empty value checks all but the value).
  Result<RecordHeader> h = DecodeRecordHeader(buf);
  if (!h.ok() || h->value_len != e.value_size) return ErrorCode::DATA_CORRUPTED;
  if (h->seq != e.seq || h->tenant_len != e.tenant.size() || h->key_len != e.key.size() ||
      std::string_view(buf).substr(kRecordHeaderSize, e.tenant.size()) != e.tenant ||
      std::string_view(buf).substr(kRecordHeaderSize + e.tenant.size(), e.key.size()) != e.key) {
    return ErrorCode::DATA_CORRUPTED;
  }
  // The value's checksum, which every later read verifies, comes from the
  // same pass: it holds once the CRC does.
  uint32_t crc = RecordCrc(*h, e.tenant, e.key, {});
  Checksum64Stream hash;
  std::string chunk(std::min(e.value_size, kVerifyChunk), '\0');
  for (uint64_t done = 0; done < e.value_size;) {
    const uint64_t n = std::min(kVerifyChunk, e.value_size - done);
    if (ErrorCode rc = io_->PRead(data_fd_, chunk.data(), n, e.offset + value_offset + done);
        rc != ErrorCode::OK) {
      return rc;
    }
    crc = Crc32c(chunk.data(), n, crc);
    hash.Update(chunk.data(), n);
    done += n;
  }
  *checksum = hash.Digest();
  return crc == h->crc ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
}

void OffsetBackend::Drop(const CheckpointEntry& e, std::string_view why) {
  ++report_.dropped;
  if (dropped_reasons_.size() < StorageRecovery::kMaxReasons) {
    dropped_reasons_.push_back(e.tenant + "/" + e.key + " at " + std::to_string(e.offset) + ": " +
                               std::string(why));
  }
}

StorageRecovery OffsetBackend::recovery() const {
  StorageRecovery r;
  r.records_dropped = report_.dropped;
  r.checkpoint_corrupt = report_.checkpoint_corrupt;
  if (r.checkpoint_corrupt) r.Note(std::string(kCheckpointFileName) + ": does not decode");
  for (const std::string& why : dropped_reasons_) r.Note(why);
  return r;
}

ErrorCode OffsetBackend::RecoverEntries(const Checkpoint& cp) {
  report_.tombstones = cp.tombstones.size();
  uint64_t next_seq = cp.next_seq;
  std::vector<const CheckpointEntry*> good;
  std::map<const CheckpointEntry*, uint64_t> checksums;
  std::set<IndexKey> seen;
  for (const CheckpointEntry& e : cp.entries) {
    const uint64_t total = RecordTotalSize(e.tenant.size(), e.key.size(), e.value_size);
    const uint64_t alloc = AllocSize(total);
    const bool sane = ValidateTenant(e.tenant) == ErrorCode::OK &&
                      ValidateKey(e.key) == ErrorCode::OK && e.total_size == total && alloc != 0 &&
                      e.offset % kRecordAlignment == 0 && e.offset < capacity_ &&
                      alloc <= capacity_ - e.offset && e.seq < cp.next_seq &&
                      seen.insert({e.tenant, e.key}).second;
    if (!sane) {
      Drop(e, "checkpoint entry out of range, malformed or repeated");
      continue;
    }
    const ErrorCode rc = VerifyOnDisk(e, &checksums[&e]);
    if (rc == ErrorCode::DATA_CORRUPTED) {
      Drop(e, "record does not verify (header, key or CRC-32C)");
      continue;
    }
    if (rc != ErrorCode::OK) return rc;  // an I/O error: fail start-up
    good.push_back(&e);
  }
  // Drop overlaps (keeping the lower offset), then free space = the gaps.
  std::vector<const CheckpointEntry*> by_offset = good;
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  std::set<const CheckpointEntry*> overlapping;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  uint64_t end = 0;
  for (const CheckpointEntry* e : by_offset) {
    if (e->offset < end) {
      overlapping.insert(e);
      continue;
    }
    if (e->offset > end) gaps.emplace_back(end, e->offset - end);
    end = e->offset + AllocSize(e->total_size);
  }
  if (end < capacity_) gaps.emplace_back(end, capacity_ - end);
  std::optional<OffsetAllocator> rebuilt =
      OffsetAllocator::FromFreeExtents(capacity_, kRecordAlignment, gaps);
  if (!rebuilt) return ErrorCode::INTERNAL_ERROR;  // gaps are valid by construction
  MutexLock wl(&write_mu_);
  MutexLock l(&mu_);
  allocator_ = std::move(*rebuilt);
  for (const CheckpointEntry* e : good) {  // FIFO order
    if (overlapping.count(e) > 0) {
      Drop(*e, "record overlaps another");
      continue;
    }
    auto extent = std::make_shared<Extent>();
    extent->offset = e->offset;
    extent->alloc_size = AllocSize(e->total_size);
    IndexKey id{e->tenant, e->key};
    index_[id] = Entry{std::move(extent), e->total_size, e->value_size, e->seq, checksums.at(e)};
    fifo_[e->seq] = std::move(id);
    next_seq = std::max(next_seq, e->seq + 1);
    ++report_.recovered;
  }
  next_seq_ = next_seq;
  return ErrorCode::OK;
}

void OffsetBackend::ReleaseLocked(const std::shared_ptr<Extent>& extent) {
  extent->released = true;
  if (extent->readers == 0) allocator_.Free(extent->offset, extent->alloc_size);
}

void OffsetBackend::EraseLocked(const IndexKey& id) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  fifo_.erase(it->second.seq);
  ReleaseLocked(it->second.extent);
  index_.erase(it);
}

bool OffsetBackend::EvictDown(uint64_t extra_bytes, uint64_t target_bytes, uint64_t extra_objects,
                              bool force_one) {
  std::vector<std::pair<IndexKey, std::shared_ptr<Extent>>> victims;
  EvictCallback cb;
  {
    MutexLock l(&mu_);
    uint64_t allocated = allocator_.allocated_bytes();
    const uint64_t max = options_.max_objects;
    uint64_t count = index_.size();
    auto over = [&] {
      if (force_one) return victims.empty();
      return allocated + extra_bytes > target_bytes || (max != 0 && count + extra_objects > max);
    };
    while (!fifo_.empty() && over()) {
      --count;
      auto first = fifo_.begin();
      auto it = index_.find(first->second);
      allocated -= std::min(allocated, it->second.extent->alloc_size);
      victims.emplace_back(it->first, it->second.extent);
      index_.erase(it);
      fifo_.erase(first);
    }
    cb = on_evict_;
  }
  // The master hears of each key before its space can be reused.
  for (const auto& [id, extent] : victims) {
    if (cb) cb(id.first, id.second);
    tombstones_.push_back(id);
  }
  MutexLock l(&mu_);
  for (const auto& [id, extent] : victims) ReleaseLocked(extent);
  return !victims.empty();
}

Result<uint64_t> OffsetBackend::AllocateWithEviction(uint64_t size) {
  while (true) {
    {
      MutexLock l(&mu_);
      if (std::optional<uint64_t> off = allocator_.Allocate(size)) return *off;
    }
    if (!EvictDown(0, 0, 0, /*force_one=*/true)) return ErrorCode::BUFFER_OVERFLOW;
  }
}

ErrorCode OffsetBackend::WriteRecord(const StoredObject& obj, const Pending& p) {
  const std::string prefix = EncodeRecordPrefix(p.id.first, p.id.second, obj.value, p.entry.seq);
  const iovec iov[2] = {{const_cast<char*>(prefix.data()), prefix.size()},
                        {const_cast<char*>(obj.value.data()), obj.value.size()}};
  return io_->PWriteV(data_fd_, std::span<const iovec>(iov, obj.value.empty() ? 1 : 2),
                      p.entry.extent->offset);
}

Checkpoint OffsetBackend::BuildCheckpoint(const std::vector<IndexKey>& removed,
                                          const std::vector<Pending>& added) {
  Checkpoint c;
  c.data_file_size = capacity_;
  c.alignment = kRecordAlignment;
  c.next_seq = next_seq_;
  std::set<IndexKey> skip(removed.begin(), removed.end());
  for (const Pending& p : added) skip.insert(p.id);
  auto add = [&c](const IndexKey& id, const Entry& e) {
    c.entries.push_back(
        CheckpointEntry{id.first, id.second, e.extent->offset, e.total_size, e.value_size, e.seq});
  };
  {
    MutexLock l(&mu_);
    c.free_extents = allocator_.FreeExtents();
    for (const auto& [seq, id] : fifo_) {
      if (skip.count(id) == 0) add(id, index_.at(id));
    }
  }
  for (size_t i = 0; i < added.size(); ++i) {
    const bool replaced_later = std::any_of(added.begin() + i + 1, added.end(),
                                            [&](const Pending& q) { return q.id == added[i].id; });
    if (!replaced_later) add(added[i].id, added[i].entry);
  }
  c.tombstones = tombstones_;
  c.tombstones.insert(c.tombstones.end(), removed.begin(), removed.end());
  return c;
}

ErrorCode OffsetBackend::PersistLocked(const std::vector<IndexKey>& removed,
                                       const std::vector<Pending>& added) {
  ErrorCode rc = io_->FDataSync(data_fd_);
  if (rc == ErrorCode::OK)
    rc = WriteCheckpointFile(io_, options_.root, BuildCheckpoint(removed, added));
  if (rc == ErrorCode::OK) tombstones_.clear();
  return rc;
}

Result<std::vector<StoredLocation>> OffsetBackend::WriteBatch(
    const std::vector<StoredObject>& batch) {
  std::vector<Pending> pending;
  pending.reserve(batch.size());
  uint64_t batch_bytes = 0;
  for (const StoredObject& obj : batch) {
    const std::string_view tenant = EffectiveTenant(obj.tenant);
    if (ErrorCode rc = ValidateTenant(tenant); rc != ErrorCode::OK) return rc;
    if (ErrorCode rc = ValidateKey(obj.key); rc != ErrorCode::OK) return rc;
    Pending p;
    p.id = {std::string(tenant), obj.key};
    p.entry.total_size = RecordTotalSize(tenant.size(), obj.key.size(), obj.value.size());
    p.entry.value_size = obj.value.size();
    p.entry.checksum = ValueChecksum(obj.value);
    const uint64_t alloc = AllocSize(p.entry.total_size);
    if (alloc == 0 || alloc > capacity_) return ErrorCode::BUFFER_OVERFLOW;
    batch_bytes += alloc;
    pending.push_back(std::move(p));
  }
  if (options_.max_objects != 0 && batch.size() > options_.max_objects) {
    return ErrorCode::BUFFER_OVERFLOW;
  }
  MutexLock wl(&write_mu_);
  uint64_t allocated;
  uint64_t new_objects = 0;  // keys of the batch not stored yet
  uint64_t count;
  {
    MutexLock l(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    allocated = allocator_.allocated_bytes();
    count = index_.size();
    std::set<IndexKey> distinct;
    for (const Pending& p : pending) {
      if (index_.count(p.id) == 0 && distinct.insert(p.id).second) ++new_objects;
    }
  }
  const auto high = static_cast<uint64_t>(options_.high_watermark * static_cast<double>(capacity_));
  const auto low = static_cast<uint64_t>(options_.low_watermark * static_cast<double>(capacity_));
  const bool too_many = options_.max_objects != 0 && count + new_objects > options_.max_objects;
  if (allocated + batch_bytes > high || too_many) {
    EvictDown(batch_bytes, allocated + batch_bytes > high ? low : UINT64_MAX, new_objects, false);
  }

  size_t placed = 0;
  auto undo = [&]() {
    MutexLock l(&mu_);
    for (size_t i = 0; i < placed; ++i) {
      allocator_.Free(pending[i].entry.extent->offset, pending[i].entry.extent->alloc_size);
    }
  };
  ErrorCode rc = ErrorCode::OK;
  for (; placed < pending.size() && rc == ErrorCode::OK; ++placed) {
    Pending& p = pending[placed];
    Result<uint64_t> off = AllocateWithEviction(AllocSize(p.entry.total_size));
    if (!off.ok()) {
      rc = off.error();
      break;
    }
    p.entry.extent = std::make_shared<Extent>();
    p.entry.extent->offset = *off;
    p.entry.extent->alloc_size = AllocSize(p.entry.total_size);
    p.entry.seq = next_seq_++;
    rc = WriteRecord(batch[placed], p);
  }
  if (rc == ErrorCode::OK && options_.persist_mode == OffsetPersistMode::kStrict) {
    rc = PersistLocked({}, pending);
  }
  if (rc != ErrorCode::OK) {
    undo();
    return rc;
  }
  std::vector<StoredLocation> out;
  out.reserve(pending.size());
  MutexLock l(&mu_);
  for (Pending& p : pending) {
    EraseLocked(p.id);
    out.push_back(StoredLocation{
        p.id.first, p.id.second, 0,
        static_cast<int64_t>(p.entry.extent->offset + p.entry.total_size - p.entry.value_size),
        static_cast<int64_t>(p.id.second.size()), static_cast<int64_t>(p.entry.value_size),
        p.entry.checksum});
    fifo_[p.entry.seq] = p.id;
    index_[p.id] = std::move(p.entry);
  }
  return out;
}

ErrorCode OffsetBackend::ReadValue(std::string_view tenant, std::string_view key,
                                   uint64_t expected_size, std::string* out, DiskPlace* place) {
  bool served = false;
  return ReadIndexed(tenant, key, expected_size, out, place, /*cached_only=*/false, &served);
}

ErrorCode OffsetBackend::ReadValueCached(std::string_view tenant, std::string_view key,
                                         uint64_t expected_size, std::string* out,
                                         DiskPlace* place, bool* served) {
  return ReadIndexed(tenant, key, expected_size, out, place, /*cached_only=*/true, served);
}

ErrorCode OffsetBackend::ReadIndexed(std::string_view tenant, std::string_view key,
                                     uint64_t expected_size, std::string* out, DiskPlace* place,
                                     bool cached_only, bool* served) {
  *served = true;
  std::shared_ptr<Extent> extent;
  uint64_t value_size = 0;
  uint64_t value_offset = 0;
  uint64_t checksum = 0;
  IndexKey id{std::string(EffectiveTenant(tenant)), std::string(key)};
  {
    MutexLock l(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    auto it = index_.find(id);
    if (it == index_.end()) return ErrorCode::OBJECT_NOT_FOUND;
    const Entry& e = it->second;
    if (expected_size != 0 && expected_size != e.value_size) return ErrorCode::INVALID_PARAMS;
    extent = e.extent;
    value_size = e.value_size;
    checksum = e.checksum;
    value_offset = extent->offset + e.total_size - e.value_size;
    ++extent->readers;
    ++active_reads_;
  }
  out->resize(value_size);
  ErrorCode rc = cached_only
                     ? io_->PReadCached(data_fd_, out->data(), value_size, value_offset, served)
                     : io_->PRead(data_fd_, out->data(), value_size, value_offset);
  // A read error (a truncated file reads short) or other bytes than were
  // written: never returned. The progress thread leaves the verdict to a
  // ReadValue, which drops the record.
  const bool intact = rc == ErrorCode::OK && (!*served || ValueChecksum(*out) == checksum);
  {
    MutexLock l(&mu_);
    if (!intact && !cached_only) DropCorruptLocked(id, extent);
    if (--extent->readers == 0 && extent->released) {
      allocator_.Free(extent->offset, extent->alloc_size);
    }
    if (--active_reads_ == 0) reads_done_.notify_all();
  }
  if (!intact || !*served) {
    out->clear();
    *served = *served && intact;
    return intact || cached_only ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
  }
  if (place != nullptr) *place = {0, static_cast<int64_t>(value_offset)};
  return ErrorCode::OK;
}

void OffsetBackend::DropCorruptLocked(const IndexKey& id, const std::shared_ptr<Extent>& extent) {
  auto it = index_.find(id);
  // Only the record that failed: the key may have been written again. Its
  // space is freed once the last read of it ends. A checkpoint written
  // before still lists it: recovery verifies it again (a corrupt record
  // fails its CRC there).
  if (closed_ || it == index_.end() || it->second.extent != extent) return;
  EraseLocked(id);
  LogCorruptRecord(name(), options_.root, id.first, id.second, ++corrupt_records_);
}

ErrorCode OffsetBackend::Remove(std::string_view tenant, std::string_view key) {
  IndexKey id{std::string(EffectiveTenant(tenant)), std::string(key)};
  MutexLock wl(&write_mu_);
  {
    MutexLock l(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
    if (index_.count(id) == 0) return ErrorCode::OBJECT_NOT_FOUND;
  }
  if (options_.persist_mode == OffsetPersistMode::kStrict) {
    if (ErrorCode rc = PersistLocked({id}, {}); rc != ErrorCode::OK) return rc;
  } else {
    tombstones_.push_back(id);
  }
  MutexLock l(&mu_);
  EraseLocked(id);
  return ErrorCode::OK;
}

std::vector<StoredLocation> OffsetBackend::List() const {
  MutexLock l(&mu_);
  std::vector<StoredLocation> out;
  out.reserve(index_.size());
  for (const auto& [seq, id] : fifo_) {
    const Entry& e = index_.at(id);
    out.push_back(StoredLocation{
        id.first, id.second, 0,
        static_cast<int64_t>(e.extent->offset + e.total_size - e.value_size),
        static_cast<int64_t>(id.second.size()), static_cast<int64_t>(e.value_size), e.checksum});
  }
  return out;
}

uint64_t OffsetBackend::object_count() const {
  MutexLock l(&mu_);
  return index_.size();
}

uint64_t OffsetBackend::used_bytes() const {
  MutexLock l(&mu_);
  return allocator_.allocated_bytes();
}

uint64_t OffsetBackend::corrupt_records() const {
  MutexLock l(&mu_);
  return corrupt_records_;
}

void OffsetBackend::SetEvictCallback(EvictCallback cb) {
  MutexLock l(&mu_);
  on_evict_ = std::move(cb);
}

ErrorCode OffsetBackend::WriteCheckpoint() {
  MutexLock wl(&write_mu_);
  {
    MutexLock l(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
  }
  if (options_.persist_mode == OffsetPersistMode::kDisabled) return ErrorCode::OK;
  return PersistLocked({}, {});
}

void OffsetBackend::CheckpointLoop() {
  const auto interval = std::chrono::seconds(options_.persist_interval_seconds);
  while (true) {
    {
      MutexLock l(&stop_mu_);
      const auto deadline = std::chrono::steady_clock::now() + interval;
      while (!stop_ && stop_cv_.wait_until(l, deadline) != std::cv_status::timeout) {
      }
      if (stop_) return;
    }
    const ErrorCode rc = WriteCheckpoint();
    if (rc != ErrorCode::OK && rc != ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS) {
      std::fprintf(stderr, "shelfmark ssdstore: checkpoint of %s failed: %s\n",
                   options_.root.c_str(), std::string(ErrorCodeName(rc)).c_str());
    }
  }
}

void OffsetBackend::StopCheckpointer() {
  {
    MutexLock l(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  MutexLock l(&join_mu_);
  if (checkpointer_.joinable()) checkpointer_.join();
}

ErrorCode OffsetBackend::Close() {
  StopCheckpointer();
  MutexLock wl(&write_mu_);
  {
    MutexLock l(&mu_);
    if (closed_) return ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS;
  }
  ErrorCode rc = ErrorCode::OK;
  if (options_.persist_mode != OffsetPersistMode::kDisabled) rc = PersistLocked({}, {});
  MutexLock l(&mu_);
  closed_ = true;
  while (active_reads_ > 0) reads_done_.wait(l);
  const ErrorCode close_rc = io_->Close(data_fd_);
  data_fd_ = -1;
  return rc != ErrorCode::OK ? rc : close_rc;
}

}  // namespace shelfmark
