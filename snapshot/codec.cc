// Snapshot codecs. Encoding packs straight into a msgpack::sbuffer with
// msgpack::packer (no intermediate msgpack::object). Decoding runs
// msgpack-c's parser with a visitor that records a flat token list (a
// "tape": at most one token per input byte, nesting depth capped), then a
// cursor reads the expected layout from the tape, checking every count, type
// and range. No msgpack::object zone is built, so an array header that
// claims billions of elements allocates nothing for them.
#include "snapshot/codec.h"

#include <zstd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <limits>
#include <memory>
#include <msgpack.hpp>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "directory/shard.h"

namespace shelfmark {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

constexpr int kZstdLevel = 3;
constexpr uint64_t kMaxPlainBytes = 4ULL << 30;
// zstd's best case is an RLE block: 4 bytes (3-byte header + 1 byte) for a
// 128 KiB block, so no valid frame expands by more than this.
constexpr uint64_t kMaxZstdRatio = 32768;
constexpr uint32_t kZstdMagic = 0xFD2FB528;
constexpr uint8_t kZstdChecksumFlag = 0x04;  // Frame_Header_Descriptor bit 2
constexpr uint32_t kMaxDepth = 8;            // deepest valid payload: 6

constexpr uint32_t kShardFields = 4;
constexpr uint32_t kObjectFields = 13;  // 14 with ObjectState::pending (written only when set)
constexpr uint32_t kPendingFields = 10;
constexpr uint32_t kReplicaFields = 5;
constexpr uint32_t kGroupFields = 3;
constexpr uint32_t kSegmentsFields = 5;
constexpr uint32_t kSegmentStateFields = 4;
constexpr uint32_t kSegmentFields = 7;
constexpr uint32_t kDiskFields = 3;
constexpr uint32_t kTasksFields = 2;
constexpr uint32_t kOffloadFields = 2;
constexpr uint32_t kTaskFields = 3;
constexpr uint32_t kMetadataFields = 2;

// ---------------------------------------------------------------- zstd

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx = [] {
    std::unique_ptr<ZSTD_CCtx, CCtxDeleter> c(ZSTD_createCCtx());
    if (!c ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, kZstdLevel)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_contentSizeFlag, 1))) {
      std::abort();  // out of memory: Encode* has no error to return
    }
    return c;
  }();
  return ctx.get();
}

ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  return ctx.get();
}

// Buffers kept per thread between payloads (decompressed bytes, compressed
// bytes); one grown past this is released after use.
constexpr size_t kKeptBufferBytes = size_t{64} << 20;

// This thread's decompression buffer, reused across payloads.
class PlainBuffer {
 public:
  PlainBuffer() : buffer_(Get()) {}
  ~PlainBuffer() {
    if (buffer_.capacity > kKeptBufferBytes) buffer_ = Buffer{};
  }
  PlainBuffer(const PlainBuffer&) = delete;
  PlainBuffer& operator=(const PlainBuffer&) = delete;

  // Room for `n` bytes (uninitialised). May throw std::bad_alloc.
  char* Resize(size_t n) {
    if (n > buffer_.capacity) {
      buffer_.data.reset();
      buffer_.capacity = 0;
      buffer_.data.reset(new char[n]);
      buffer_.capacity = n;
    }
    size_ = n;
    return buffer_.data.get();
  }
  std::string_view view() const { return {buffer_.data.get(), size_}; }

 private:
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
  };
  static Buffer& Get() {
    thread_local Buffer buffer;
    return buffer;
  }
  Buffer& buffer_;
  size_t size_ = 0;
};

// One whole zstd frame with content size and checksum, nothing after it,
// decompressed into *out.
ErrorCode Decompress(std::string_view frame, PlainBuffer* out) {
  if (frame.size() < 6) return ErrorCode::DATA_CORRUPTED;
  uint32_t magic = 0;  // little-endian on disk
  for (int i = 3; i >= 0; --i) magic = (magic << 8) | static_cast<uint8_t>(frame[i]);
  if (magic != kZstdMagic) return ErrorCode::DATA_CORRUPTED;
  if ((static_cast<uint8_t>(frame[4]) & kZstdChecksumFlag) == 0) return ErrorCode::DATA_CORRUPTED;
  size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size) || frame_size != frame.size()) return ErrorCode::DATA_CORRUPTED;
  unsigned long long plain_size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (plain_size == ZSTD_CONTENTSIZE_UNKNOWN || plain_size == ZSTD_CONTENTSIZE_ERROR ||
      plain_size == 0 || plain_size > kMaxPlainBytes ||
      plain_size / kMaxZstdRatio > frame.size()) {
    return ErrorCode::DATA_CORRUPTED;
  }
  ZSTD_DCtx* dctx = ThreadDCtx();
  if (dctx == nullptr) return ErrorCode::INTERNAL_ERROR;
  const auto size = static_cast<size_t>(plain_size);
  char* data = out->Resize(size);
  size_t n = ZSTD_decompressDCtx(dctx, data, size, frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size) return ErrorCode::DATA_CORRUPTED;
  return ErrorCode::OK;
}

// ---------------------------------------------------------------- encode

void PackStr(Packer& p, std::string_view s) {
  p.pack_str(static_cast<uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackBin(Packer& p, std::string_view s) {
  p.pack_bin(static_cast<uint32_t>(s.size()));
  p.pack_bin_body(s.data(), static_cast<uint32_t>(s.size()));
}

void PackUuid(Packer& p, const UUID& id) {
  char bytes[16];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<char>(id.hi >> (56 - 8 * i));
    bytes[8 + i] = static_cast<char>(id.lo >> (56 - 8 * i));
  }
  p.pack_bin(16);
  p.pack_bin_body(bytes, 16);
}

void PackArray(Packer& p, size_t n) { p.pack_array(static_cast<uint32_t>(n)); }

// An array holding each element of `v` packed with `pack`.
template <typename V, typename PackOne>
void PackList(Packer& p, const V& v, PackOne pack) {
  PackArray(p, v.size());
  for (const auto& element : v) pack(p, element);
}

void PackReplica(Packer& p, const ReplicaState& r) {
  PackArray(p, kReplicaFields);
  p.pack_uint64(r.id);
  p.pack_uint8(static_cast<uint8_t>(r.status));
  p.pack_uint8(static_cast<uint8_t>(r.type));
  PackUuid(p, r.owner);
  p.pack_uint64(r.offset);
}

// A version's fields (VersionState) in two runs: an object's lease lies
// between them.
void PackVersionHead(Packer& p, const VersionState& v) {
  PackUuid(p, v.writer);
  p.pack_uint64(v.size);
  p.pack(v.has_checksum);
  p.pack_uint64(v.checksum);
  p.pack_uint8(static_cast<uint8_t>(v.data_type));
  p.pack(v.hard_pin);
}
void PackVersionTail(Packer& p, const VersionState& v) {
  p.pack_int64(v.soft_pin_remaining_ms);
  p.pack_int64(v.put_age_ms);
  PackStr(p, v.group);
  PackList(p, v.replicas, PackReplica);
}

void PackPending(Packer& p, const PendingVersionState& v) {
  PackArray(p, kPendingFields);
  PackVersionHead(p, v);
  PackVersionTail(p, v);
}

void PackObject(Packer& p, const ObjectState& o) {
  PackArray(p, kObjectFields + (o.pending ? 1 : 0));
  PackStr(p, o.tenant);
  PackStr(p, o.key);
  PackVersionHead(p, o);
  p.pack_int64(o.lease_remaining_ms);
  PackVersionTail(p, o);
  if (o.pending) PackPending(p, *o.pending);
}

void PackGroup(Packer& p, const GroupState& g) {
  PackArray(p, kGroupFields);
  PackStr(p, g.tenant);
  PackStr(p, g.group);
  PackList(p, g.members, PackStr);
}

void PackSegment(Packer& p, const SegmentState& s) {
  PackArray(p, kSegmentStateFields);
  PackUuid(p, s.owner);
  PackArray(p, kSegmentFields);
  PackUuid(p, s.segment.id);
  PackStr(p, s.segment.name);
  p.pack_uint64(s.segment.base);
  p.pack_uint64(s.segment.size);
  PackStr(p, s.segment.endpoint);
  PackStr(p, s.segment.protocol);
  PackBin(p, s.segment.rkey);
  p.pack_uint64(s.alignment);
  PackList(p, s.free_extents, [](Packer& q, const std::pair<uint64_t, uint64_t>& extent) {
    PackArray(q, 2);
    q.pack_uint64(extent.first);
    q.pack_uint64(extent.second);
  });
}

void PackDisk(Packer& p, const DiskNodeState& d) {
  PackArray(p, kDiskFields);
  PackUuid(p, d.client);
  PackStr(p, d.endpoint);
  p.pack(d.enable_offloading);
}

void PackTask(Packer& p, const OffloadTask& t) {
  PackArray(p, kTaskFields);
  PackStr(p, t.tenant);
  PackStr(p, t.key);
  p.pack_uint64(t.size);
}

void PackOffload(Packer& p, const PendingOffloadState& o) {
  PackArray(p, kOffloadFields);
  PackUuid(p, o.client);
  PackList(p, o.tasks, PackTask);
}

template <typename Fill>
std::string_view Pack(Fill fill) {
  thread_local msgpack::sbuffer buffer;
  buffer.clear();
  Packer packer(buffer);
  fill(packer);
  return std::string_view(buffer.data(), buffer.size());
}

// Packs with `fill` into this thread's reusable buffer and compresses.
template <typename Fill>
std::string PackAndCompress(Fill fill) {
  return CompressPayload(Pack(fill));
}

// ---------------------------------------------------------------- decode

// One MessagePack item. `size`: array/map count, str/bin/ext length.
struct Token {
  enum Kind : uint8_t { kNil, kBool, kUint, kNint, kFloat, kStr, kBin, kExt, kArray, kMap };
  Kind kind;
  uint32_t size;
  union {
    uint64_t u;     // bool, uint, nint (two's complement)
    const char* p;  // str, bin, ext: into the parsed buffer
  };
};

// A msgpack-c parse visitor that appends every item to a tape. Strings and
// bins point into the parsed buffer.
class TapeVisitor : public msgpack::null_visitor {
 public:
  explicit TapeVisitor(std::vector<Token>* tape) : tape_(tape) {}

  bool visit_nil() { return Add(Token::kNil, 0, 0); }
  bool visit_boolean(bool v) { return Add(Token::kBool, 0, v ? 1 : 0); }
  bool visit_positive_integer(uint64_t v) { return Add(Token::kUint, 0, v); }
  bool visit_negative_integer(int64_t v) { return Add(Token::kNint, 0, static_cast<uint64_t>(v)); }
  bool visit_float32(float) { return Add(Token::kFloat, 0, 0); }
  bool visit_float64(double) { return Add(Token::kFloat, 0, 0); }
  bool visit_str(const char* v, uint32_t size) { return AddPtr(Token::kStr, v, size); }
  bool visit_bin(const char* v, uint32_t size) { return AddPtr(Token::kBin, v, size); }
  bool visit_ext(const char* v, uint32_t size) { return AddPtr(Token::kExt, v, size); }
  bool start_array(uint32_t n) { return Open(Token::kArray, n); }
  bool end_array() { return Close(); }
  bool start_map(uint32_t n) { return Open(Token::kMap, n); }
  bool end_map() { return Close(); }

 private:
  bool Add(Token::Kind kind, uint32_t size, uint64_t u) {
    Token& t = tape_->emplace_back();
    t.kind = kind;
    t.size = size;
    t.u = u;
    return true;
  }
  bool AddPtr(Token::Kind kind, const char* p, uint32_t size) {
    Token& t = tape_->emplace_back();
    t.kind = kind;
    t.size = size;
    t.p = p;
    return true;
  }
  bool Open(Token::Kind kind, uint32_t n) {
    if (++depth_ > kMaxDepth) return false;
    return Add(kind, n, 0);
  }
  bool Close() {
    --depth_;
    return true;
  }

  std::vector<Token>* tape_;
  uint32_t depth_ = 0;
};

// Tokens of exactly one MessagePack item spanning all of `bytes`. May throw
// (msgpack-c's size-overflow exceptions, std::bad_alloc); callers catch.
bool Tokenize(std::string_view bytes, std::vector<Token>* tape) {
  tape->clear();
  tape->reserve(bytes.size() / 4 + 1);
  TapeVisitor visitor(tape);
  size_t offset = 0;
  if (!msgpack::parse(bytes.data(), bytes.size(), offset, visitor)) return false;
  return offset == bytes.size();
}

// Reads the tape in order. Errors are sticky: after the first mismatch every
// read returns a default value and ok() is false, so decoders check once.
class Reader {
 public:
  explicit Reader(const std::vector<Token>& tape) : tape_(tape) {}

  bool ok() const { return ok_; }
  bool AtEnd() const { return pos_ == tape_.size(); }
  void Fail() { ok_ = false; }

  uint32_t Array() {
    const Token* t = Next(Token::kArray);
    return t ? t->size : 0;
  }
  void Array(uint32_t expected) {
    if (Array() != expected) Fail();
  }
  uint64_t Uint() {
    const Token* t = Next(Token::kUint);
    return t ? t->u : 0;
  }
  uint32_t Uint32() {
    uint64_t v = Uint();
    if (v > std::numeric_limits<uint32_t>::max()) Fail();
    return ok_ ? static_cast<uint32_t>(v) : 0;
  }
  int64_t Int() {
    if (ok_ && pos_ < tape_.size() && tape_[pos_].kind == Token::kNint) {
      return static_cast<int64_t>(tape_[pos_++].u);
    }
    uint64_t v = Uint();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) Fail();
    return ok_ ? static_cast<int64_t>(v) : 0;
  }
  bool Bool() {
    const Token* t = Next(Token::kBool);
    return t && t->u != 0;
  }
  template <typename E>
  E Enum(E last) {
    uint64_t v = Uint();
    if (v > static_cast<uint64_t>(last)) Fail();
    return ok_ ? static_cast<E>(v) : E{};
  }
  std::string Str() { return std::string(View(Token::kStr)); }
  // Str() into *out, reusing its capacity.
  void StrInto(std::string* out) {
    std::string_view v = View(Token::kStr);
    out->assign(v.data(), v.size());
  }
  // True when n elements of at least `min_tokens` tokens each fit in the
  // rest of the tape.
  bool Fits(uint32_t n, size_t min_tokens) const {
    return pos_ <= tape_.size() && n <= (tape_.size() - pos_) / min_tokens;
  }
  std::string Bin() { return std::string(View(Token::kBin)); }
  std::string_view BinView() { return View(Token::kBin); }
  UUID Uuid() {
    std::string_view b = View(Token::kBin);
    UUID id;
    if (b.size() != 16) {
      Fail();
      return id;
    }
    for (int i = 0; i < 8; ++i) {
      id.hi = (id.hi << 8) | static_cast<uint8_t>(b[i]);
      id.lo = (id.lo << 8) | static_cast<uint8_t>(b[8 + i]);
    }
    return id;
  }
  // Reserves room for n elements that each take at least `min_tokens`
  // tokens, never more than the rest of the tape can hold.
  template <typename V>
  void Reserve(V* v, uint32_t n, size_t min_tokens) {
    v->reserve(std::min<size_t>(n, (tape_.size() - pos_) / min_tokens));
  }

 private:
  const Token* Next(Token::Kind kind) {
    if (!ok_ || pos_ >= tape_.size() || tape_[pos_].kind != kind) {
      ok_ = false;
      return nullptr;
    }
    return &tape_[pos_++];
  }
  std::string_view View(Token::Kind kind) {
    const Token* t = Next(kind);
    return t ? std::string_view(t->p, t->size) : std::string_view();
  }

  const std::vector<Token>& tape_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Reads an array into `v`, each element with `read`; reserves for no more
// elements than the rest of the tape can hold (each takes >= `min_tokens`).
template <typename V, typename ReadOne>
void ReadList(Reader& r, V* v, size_t min_tokens, ReadOne read) {
  uint32_t n = r.Array();
  r.Reserve(v, n, min_tokens);
  for (uint32_t i = 0; i < n && r.ok(); ++i) read(r, &v->emplace_back());
}

// ReadList into a vector that may hold elements already: it is resized to
// the array's count (never beyond what the rest of the tape can hold) and
// every element is overwritten with `read`, so their buffers are reused.
template <typename V, typename ReadOne>
void ReadListReusing(Reader& r, V* v, size_t min_tokens, ReadOne read) {
  uint32_t n = r.Array();
  if (!r.ok() || !r.Fits(n, min_tokens)) {
    r.Fail();
    return;
  }
  v->resize(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) read(r, &(*v)[i]);
}

// Reads "[version, ...]" with `fields` elements in all.
ErrorCode ReadHeader(Reader& r, uint32_t fields) {
  uint32_t n = r.Array();
  uint64_t version = n >= 1 ? r.Uint() : 0;
  if (!r.ok() || n < 1) return ErrorCode::DATA_CORRUPTED;
  if (version != kSnapshotVersion) return ErrorCode::VERSION_MISMATCH;
  return n == fields ? ErrorCode::OK : ErrorCode::DATA_CORRUPTED;
}

void ReadReplica(Reader& r, ReplicaState* s) {
  r.Array(kReplicaFields);
  s->id = r.Uint();
  s->status = r.Enum(ReplicaStatus::FAILED);
  s->type = r.Enum(ReplicaType::LOCAL_DISK);
  s->owner = r.Uuid();
  s->offset = r.Uint();
}

// The two runs of PackVersionHead and PackVersionTail.
void ReadVersionHead(Reader& r, VersionState* v) {
  v->writer = r.Uuid();
  v->size = r.Uint();
  v->has_checksum = r.Bool();
  v->checksum = r.Uint();
  v->data_type = r.Enum(DataType::WEIGHT);
  v->hard_pin = r.Bool();
}
void ReadVersionTail(Reader& r, VersionState* v) {
  v->soft_pin_remaining_ms = r.Int();
  v->put_age_ms = r.Int();
  r.StrInto(&v->group);
  ReadListReusing(r, &v->replicas, kReplicaFields + 1, ReadReplica);
}

void ReadPending(Reader& r, PendingVersionState* v) {
  r.Array(kPendingFields);
  ReadVersionHead(r, v);
  ReadVersionTail(r, v);
}

// Overwrites every field of *o (its strings and vectors keep their capacity).
void ReadObject(Reader& r, ObjectState* o) {
  const uint32_t fields = r.Array();
  if (fields != kObjectFields && fields != kObjectFields + 1) r.Fail();
  r.StrInto(&o->tenant);
  r.StrInto(&o->key);
  ReadVersionHead(r, o);
  o->lease_remaining_ms = r.Int();
  ReadVersionTail(r, o);
  if (fields == kObjectFields + 1) {
    ReadPending(r, &o->pending.emplace());
  } else {
    o->pending.reset();
  }
}

void ReadGroup(Reader& r, GroupState* g) {
  r.Array(kGroupFields);
  r.StrInto(&g->tenant);
  r.StrInto(&g->group);
  ReadListReusing(r, &g->members, 1, [](Reader& q, std::string* m) { q.StrInto(m); });
}

// Overwrites every field of *s, reusing what it holds.
void ReadShardBody(Reader& r, ShardState* s) {
  s->index = r.Uint32();
  if (s->index >= kShardCount) r.Fail();
  ReadListReusing(r, &s->objects, kObjectFields + 1, ReadObject);
  ReadListReusing(r, &s->groups, kGroupFields + 1, ReadGroup);
}

void ReadSegment(Reader& r, SegmentState* s) {
  r.Array(kSegmentStateFields);
  s->owner = r.Uuid();
  r.Array(kSegmentFields);
  s->segment.id = r.Uuid();
  s->segment.name = r.Str();
  s->segment.base = r.Uint();
  s->segment.size = r.Uint();
  s->segment.endpoint = r.Str();
  s->segment.protocol = r.Str();
  s->segment.rkey = r.Bin();
  s->alignment = r.Uint();
  ReadList(r, &s->free_extents, 3, [](Reader& q, std::pair<uint64_t, uint64_t>* extent) {
    q.Array(2);
    extent->first = q.Uint();
    extent->second = q.Uint();
  });
}

void ReadDisk(Reader& r, DiskNodeState* d) {
  r.Array(kDiskFields);
  d->client = r.Uuid();
  d->endpoint = r.Str();
  d->enable_offloading = r.Bool();
}

void ReadSegmentsBody(Reader& r, SegmentsState* s) {
  s->view_version = r.Uint();
  s->next_replica_id = r.Uint();
  ReadList(r, &s->segments, kSegmentStateFields + kSegmentFields + 2, ReadSegment);
  ReadList(r, &s->disks, kDiskFields + 1, ReadDisk);
}

void ReadTask(Reader& r, OffloadTask* t) {
  r.Array(kTaskFields);
  t->tenant = r.Str();
  t->key = r.Str();
  t->size = r.Uint();
}

void ReadOffload(Reader& r, PendingOffloadState* o) {
  r.Array(kOffloadFields);
  o->client = r.Uuid();
  ReadList(r, &o->tasks, kTaskFields + 1, ReadTask);
}

void ReadTasksBody(Reader& r, TasksState* t) {
  ReadList(r, &t->offloads, kOffloadFields + 2, ReadOffload);
}

// Tokenizes `plain`, checks the header and reads the body with `read`.
// Exceptions from msgpack-c or allocation end here as DATA_CORRUPTED.
// This thread's tape, reused across decodes; a tape grown past kKeptTokens
// (16 MiB) is released after use.
class ThreadTape {
 public:
  ThreadTape() : tape_(Get()) {}
  ~ThreadTape() {
    if (tape_.capacity() > kKeptTokens) std::vector<Token>().swap(tape_);
  }
  std::vector<Token>& get() { return tape_; }

 private:
  static constexpr size_t kKeptTokens = kKeptBufferBytes / sizeof(Token);
  static std::vector<Token>& Get() {
    thread_local std::vector<Token> tape;
    return tape;
  }
  std::vector<Token>& tape_;
};

// Like DecodePlain, into *value (which `read` overwrites).
template <typename T, typename ReadBody>
ErrorCode DecodePlainInto(std::string_view plain, uint32_t fields, ReadBody read, T* value) {
  try {
    ThreadTape thread_tape;
    std::vector<Token>& tape = thread_tape.get();
    if (!Tokenize(plain, &tape)) return ErrorCode::DATA_CORRUPTED;
    Reader r(tape);
    ErrorCode header = ReadHeader(r, fields);
    if (header != ErrorCode::OK) return header;
    read(r, value);
    if (!r.ok() || !r.AtEnd()) return ErrorCode::DATA_CORRUPTED;
    return ErrorCode::OK;
  } catch (const std::exception&) {
    return ErrorCode::DATA_CORRUPTED;
  }
}

template <typename T, typename ReadBody>
Result<T> DecodePlain(std::string_view plain, uint32_t fields, ReadBody read) {
  T value;
  ErrorCode rc = DecodePlainInto(plain, fields, read, &value);
  if (rc != ErrorCode::OK) return rc;
  return value;
}

// Decompresses into this thread's buffer, then decodes into *value.
template <typename T, typename ReadBody>
ErrorCode DecodeCompressedInto(std::string_view bytes, uint32_t fields, ReadBody read, T* value) {
  PlainBuffer plain;
  ErrorCode rc = [&] {
    try {
      return Decompress(bytes, &plain);
    } catch (const std::bad_alloc&) {
      return ErrorCode::DATA_CORRUPTED;
    }
  }();
  if (rc != ErrorCode::OK) return rc;
  return DecodePlainInto(plain.view(), fields, read, value);
}

template <typename T, typename ReadBody>
Result<T> DecodeCompressed(std::string_view bytes, uint32_t fields, ReadBody read) {
  T value;
  ErrorCode rc = DecodeCompressedInto(bytes, fields, read, &value);
  if (rc != ErrorCode::OK) return rc;
  return value;
}

// ---------------------------------------------------------------- text files

// "key=value\n" lines; a malformed line or a repeated key is DATA_CORRUPTED.
Result<std::vector<std::pair<std::string_view, std::string_view>>> ParseLines(
    std::string_view text) {
  std::vector<std::pair<std::string_view, std::string_view>> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return ErrorCode::DATA_CORRUPTED;
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    size_t eq = line.find('=');
    if (eq == 0 || eq == std::string_view::npos) return ErrorCode::DATA_CORRUPTED;
    std::string_view key = line.substr(0, eq);
    for (const auto& [k, v] : lines) {
      if (k == key) return ErrorCode::DATA_CORRUPTED;
    }
    lines.emplace_back(key, line.substr(eq + 1));
  }
  return lines;
}

const std::string_view* Find(const std::vector<std::pair<std::string_view, std::string_view>>& lines,
                             std::string_view key) {
  for (const auto& [k, v] : lines) {
    if (k == key) return &v;
  }
  return nullptr;
}

// Plain decimal as EncodeManifest/EncodeDescriptor write it: optional '-'
// for signed types, no leading zeros, nothing else.
template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  std::string_view digits = s.substr(!s.empty() && s[0] == '-' ? 1 : 0);
  if (digits.empty() || (digits[0] == '0' && s.size() > 1)) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Every key of `keys` present and no other.
template <size_t N>
bool ExactKeys(const std::vector<std::pair<std::string_view, std::string_view>>& lines,
               const std::string_view (&keys)[N]) {
  if (lines.size() != N) return false;
  for (std::string_view k : keys) {
    if (Find(lines, k) == nullptr) return false;
  }
  return true;
}

std::string Line(std::string_view key, std::string_view value) {
  std::string s;
  s.reserve(key.size() + value.size() + 2);
  s.append(key).append("=").append(value).append("\n");
  return s;
}

}  // namespace

// ---------------------------------------------------------------- public

std::string CompressPayload(std::string_view plain) {
  // Compressed into this thread's scratch buffer (compressBound bytes), then
  // copied out at its exact size: a string sized to the bound would keep
  // that capacity (about the plain size) for as long as the caller keeps it.
  thread_local std::unique_ptr<char[]> scratch;
  thread_local size_t scratch_size = 0;
  const size_t bound = ZSTD_compressBound(plain.size());
  if (bound > scratch_size) {
    scratch.reset();
    scratch.reset(new char[bound]);
    scratch_size = bound;
  }
  size_t n = ZSTD_compress2(ThreadCCtx(), scratch.get(), bound, plain.data(), plain.size());
  if (ZSTD_isError(n)) std::abort();  // cannot happen with a compressBound buffer
  std::string out(scratch.get(), n);
  if (scratch_size > kKeptBufferBytes) {
    scratch.reset();
    scratch_size = 0;
  }
  return out;
}

void AppendStored(std::string_view plain, std::string* out) {
  // RFC 8878: magic; a header with an 8-byte content size, the single
  // segment flag (no window descriptor) and the checksum flag; raw blocks of
  // at most 128 KiB, the last one flagged; the XXH64's low 4 bytes.
  constexpr size_t kBlockBytes = size_t{128} << 10;
  auto put_le = [](std::string* out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
  };
  out->reserve(out->size() + 4 + 1 + 8 + 3 * (plain.size() / kBlockBytes + 1) + plain.size() + 4);
  put_le(out, kZstdMagic, 4);
  out->push_back(static_cast<char>(0xE0 | kZstdChecksumFlag));
  put_le(out, plain.size(), 8);
  size_t at = 0;
  do {
    const size_t n = std::min(kBlockBytes, plain.size() - at);
    const bool last = at + n == plain.size();
    put_le(out, (uint64_t{n} << 3) | (last ? 1 : 0), 3);  // Block_Type 0: Raw_Block
    out->append(plain.data() + at, n);
    at += n;
  } while (at < plain.size());
  put_le(out, XXH64(plain.data(), plain.size(), 0), 4);
}

namespace {

void PackShard(Packer& p, const ShardState& shard) {
  PackArray(p, kShardFields);
  p.pack_uint32(kSnapshotVersion);
  p.pack_uint32(shard.index);
  PackList(p, shard.objects, PackObject);
  PackList(p, shard.groups, PackGroup);
}

}  // namespace

std::string EncodeShard(const ShardState& shard) {
  return PackAndCompress([&](Packer& p) { PackShard(p, shard); });
}

void AppendShardStored(const ShardState& shard, std::string* out) {
  AppendStored(Pack([&](Packer& p) { PackShard(p, shard); }), out);
}

std::string EncodeShardStored(const ShardState& shard) {
  std::string out;
  AppendShardStored(shard, &out);
  return out;
}

Result<ShardState> DecodeShard(std::string_view bytes) {
  return DecodeCompressed<ShardState>(bytes, kShardFields, ReadShardBody);
}

ErrorCode DecodeShardInto(std::string_view bytes, ShardState* shard) {
  return DecodeCompressedInto(bytes, kShardFields, ReadShardBody, shard);
}

std::string EncodeMetadata(const std::vector<std::pair<uint32_t, std::string>>& shards) {
  // Packed straight into a string of the exact final size (the shards can be
  // hundreds of MB: no growing buffer, no second copy).
  struct StringBuffer {
    std::string* out;
    void write(const char* p, size_t n) { out->append(p, n); }
  };
  constexpr size_t kMaxPairHeader = 1 + 5 + 5;  // array(2), uint32, bin32 header
  size_t total = 1 + 5 + 5;                     // array, version, array32
  for (const auto& [index, bin] : shards) total += kMaxPairHeader + bin.size();
  std::string out;
  out.reserve(total);
  StringBuffer buffer{&out};
  msgpack::packer<StringBuffer> p(buffer);
  p.pack_array(kMetadataFields);
  p.pack_uint32(kSnapshotVersion);
  p.pack_array(static_cast<uint32_t>(shards.size()));
  for (const auto& [index, bin] : shards) {
    p.pack_array(2);
    p.pack_uint32(index);
    p.pack_bin(static_cast<uint32_t>(bin.size()));
    p.pack_bin_body(bin.data(), static_cast<uint32_t>(bin.size()));
  }
  return out;
}

Result<std::vector<std::pair<uint32_t, std::string_view>>> SplitMetadata(std::string_view bytes) {
  using Shards = std::vector<std::pair<uint32_t, std::string_view>>;
  return DecodePlain<Shards>(bytes, kMetadataFields, [](Reader& r, Shards* shards) {
    uint32_t n = r.Array();
    if (n > kShardCount) r.Fail();
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      r.Array(2);
      uint32_t index = r.Uint32();
      std::string_view bin = r.BinView();
      if (index >= kShardCount || (!shards->empty() && index <= shards->back().first)) r.Fail();
      shards->emplace_back(index, bin);
    }
  });
}

std::string EncodeSegments(const SegmentsState& segments) {
  return PackAndCompress([&](Packer& p) {
    PackArray(p, kSegmentsFields);
    p.pack_uint32(kSnapshotVersion);
    p.pack_uint64(segments.view_version);
    p.pack_uint64(segments.next_replica_id);
    PackList(p, segments.segments, PackSegment);
    PackList(p, segments.disks, PackDisk);
  });
}

Result<SegmentsState> DecodeSegments(std::string_view bytes) {
  return DecodeCompressed<SegmentsState>(bytes, kSegmentsFields, ReadSegmentsBody);
}

std::string EncodeTasks(const TasksState& tasks) {
  return PackAndCompress([&](Packer& p) {
    PackArray(p, kTasksFields);
    p.pack_uint32(kSnapshotVersion);
    PackList(p, tasks.offloads, PackOffload);
  });
}

Result<TasksState> DecodeTasks(std::string_view bytes) {
  return DecodeCompressed<TasksState>(bytes, kTasksFields, ReadTasksBody);
}

// ---------------------------------------------------------------- text

namespace {
constexpr std::string_view kManifestKeys[] = {"format",         "version",
                                              "snapshot_id",    "metadata_bytes",
                                              "segments_bytes", "task_manager_bytes"};
constexpr std::string_view kDescriptorKeys[] = {"sequence_boundary", "view_version",
                                                "created_unix_ms"};
}  // namespace

std::string EncodeManifest(const Manifest& m) {
  return Line("format", m.format) + Line("version", std::to_string(m.version)) +
         Line("snapshot_id", m.snapshot_id) +
         Line("metadata_bytes", std::to_string(m.metadata_bytes)) +
         Line("segments_bytes", std::to_string(m.segments_bytes)) +
         Line("task_manager_bytes", std::to_string(m.task_manager_bytes));
}

Result<Manifest> DecodeManifest(std::string_view text) {
  auto lines = ParseLines(text);
  if (!lines.ok()) return lines.error();
  Manifest m;
  const std::string_view* format = Find(*lines, "format");
  const std::string_view* version = Find(*lines, "version");
  if (format == nullptr || version == nullptr) return ErrorCode::DATA_CORRUPTED;
  if (*format != kSnapshotFormat) return ErrorCode::VERSION_MISMATCH;
  if (!ParseNumber(*version, &m.version)) return ErrorCode::DATA_CORRUPTED;
  if (m.version != kSnapshotVersion) return ErrorCode::VERSION_MISMATCH;
  if (!ExactKeys(*lines, kManifestKeys)) return ErrorCode::DATA_CORRUPTED;
  m.snapshot_id = std::string(*Find(*lines, "snapshot_id"));
  if (!ValidSnapshotId(m.snapshot_id) ||
      !ParseNumber(*Find(*lines, "metadata_bytes"), &m.metadata_bytes) ||
      !ParseNumber(*Find(*lines, "segments_bytes"), &m.segments_bytes) ||
      !ParseNumber(*Find(*lines, "task_manager_bytes"), &m.task_manager_bytes)) {
    return ErrorCode::DATA_CORRUPTED;
  }
  return m;
}

std::string EncodeDescriptor(const SnapshotDescriptor& d) {
  return Line("sequence_boundary", std::to_string(d.sequence_boundary)) +
         Line("view_version", std::to_string(d.view_version)) +
         Line("created_unix_ms", std::to_string(d.created_unix_ms));
}

Result<SnapshotDescriptor> DecodeDescriptor(std::string_view text) {
  auto lines = ParseLines(text);
  if (!lines.ok()) return lines.error();
  SnapshotDescriptor d;
  if (!ExactKeys(*lines, kDescriptorKeys) ||
      !ParseNumber(*Find(*lines, "sequence_boundary"), &d.sequence_boundary) ||
      !ParseNumber(*Find(*lines, "view_version"), &d.view_version) ||
      !ParseNumber(*Find(*lines, "created_unix_ms"), &d.created_unix_ms)) {
    return ErrorCode::DATA_CORRUPTED;
  }
  return d;
}

std::string SnapshotIdAt(int64_t unix_ms) {
  constexpr int64_t kLastMs = 253402300799999;  // 9999-12-31 23:59:59.999 UTC
  unix_ms = std::clamp<int64_t>(unix_ms, 0, kLastMs);
  time_t seconds = static_cast<time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[80];  // room for any int fields, to keep -Wformat-truncation quiet
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d_%02d%02d%02d_%03d", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

bool ValidSnapshotId(std::string_view id) {
  constexpr std::string_view kShape = "dddddddd_dddddd_ddd";
  if (id.size() != kShape.size()) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    bool digit = id[i] >= '0' && id[i] <= '9';
    if (kShape[i] == 'd' ? !digit : id[i] != '_') return false;
  }
  auto num = [&](size_t pos, size_t len) {
    int v = 0;
    for (size_t i = pos; i < pos + len; ++i) v = v * 10 + (id[i] - '0');
    return v;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(9, 2);
  tm.tm_min = num(11, 2);
  tm.tm_sec = num(13, 2);
  // A real date and time: formatting it back gives the same id (timegm
  // normalises out-of-range fields, such as February 30, into another date).
  int64_t seconds = static_cast<int64_t>(timegm(&tm));
  return SnapshotIdAt(seconds * 1000 + num(16, 3)) == id;
}

}  // namespace shelfmark
