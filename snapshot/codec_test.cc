#include "snapshot/codec.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <msgpack.hpp>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shelfmark {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// ---------------------------------------------------------------- dumps
// Every field as text, so EXPECT_EQ(Dump(a), Dump(b)) compares whole values.

std::string Dump(const UUID& id) { return id.ToString(); }

std::string Dump(const ShardState& s) {
  std::ostringstream o;
  o << "shard " << s.index << "\n";
  for (const ObjectState& x : s.objects) {
    o << "object [" << x.tenant << "] [" << x.key << "] " << Dump(x.writer) << " " << x.size << " "
      << x.has_checksum << " " << x.checksum << " " << int(x.data_type) << " " << x.hard_pin << " "
      << x.lease_remaining_ms << " " << x.soft_pin_remaining_ms << " " << x.put_age_ms << " ["
      << x.group << "]\n";
    for (const ReplicaState& r : x.replicas) {
      o << "  replica " << r.id << " " << int(r.status) << " " << int(r.type) << " "
        << Dump(r.owner) << " " << r.offset << "\n";
    }
    if (x.pending) {
      const PendingVersionState& v = *x.pending;
      o << "  pending " << Dump(v.writer) << " " << v.size << " " << v.has_checksum << " "
        << v.checksum << " " << int(v.data_type) << " " << v.hard_pin << " "
        << v.soft_pin_remaining_ms << " " << v.put_age_ms << " [" << v.group << "]\n";
      for (const ReplicaState& r : v.replicas) {
        o << "    replica " << r.id << " " << int(r.status) << " " << int(r.type) << " "
          << Dump(r.owner) << " " << r.offset << "\n";
      }
    }
  }
  for (const GroupState& g : s.groups) {
    o << "group [" << g.tenant << "] [" << g.group << "]";
    for (const std::string& m : g.members) o << " [" << m << "]";
    o << "\n";
  }
  return o.str();
}

std::string Dump(const SegmentsState& s) {
  std::ostringstream o;
  o << "segments " << s.view_version << " " << s.next_replica_id << "\n";
  for (const SegmentState& x : s.segments) {
    const Segment& g = x.segment;
    o << "segment " << Dump(x.owner) << " " << Dump(g.id) << " [" << g.name << "] " << g.base
      << " " << g.size << " [" << g.endpoint << "] [" << g.protocol << "] [" << g.rkey << "] "
      << x.alignment;
    for (const auto& [offset, length] : x.free_extents) o << " " << offset << "+" << length;
    o << "\n";
  }
  for (const DiskNodeState& d : s.disks) {
    o << "disk " << Dump(d.client) << " [" << d.endpoint << "] " << d.enable_offloading << "\n";
  }
  return o.str();
}

std::string Dump(const TasksState& t) {
  std::ostringstream o;
  for (const PendingOffloadState& p : t.offloads) {
    o << "client " << Dump(p.client) << "\n";
    for (const OffloadTask& x : p.tasks) o << "  [" << x.tenant << "] [" << x.key << "] " << x.size << "\n";
  }
  return o.str();
}

// ---------------------------------------------------------------- samples

ObjectState SampleObject(int i) {
  ObjectState o;
  o.tenant = "tenant-" + std::to_string(i % 3);
  o.key = "req/" + std::to_string(i) + "/layer";
  o.writer = UUID{0x1111000000000000ULL + static_cast<uint64_t>(i), 0x2222};
  o.size = 4096 + static_cast<uint64_t>(i);
  o.has_checksum = i % 2 == 0;
  o.checksum = o.has_checksum ? 0xabcdef00ULL + static_cast<uint64_t>(i) : 0;
  o.data_type = static_cast<DataType>(i % 4);
  o.hard_pin = i % 5 == 0;
  o.lease_remaining_ms = i % 7;
  o.soft_pin_remaining_ms = i % 11 == 0 ? 60000 : 0;
  o.put_age_ms = 100 + i;
  o.group = i % 4 == 0 ? "g" + std::to_string(i / 4) : "";
  for (int r = 0; r < 1 + i % 3; ++r) {
    o.replicas.push_back(ReplicaState{static_cast<uint64_t>(i) * 8 + static_cast<uint64_t>(r),
                                      static_cast<ReplicaStatus>((i + r) % 5),
                                      static_cast<ReplicaType>(r % 2),
                                      UUID{static_cast<uint64_t>(r), 0x5555},
                                      static_cast<uint64_t>(i) * 4096});
  }
  return o;
}

ShardState SampleShard(uint32_t index, int objects) {
  ShardState s;
  s.index = index;
  for (int i = 0; i < objects; ++i) s.objects.push_back(SampleObject(i));
  s.groups.push_back(GroupState{"tenant-0", "g0", {"req/0/layer", "req/12/layer"}});
  return s;
}

// Edge values in every field: empty strings, extremes, bytes 0x00 and 0xff.
ShardState EdgeShard() {
  ShardState s;
  s.index = 1023;
  s.objects.emplace_back();  // all defaults, empty strings, no replicas
  ObjectState& m = s.objects.emplace_back();
  m.tenant = std::string(256, 't');
  m.key = std::string("k\0\xff\n=", 5) + std::string(4091, 'k');
  m.writer = UUID{kU64Max, kU64Max};
  m.size = kU64Max;
  m.has_checksum = true;
  m.checksum = kU64Max;
  m.data_type = DataType::WEIGHT;
  m.hard_pin = true;
  m.lease_remaining_ms = kI64Max;
  m.soft_pin_remaining_ms = kI64Min;
  m.put_age_ms = -1;
  m.group = "group \xc3\xa9";
  m.replicas.push_back({kU64Max, ReplicaStatus::FAILED, ReplicaType::LOCAL_DISK, UUID{1, 2}, kU64Max});
  m.replicas.push_back({0, ReplicaStatus::INITIALIZED, ReplicaType::MEMORY, UUID{}, 0});
  m.replicas.push_back({7, ReplicaStatus::REMOVED, ReplicaType::MEMORY, UUID{3, 4}, 64});
  s.groups.push_back(GroupState{"", "", {}});
  s.groups.push_back(GroupState{"t", "g", {"", "a", std::string(1, '\0')}});
  return s;
}

SegmentsState SampleSegments() {
  SegmentsState s;
  s.view_version = kU64Max;
  s.next_replica_id = 123456789;
  SegmentState& a = s.segments.emplace_back();
  a.owner = UUID{10, 20};
  a.segment = Segment{UUID{30, 40}, "node-a/seg0", 0x7f0000000000ULL, 1ULL << 34,
                      "10.0.0.1:7000", "rdma", std::string("\x00\x01\xff rkey", 8)};
  a.alignment = 4096;
  a.free_extents = {{0, 4096}, {8192, 1ULL << 33}, {kU64Max - 1, 1}};
  SegmentState& b = s.segments.emplace_back();  // defaults and empty strings
  b.alignment = 1;
  s.disks.push_back(DiskNodeState{UUID{50, 60}, "10.0.0.2:7001", true});
  s.disks.push_back(DiskNodeState{UUID{}, "", false});
  return s;
}

TasksState SampleTasks() {
  TasksState t;
  t.offloads.push_back(PendingOffloadState{UUID{1, 1}, {{"default", "a", 1}, {"t", "", kU64Max}}});
  t.offloads.push_back(PendingOffloadState{UUID{2, 2}, {}});
  return t;
}

// ---------------------------------------------------------------- helpers

// Hand-written MessagePack, to build payloads Encode* would never write.
struct Msg {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> p{buffer};
  Msg& Array(uint32_t n) { return p.pack_array(n), *this; }
  Msg& U(uint64_t v) { return p.pack_uint64(v), *this; }
  Msg& I(int64_t v) { return p.pack_int64(v), *this; }
  Msg& B(bool v) { return p.pack(v), *this; }
  Msg& S(std::string_view s) {
    p.pack_str(static_cast<uint32_t>(s.size()));
    p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
    return *this;
  }
  Msg& Bin(std::string_view s) {
    p.pack_bin(static_cast<uint32_t>(s.size()));
    p.pack_bin_body(s.data(), static_cast<uint32_t>(s.size()));
    return *this;
  }
  Msg& Id(uint8_t fill) { return Bin(std::string(16, static_cast<char>(fill))); }
  Msg& Raw(std::string_view bytes) { return buffer.write(bytes.data(), bytes.size()), *this; }
  std::string Plain() const { return std::string(buffer.data(), buffer.size()); }
  std::string Zstd() const { return CompressPayload(Plain()); }
};

std::string Decompress(std::string_view frame) {
  std::string out(ZSTD_getFrameContentSize(frame.data(), frame.size()), '\0');
  EXPECT_EQ(ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size()), out.size());
  return out;
}

// A zstd frame with the given frame parameters (checksum / content size).
std::string Frame(std::string_view plain, bool checksum, bool content_size) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::string out(ZSTD_compressBound(plain.size()) + 64, '\0');
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  ZSTD_inBuffer i{plain.data(), plain.size(), 0};
  EXPECT_EQ(ZSTD_compressStream2(c, &o, &i, ZSTD_e_end), 0u);
  ZSTD_freeCCtx(c);
  out.resize(o.pos);
  return out;
}

ErrorCode ShardError(std::string_view bytes) { return DecodeShard(bytes).error(); }

// One-object shard payload in the documented layout; `edit` may replace any
// field by index (0..11 object fields, 13..17 replica fields) by returning
// true; `extra_fields` -1 drops the group field, +1 appends a field.
std::string OneObjectShard(const std::function<bool(Msg&, int)>& edit = nullptr,
                           int extra_fields = 0) {
  Msg m;
  m.Array(4).U(kSnapshotVersion).U(9).Array(1);
  m.Array(static_cast<uint32_t>(13 + extra_fields));
  auto field = [&](int i, const std::function<void()>& write) {
    if (!edit || !edit(m, i)) write();
  };
  field(0, [&] { m.S("tenant"); });
  field(1, [&] { m.S("key"); });
  field(2, [&] { m.Id(0xab); });
  field(3, [&] { m.U(100); });
  field(4, [&] { m.B(true); });
  field(5, [&] { m.U(77); });
  field(6, [&] { m.U(2); });
  field(7, [&] { m.B(false); });
  field(8, [&] { m.I(-5); });
  field(9, [&] { m.I(6); });
  field(10, [&] { m.I(7); });
  if (extra_fields >= 0) field(11, [&] { m.S("grp"); });
  m.Array(1).Array(5);
  field(13, [&] { m.U(42); });
  field(14, [&] { m.U(4); });
  field(15, [&] { m.U(1); });
  field(16, [&] { m.Id(0xcd); });
  field(17, [&] { m.U(8192); });
  if (extra_fields > 0) m.U(0);
  m.Array(0);  // groups
  return m.Plain();
}

// ---------------------------------------------------------------- round trips

TEST(ShardCodec, RoundTripsEveryField) {
  for (const ShardState& s : {EdgeShard(), SampleShard(0, 50), ShardState{}}) {
    std::string bytes = EncodeShard(s);
    auto decoded = DecodeShard(bytes);
    ASSERT_TRUE(decoded.ok()) << ErrorCodeName(decoded.error());
    EXPECT_EQ(Dump(*decoded), Dump(s));
    EXPECT_EQ(EncodeShard(*decoded), bytes);
  }
}

TEST(ShardCodec, ReadsTheDocumentedLayout) {
  auto s = DecodeShard(CompressPayload(OneObjectShard()));
  ASSERT_TRUE(s.ok()) << ErrorCodeName(s.error());
  EXPECT_EQ(s->index, 9u);
  ASSERT_EQ(s->objects.size(), 1u);
  const ObjectState& o = s->objects[0];
  EXPECT_EQ(o.tenant, "tenant");
  EXPECT_EQ(o.key, "key");
  EXPECT_EQ(o.writer, (UUID{0xababababababababULL, 0xababababababababULL}));
  EXPECT_EQ(o.size, 100u);
  EXPECT_TRUE(o.has_checksum);
  EXPECT_EQ(o.checksum, 77u);
  EXPECT_EQ(o.data_type, DataType::TENSOR);
  EXPECT_FALSE(o.hard_pin);
  EXPECT_EQ(o.lease_remaining_ms, -5);
  EXPECT_EQ(o.soft_pin_remaining_ms, 6);
  EXPECT_EQ(o.put_age_ms, 7);
  EXPECT_EQ(o.group, "grp");
  EXPECT_FALSE(o.pending) << "13 fields: no upsert in flight";
  ASSERT_EQ(o.replicas.size(), 1u);
  EXPECT_EQ(o.replicas[0].id, 42u);
  EXPECT_EQ(o.replicas[0].status, ReplicaStatus::FAILED);
  EXPECT_EQ(o.replicas[0].type, ReplicaType::LOCAL_DISK);
  EXPECT_EQ(o.replicas[0].owner.hi, 0xcdcdcdcdcdcdcdcdULL);
  EXPECT_EQ(o.replicas[0].offset, 8192u);
  EXPECT_TRUE(s->groups.empty());
}

// ObjectState::pending (an upsert in flight) is a 14th field, written only
// when set: objects without it encode as before, and an object from before
// the field decodes without one (ReadsTheDocumentedLayout).
TEST(ShardCodec, APendingVersionRoundTripsAsAnOptionalField) {
  ShardState s = SampleShard(0, 3);
  const std::string before = EncodeShard(s);
  PendingVersionState v;
  v.writer = UUID{5, 6};
  v.size = 4096;
  v.has_checksum = true;
  v.checksum = 99;
  v.data_type = DataType::TENSOR;
  v.hard_pin = true;
  v.soft_pin_remaining_ms = 1234;
  v.put_age_ms = 567;
  v.group = "g";
  v.replicas.push_back({77, ReplicaStatus::PROCESSING, ReplicaType::MEMORY, UUID{7, 8}, 8192});
  s.objects[1].pending = v;
  s.objects[2].pending = PendingVersionState{};  // no replica: a placeholder
  auto decoded = DecodeShard(EncodeShard(s));
  ASSERT_TRUE(decoded.ok()) << ErrorCodeName(decoded.error());
  EXPECT_EQ(Dump(*decoded), Dump(s));
  EXPECT_FALSE(decoded->objects[0].pending);
  ASSERT_TRUE(decoded->objects[1].pending);
  EXPECT_EQ(decoded->objects[1].pending->replicas.at(0).offset, 8192u);
  EXPECT_TRUE(decoded->objects[2].pending);
  s.objects[1].pending.reset();
  s.objects[2].pending.reset();
  EXPECT_EQ(EncodeShard(s), before) << "unset: the 13-field layout";
  // A 14th field that is not a pending version is corrupt.
  EXPECT_EQ(ShardError(CompressPayload(OneObjectShard(nullptr, +1))), ErrorCode::DATA_CORRUPTED);
}

TEST(ShardCodec, FramesAreSingleZstdFramesWithChecksumAndSize) {
  std::string bytes = EncodeShard(SampleShard(3, 10));
  EXPECT_EQ(ZSTD_findFrameCompressedSize(bytes.data(), bytes.size()), bytes.size());
  EXPECT_NE(ZSTD_getFrameContentSize(bytes.data(), bytes.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  EXPECT_NE(static_cast<uint8_t>(bytes[4]) & 0x04, 0) << "content checksum flag";
}

TEST(ShardCodec, LargeShardRoundTrips) {
  ShardState s = SampleShard(512, 20000);
  auto decoded = DecodeShard(EncodeShard(s));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(Dump(*decoded), Dump(s));
}

TEST(ShardCodec, AStoredShardDecodesLikeACompressedOne) {
  // One block, and many (a raw block holds at most 128 KiB).
  for (const ShardState& s : {SampleShard(3, 10), SampleShard(512, 20000)}) {
    const std::string stored = EncodeShardStored(s);
    EXPECT_EQ(ZSTD_findFrameCompressedSize(stored.data(), stored.size()), stored.size());
    EXPECT_NE(static_cast<uint8_t>(stored[4]) & 0x04, 0) << "content checksum flag";
    auto decoded = DecodeShard(stored);
    ASSERT_TRUE(decoded.ok()) << ErrorCodeName(decoded.error());
    EXPECT_EQ(Dump(*decoded), Dump(s));
    EXPECT_GT(stored.size(), EncodeShard(s).size()) << "not compressed";
  }
}

TEST(ShardCodec, AStoredFrameWithAFlippedByteIsCorrupt) {
  const std::string stored = EncodeShardStored(SampleShard(3, 10));
  for (size_t at : {size_t{5}, size_t{20}, stored.size() / 2, stored.size() - 1}) {
    std::string bad = stored;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    EXPECT_EQ(ShardError(bad), ErrorCode::DATA_CORRUPTED) << "byte " << at;
  }
}

TEST(SegmentsCodec, RoundTripsEveryField) {
  for (const SegmentsState& s : {SampleSegments(), SegmentsState{}}) {
    std::string bytes = EncodeSegments(s);
    auto decoded = DecodeSegments(bytes);
    ASSERT_TRUE(decoded.ok()) << ErrorCodeName(decoded.error());
    EXPECT_EQ(Dump(*decoded), Dump(s));
    EXPECT_EQ(EncodeSegments(*decoded), bytes);
  }
}

TEST(TasksCodec, RoundTripsEveryField) {
  for (const TasksState& t : {SampleTasks(), TasksState{}}) {
    std::string bytes = EncodeTasks(t);
    auto decoded = DecodeTasks(bytes);
    ASSERT_TRUE(decoded.ok()) << ErrorCodeName(decoded.error());
    EXPECT_EQ(Dump(*decoded), Dump(t));
  }
}

TEST(MetadataCodec, SplitsIntoTheEncodedShards) {
  std::vector<std::pair<uint32_t, std::string>> shards;
  for (uint32_t index : {0u, 7u, 1023u}) shards.emplace_back(index, EncodeShard(SampleShard(index, 5)));
  std::string metadata = EncodeMetadata(shards);
  auto split = SplitMetadata(metadata);
  ASSERT_TRUE(split.ok()) << ErrorCodeName(split.error());
  ASSERT_EQ(split->size(), 3u);
  for (size_t i = 0; i < shards.size(); ++i) {
    EXPECT_EQ((*split)[i].first, shards[i].first);
    EXPECT_EQ((*split)[i].second, shards[i].second);
    EXPECT_GE((*split)[i].second.data(), metadata.data()) << "a view into the payload";
    auto shard = DecodeShard((*split)[i].second);
    ASSERT_TRUE(shard.ok());
    EXPECT_EQ(shard->index, shards[i].first);
  }
  auto empty = SplitMetadata(EncodeMetadata({}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(MetadataCodec, RejectsIndexesOutOfOrderOrRange) {
  std::string bin = EncodeShard(SampleShard(5, 1));
  for (auto indexes : std::vector<std::vector<uint32_t>>{{5, 5}, {7, 3}, {1024}, {0, 4096}}) {
    std::vector<std::pair<uint32_t, std::string>> shards;
    for (uint32_t i : indexes) shards.emplace_back(i, bin);
    EXPECT_EQ(SplitMetadata(EncodeMetadata(shards)).error(), ErrorCode::DATA_CORRUPTED);
  }
  Msg too_many;
  too_many.Array(2).U(kSnapshotVersion).Array(1025);
  for (uint32_t i = 0; i < 1025; ++i) too_many.Array(2).U(i).Bin("");
  EXPECT_EQ(SplitMetadata(too_many.Plain()).error(), ErrorCode::DATA_CORRUPTED);
  Msg not_bin;
  not_bin.Array(2).U(kSnapshotVersion).Array(1).Array(2).U(1).S("str");
  EXPECT_EQ(SplitMetadata(not_bin.Plain()).error(), ErrorCode::DATA_CORRUPTED);
}

TEST(ShardCodec, RejectsAShardIndexOutOfRange) {
  ShardState s = SampleShard(0, 1);
  s.index = 1024;
  EXPECT_EQ(ShardError(EncodeShard(s)), ErrorCode::DATA_CORRUPTED);
}

// ---------------------------------------------------------------- versions

TEST(Codec, OtherVersionsAreVersionMismatch) {
  for (uint64_t version : {uint64_t{0}, uint64_t{kSnapshotVersion} + 1, kU64Max}) {
    // A later version may change everything after the version number.
    std::string later = Msg().Array(3).U(version).S("new").Array(0).Zstd();
    EXPECT_EQ(ShardError(later), ErrorCode::VERSION_MISMATCH);
    EXPECT_EQ(DecodeSegments(later).error(), ErrorCode::VERSION_MISMATCH);
    EXPECT_EQ(DecodeTasks(later).error(), ErrorCode::VERSION_MISMATCH);
    EXPECT_EQ(SplitMetadata(Msg().Array(2).U(version).Array(0).Plain()).error(),
              ErrorCode::VERSION_MISMATCH);
  }
  // Not a version at all.
  EXPECT_EQ(ShardError(Msg().Array(4).S("1").U(0).Array(0).Array(0).Zstd()), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(Msg().Array(0).Zstd()), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(Msg().U(kSnapshotVersion).Zstd()), ErrorCode::DATA_CORRUPTED);
}

// ---------------------------------------------------------------- malformed

TEST(ShardCodec, RejectsEveryWrongField) {
  // For each field: a value of the wrong type, or out of range.
  std::vector<std::function<void(Msg&)>> wrong = {
      [](Msg& m) { m.U(1); },                       // 0 tenant: not a str
      [](Msg& m) { m.Bin("key"); },                 // 1 key: bin, not str
      [](Msg& m) { m.Bin(std::string(15, 'x')); },  // 2 writer: 15 bytes
      [](Msg& m) { m.I(-1); },                      // 3 size: negative
      [](Msg& m) { m.U(1); },                       // 4 has_checksum: not a bool
      [](Msg& m) { m.S("77"); },                    // 5 checksum
      [](Msg& m) { m.U(4); },                       // 6 data_type: out of range
      [](Msg& m) { m.p.pack_nil(); },               // 7 hard_pin
      [](Msg& m) { m.U(uint64_t{kI64Max} + 1); },   // 8 lease: above int64
      [](Msg& m) { m.p.pack_double(1.5); },         // 9 soft pin: a float
      [](Msg& m) { m.B(true); },                    // 10 put age
      [](Msg& m) { m.Array(0); },                   // 11 group
      [](Msg&) {},                                  // 12 (replicas array, not editable)
      [](Msg& m) { m.S("42"); },                    // 13 replica id
      [](Msg& m) { m.U(5); },                       // 14 status: out of range
      [](Msg& m) { m.U(2); },                       // 15 type: out of range
      [](Msg& m) { m.Bin(std::string(17, 'x')); },  // 16 owner: 17 bytes
      [](Msg& m) { m.p.pack_map(0); },              // 17 offset: a map
  };
  for (int field = 0; field < static_cast<int>(wrong.size()); ++field) {
    if (field == 12) continue;
    std::string plain = OneObjectShard([&](Msg& m, int i) {
      if (i != field) return false;
      wrong[field](m);
      return true;
    });
    EXPECT_EQ(ShardError(CompressPayload(plain)), ErrorCode::DATA_CORRUPTED) << "field " << field;
  }
}

TEST(ShardCodec, RejectsWrongShapes) {
  std::string good = OneObjectShard();
  ASSERT_TRUE(DecodeShard(CompressPayload(good)).ok());
  // Trailing bytes inside the frame, and after the frame.
  EXPECT_EQ(ShardError(CompressPayload(good + std::string(1, '\0'))), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(CompressPayload(good) + "x"), ErrorCode::DATA_CORRUPTED);
  // Two frames back to back, even if the second is empty.
  EXPECT_EQ(ShardError(CompressPayload(good) + CompressPayload("")), ErrorCode::DATA_CORRUPTED);
  // Frames without a checksum or without a content size.
  EXPECT_EQ(ShardError(Frame(good, false, true)), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(Frame(good, true, false)), ErrorCode::DATA_CORRUPTED);
  ASSERT_TRUE(DecodeShard(Frame(good, true, true)).ok());
  // Too few / too many object fields; a missing or extra field at top level.
  EXPECT_EQ(ShardError(CompressPayload(OneObjectShard(nullptr, -1))), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(CompressPayload(OneObjectShard(nullptr, +1))), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(Msg().Array(3).U(kSnapshotVersion).U(0).Array(0).Zstd()), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(Msg().Array(5).U(kSnapshotVersion).U(0).Array(0).Array(0).Array(0).Zstd()),
            ErrorCode::DATA_CORRUPTED);
  // A map where an array belongs, and non-payloads.
  Msg map;
  map.Array(4).U(kSnapshotVersion).U(0);
  map.p.pack_map(0);
  map.Array(0);
  EXPECT_EQ(ShardError(map.Zstd()), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(""), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(CompressPayload("")), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(ShardError(good), ErrorCode::DATA_CORRUPTED) << "msgpack without zstd";
}

TEST(ShardCodec, HugeCountsAndDeepNestingAllocateNothing) {
  // Headers that claim 2^32-1 elements with nothing behind them.
  std::string huge_objects = Msg().Array(4).U(kSnapshotVersion).U(0).Array(0xffffffff).Zstd();
  EXPECT_EQ(ShardError(huge_objects), ErrorCode::DATA_CORRUPTED);
  std::string nested_claims;
  for (int i = 0; i < 10000; ++i) nested_claims += std::string("\xdd\xff\xff\xff\xff", 5);
  EXPECT_EQ(ShardError(CompressPayload(nested_claims)), ErrorCode::DATA_CORRUPTED);
  std::string deep(100000, '\x91');  // [[[[...]]]] one element each
  EXPECT_EQ(ShardError(CompressPayload(deep + "\x90")), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(SplitMetadata(deep + "\x90").error(), ErrorCode::DATA_CORRUPTED);
  // An ext whose length overflows msgpack-c's size arithmetic (it throws).
  std::string ext("\xc9\xff\xff\xff\xff\x01", 6);
  EXPECT_EQ(ShardError(CompressPayload(ext)), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(SplitMetadata(ext).error(), ErrorCode::DATA_CORRUPTED);
}

// A zstd frame by hand: 8-byte content size `declared`, checksum flag, one
// raw last block holding `body`, then a (wrong) checksum.
std::string HandFrame(uint64_t declared, std::string_view body) {
  std::string f("\x28\xb5\x2f\xfd\xe4", 5);  // magic; FCS 8 bytes, single segment, checksum
  for (int i = 0; i < 8; ++i) f += static_cast<char>(declared >> (8 * i));
  uint32_t header = (static_cast<uint32_t>(body.size()) << 3) | 1;  // raw, last
  for (int i = 0; i < 3; ++i) f += static_cast<char>(header >> (8 * i));
  return f.append(body).append(4, '\0');
}

TEST(ShardCodec, DeclaredSizesBeyondWhatTheFrameCanHoldAreRejected) {
  // Sizes no frame of this length can expand to (zstd's best ratio is 32768:1),
  // over 4 GiB, and a declared size that the blocks do not match.
  for (uint64_t declared : {uint64_t{1} << 32, uint64_t{1} << 40, kU64Max - 2, uint64_t{100}}) {
    EXPECT_EQ(ShardError(HandFrame(declared, "\x90")), ErrorCode::DATA_CORRUPTED) << declared;
  }
}

TEST(ShardCodec, HighlyCompressibleShardsRoundTrip) {
  ShardState s;
  s.index = 77;
  for (int i = 0; i < 3000; ++i) {
    ObjectState& o = s.objects.emplace_back();
    o.tenant = std::string(256, 't');
    o.key = std::string(4000, 'k') + std::to_string(i);
    o.group = std::string(1000, 'g');
  }
  std::string bytes = EncodeShard(s);
  auto decoded = DecodeShard(bytes);
  ASSERT_TRUE(decoded.ok()) << ErrorCodeName(decoded.error()) << " ratio "
                            << Decompress(bytes).size() / bytes.size();
  EXPECT_EQ(Dump(*decoded), Dump(s));
}

// ---------------------------------------------------------------- corruption

// Every truncation of every payload is an error.
TEST(Codec, EveryTruncationIsAnError) {
  std::string shard = EncodeShard(SampleShard(1, 3));
  std::string segments = EncodeSegments(SampleSegments());
  std::string tasks = EncodeTasks(SampleTasks());
  std::string metadata = EncodeMetadata({{1, shard}, {2, shard}});
  std::string manifest = EncodeManifest({.snapshot_id = SnapshotIdAt(1), .metadata_bytes = 5});
  std::string descriptor = EncodeDescriptor({1, 2, 3});
  for (size_t n = 0; n < shard.size(); ++n) EXPECT_FALSE(DecodeShard(shard.substr(0, n)).ok()) << n;
  for (size_t n = 0; n < segments.size(); ++n) EXPECT_FALSE(DecodeSegments(segments.substr(0, n)).ok()) << n;
  for (size_t n = 0; n < tasks.size(); ++n) EXPECT_FALSE(DecodeTasks(tasks.substr(0, n)).ok()) << n;
  for (size_t n = 0; n < metadata.size(); ++n) EXPECT_FALSE(SplitMetadata(metadata.substr(0, n)).ok()) << n;
  // Plain msgpack truncated inside the frame.
  std::string plain = Decompress(shard);
  for (size_t n = 0; n < plain.size(); ++n) {
    EXPECT_EQ(ShardError(CompressPayload(plain.substr(0, n))), ErrorCode::DATA_CORRUPTED) << n;
  }
  for (size_t n = 0; n < manifest.size(); ++n) EXPECT_FALSE(DecodeManifest(manifest.substr(0, n)).ok()) << n;
  for (size_t n = 0; n < descriptor.size(); ++n) {
    EXPECT_FALSE(DecodeDescriptor(descriptor.substr(0, n)).ok()) << n;
  }
}

// Flips `bit` of `bytes`.
std::string Flip(std::string bytes, size_t bit) {
  bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
  return bytes;
}

// A flipped payload is an error or (frame bits that do not change the
// content, such as an unused window bit) the very same value; never a crash.
template <typename T, typename Decode>
void ExpectEveryFlipRejectedOrSame(const std::string& bytes, const T& value, Decode decode,
                                   size_t* rejected) {
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    auto decoded = decode(Flip(bytes, bit));
    if (decoded.ok()) {
      EXPECT_EQ(Dump(*decoded), Dump(value)) << "bit " << bit;
    } else {
      EXPECT_EQ(decoded.error(), ErrorCode::DATA_CORRUPTED) << "bit " << bit;
      ++*rejected;
    }
  }
}

TEST(Codec, EveryBitFlipIsRejectedOrHarmless) {
  size_t rejected = 0;
  ShardState shard = SampleShard(2, 4);
  std::string bytes = EncodeShard(shard);
  ExpectEveryFlipRejectedOrSame(bytes, shard, DecodeShard, &rejected);
  SegmentsState segments = SampleSegments();
  std::string seg_bytes = EncodeSegments(segments);
  ExpectEveryFlipRejectedOrSame(seg_bytes, segments, DecodeSegments, &rejected);
  TasksState tasks = SampleTasks();
  std::string task_bytes = EncodeTasks(tasks);
  ExpectEveryFlipRejectedOrSame(task_bytes, tasks, DecodeTasks, &rejected);
  // Nearly every bit is covered by the frame checksum or header checks.
  size_t bits = 8 * (bytes.size() + seg_bytes.size() + task_bytes.size());
  EXPECT_GT(rejected, bits * 9 / 10);
}

// Uncompressed msgpack reached through a valid frame: flips there are only
// caught by the structure checks (or read as another version); decoding
// must still never crash.
TEST(Codec, BitFlipsInsideTheFrameNeverCrash) {
  std::string plain = Decompress(EncodeShard(EdgeShard()));
  for (size_t bit = 0; bit < plain.size() * 8; bit += 3) {
    auto decoded = DecodeShard(CompressPayload(Flip(plain, bit)));
    if (!decoded.ok() && decoded.error() != ErrorCode::VERSION_MISMATCH) {
      EXPECT_EQ(decoded.error(), ErrorCode::DATA_CORRUPTED) << "bit " << bit;
    }
  }
  std::string metadata = EncodeMetadata({{3, EncodeShard(SampleShard(3, 2))}, {900, "x"}});
  for (size_t bit = 0; bit < metadata.size() * 8; ++bit) {
    std::string flipped = Flip(metadata, bit);  // the views point into it
    auto split = SplitMetadata(flipped);
    if (!split.ok()) continue;
    for (size_t i = 0; i < split->size(); ++i) {
      EXPECT_LT((*split)[i].first, 1024u);
      if (i > 0) {
        EXPECT_GT((*split)[i].first, (*split)[i - 1].first);
      }
      auto shard = DecodeShard((*split)[i].second);
      if (!shard.ok()) {
        EXPECT_EQ(shard.error(), ErrorCode::DATA_CORRUPTED);
      }
    }
  }
}

TEST(Codec, RandomFlipsInALargePayloadAreRejected) {
  ShardState shard = SampleShard(4, 500);
  std::string bytes = EncodeShard(shard);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string flipped = bytes;
    for (int k = 0; k < 1 + i % 3; ++k) flipped = Flip(flipped, rng() % (bytes.size() * 8));
    auto decoded = DecodeShard(flipped);
    if (decoded.ok()) {
      EXPECT_EQ(Dump(*decoded), Dump(shard));
    } else {
      EXPECT_EQ(decoded.error(), ErrorCode::DATA_CORRUPTED);
    }
  }
}

// ---------------------------------------------------------------- text files

TEST(Manifest, RoundTrips) {
  Manifest m;
  m.snapshot_id = SnapshotIdAt(1700000000123);
  m.metadata_bytes = kU64Max;
  m.segments_bytes = 0;
  m.task_manager_bytes = 42;
  std::string text = EncodeManifest(m);
  EXPECT_EQ(text,
            "format=shelfmark-master-snapshot\nversion=1\nsnapshot_id=20231114_221320_123\n"
            "metadata_bytes=18446744073709551615\nsegments_bytes=0\ntask_manager_bytes=42\n");
  auto d = DecodeManifest(text);
  ASSERT_TRUE(d.ok()) << ErrorCodeName(d.error());
  EXPECT_EQ(d->format, kSnapshotFormat);
  EXPECT_EQ(d->version, kSnapshotVersion);
  EXPECT_EQ(d->snapshot_id, m.snapshot_id);
  EXPECT_EQ(d->metadata_bytes, m.metadata_bytes);
  EXPECT_EQ(d->segments_bytes, 0u);
  EXPECT_EQ(d->task_manager_bytes, 42u);
  // Any line order.
  EXPECT_TRUE(DecodeManifest(
                  "task_manager_bytes=1\nsegments_bytes=2\nmetadata_bytes=3\n"
                  "snapshot_id=20231114_221320_123\nversion=1\nformat=shelfmark-master-snapshot\n")
                  .ok());
}

std::string ManifestWith(std::string_view key, std::string_view value) {
  Manifest m;
  m.snapshot_id = SnapshotIdAt(0);
  std::string text = EncodeManifest(m);
  size_t at = text.find(std::string(key) + "=");
  size_t end = text.find('\n', at);
  return text.substr(0, at) + std::string(key) + "=" + std::string(value) + text.substr(end);
}

TEST(Manifest, RejectsMalformedFiles) {
  const std::string good = ManifestWith("metadata_bytes", "0");
  ASSERT_TRUE(DecodeManifest(good).ok());
  for (std::string bad : std::vector<std::string>{
           good + "extra=1\n",                                          // unknown key
           good + "metadata_bytes=0\n",                                 // duplicate
           good.substr(0, good.size() - 1),                             // no final newline
           good + "\n",                                                 // empty line
           good + "=1\n",                                               // empty key
           good + "novalue\n",                                          // no '='
           ManifestWith("metadata_bytes", ""), ManifestWith("metadata_bytes", "01"),
           ManifestWith("metadata_bytes", "-1"), ManifestWith("metadata_bytes", "+1"),
           ManifestWith("metadata_bytes", " 1"), ManifestWith("metadata_bytes", "1 "),
           ManifestWith("metadata_bytes", "0x10"), ManifestWith("metadata_bytes", "18446744073709551616"),
           ManifestWith("segments_bytes", "1\r"), ManifestWith("version", "01"),
           ManifestWith("version", "one"), ManifestWith("snapshot_id", "latest"),
           ManifestWith("snapshot_id", ""), std::string(""),
       }) {
    EXPECT_EQ(DecodeManifest(bad).error(), ErrorCode::DATA_CORRUPTED) << bad;
  }
  // Missing keys, one at a time.
  for (std::string_view key : {"format=", "version=", "snapshot_id=", "metadata_bytes=",
                               "segments_bytes=", "task_manager_bytes="}) {
    size_t at = good.find(key);
    std::string bad = good.substr(0, at) + good.substr(good.find('\n', at) + 1);
    EXPECT_EQ(DecodeManifest(bad).error(), ErrorCode::DATA_CORRUPTED) << key;
  }
}

TEST(Manifest, OtherFormatsAndVersionsAreVersionMismatch) {
  EXPECT_EQ(DecodeManifest(ManifestWith("format", "mooncake")).error(), ErrorCode::VERSION_MISMATCH);
  EXPECT_EQ(DecodeManifest(ManifestWith("version", "2")).error(), ErrorCode::VERSION_MISMATCH);
  EXPECT_EQ(DecodeManifest(ManifestWith("version", "0")).error(), ErrorCode::VERSION_MISMATCH);
  // A later version's new keys do not turn it into DATA_CORRUPTED.
  EXPECT_EQ(DecodeManifest(ManifestWith("version", "2") + "new_key=1\n").error(),
            ErrorCode::VERSION_MISMATCH);
}

TEST(Descriptor, RoundTripsAndRejectsMalformedFiles) {
  for (SnapshotDescriptor d : {SnapshotDescriptor{}, SnapshotDescriptor{kU64Max, kU64Max, kI64Min},
                               SnapshotDescriptor{17, 3, kI64Max}}) {
    auto back = DecodeDescriptor(EncodeDescriptor(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->sequence_boundary, d.sequence_boundary);
    EXPECT_EQ(back->view_version, d.view_version);
    EXPECT_EQ(back->created_unix_ms, d.created_unix_ms);
  }
  EXPECT_EQ(EncodeDescriptor({1, 2, -3}), "sequence_boundary=1\nview_version=2\ncreated_unix_ms=-3\n");
  const std::string good = EncodeDescriptor({1, 2, 3});
  for (std::string bad : std::vector<std::string>{
           good + "x=1\n", good + "view_version=2\n", std::string(""),
           "sequence_boundary=1\nview_version=2\n",
           "sequence_boundary=-1\nview_version=2\ncreated_unix_ms=3\n",
           "sequence_boundary=1\nview_version=2\ncreated_unix_ms=-0\n",
           "sequence_boundary=1\nview_version=2\ncreated_unix_ms=9223372036854775808\n",
           "sequence_boundary=1\nview_version=2\ncreated_unix_ms=3",
       }) {
    EXPECT_EQ(DecodeDescriptor(bad).error(), ErrorCode::DATA_CORRUPTED) << bad;
  }
}

// ---------------------------------------------------------------- ids

TEST(SnapshotId, FormatsUtcMilliseconds) {
  EXPECT_EQ(SnapshotIdAt(0), "19700101_000000_000");
  EXPECT_EQ(SnapshotIdAt(1700000000123), "20231114_221320_123");
  EXPECT_EQ(SnapshotIdAt(951782400999), "20000229_000000_999");  // leap day
  EXPECT_EQ(SnapshotIdAt(-5), "19700101_000000_000");
  EXPECT_EQ(SnapshotIdAt(kI64Max), "99991231_235959_999");
}

TEST(SnapshotId, IdsSortByTime) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> times = {0, 1, 999, 1000, 59999, 60000, 86400000, 253402300799999};
  for (int i = 0; i < 2000; ++i) times.push_back(static_cast<int64_t>(rng() % 4102444800000ULL));
  std::sort(times.begin(), times.end());
  for (size_t i = 1; i < times.size(); ++i) {
    std::string a = SnapshotIdAt(times[i - 1]);
    std::string b = SnapshotIdAt(times[i]);
    EXPECT_TRUE(ValidSnapshotId(b)) << b;
    if (times[i - 1] < times[i]) {
      EXPECT_LT(a, b);
    } else {
      EXPECT_EQ(a, b);
    }
  }
}

TEST(SnapshotId, ValidatesTheExactShape) {
  EXPECT_TRUE(ValidSnapshotId("20231114_221320_123"));
  EXPECT_TRUE(ValidSnapshotId("20000229_235959_999"));
  for (std::string_view bad :
       {"", "20231114_221320_12", "20231114_221320_1234", "20231114-221320-123", "2023111a_221320_123",
        "20231114_221320_12 ", "20230229_000000_000", "20231301_000000_000", "20231100_000000_000",
        "20231114_240000_000", "20231114_236000_000", "20231114_235960_000", "19691231_235959_999",
        "00000101_000000_000", "latest", "../../etc/passwd_x"}) {
    EXPECT_FALSE(ValidSnapshotId(bad)) << bad;
  }
}


TEST(ShardCodec, DecodeShardIntoReusesOneStateAcrossShards) {
  ShardState reused;
  // Larger, smaller, empty and edge shards in turn: every field is overwritten.
  for (const ShardState& s : {SampleShard(5, 300), EdgeShard(), SampleShard(6, 7), ShardState{},
                              SampleShard(7, 40), EdgeShard()}) {
    ASSERT_EQ(DecodeShardInto(EncodeShard(s), &reused), ErrorCode::OK);
    EXPECT_EQ(Dump(reused), Dump(s));
  }
  // Errors are the same as DecodeShard's; the state stays usable.
  std::string bad = EncodeShard(SampleShard(8, 20));
  bad.resize(bad.size() - 1);
  EXPECT_EQ(DecodeShardInto(bad, &reused), ErrorCode::DATA_CORRUPTED);
  EXPECT_EQ(DecodeShardInto(CompressPayload(OneObjectShard()), &reused), ErrorCode::OK);
  EXPECT_EQ(reused.objects.size(), 1u);
  ShardState s = SampleShard(9, 25);
  ASSERT_EQ(DecodeShardInto(EncodeShard(s), &reused), ErrorCode::OK);
  EXPECT_EQ(Dump(reused), Dump(s));
}

}  // namespace
}  // namespace shelfmark
