// rpc_convert: round trips of every wire struct through a serialized
// message, rejection of out-of-range enums / union tags / oversized lists,
// and a deterministic bit-flip / truncation fuzz loop over serialized
// requests (must never crash; run under ASan in the Sanitize build).
#include "rpc/rpc_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/schema.h>
#include <capnp/serialize.h>

namespace shelfmark {
namespace {

using rpcconv::Decode;
using rpcconv::Encode;
using rpcconv::DecodeList;
using rpcconv::EncodeList;

// Serializes `builder` and reads it back, the way a peer would see it.
class Wire {
 public:
  explicit Wire(capnp::MessageBuilder& builder) : words_(capnp::messageToFlatArray(builder)) {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = rpcconv::kTraversalLimitWords;
    reader_ = std::make_unique<capnp::FlatArrayMessageReader>(words_.asPtr(), options);
  }
  template <typename T>
  typename T::Reader Root() {
    return reader_->getRoot<T>();
  }

 private:
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
};

std::string Binary(size_t n, uint8_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7);
  return s;
}

MemoryDescriptor SampleMemory() {
  MemoryDescriptor m;
  m.endpoint = "10.0.0.7:12345";
  m.protocol = "rdma";
  m.buffer_address = 0x7f0000001000ULL;
  m.size = 4096;
  m.rkey = Binary(16, 3);  // includes NUL bytes
  m.segment_id = UUID{0x1122334455667788ULL, 0x99aabbccddeeff00ULL};
  return m;
}

DiskDescriptor SampleDisk() {
  DiskDescriptor d;
  d.client_id = UUID{1, 2};
  d.object_size = 1 << 20;
  d.endpoint = "10.0.0.8:7000";
  return d;
}

std::vector<ReplicaDescriptor> SampleReplicas() {
  ReplicaDescriptor a;
  a.id = 42;
  a.status = ReplicaStatus::COMPLETE;
  a.type = ReplicaType::MEMORY;
  a.memory = SampleMemory();
  ReplicaDescriptor b;
  b.id = 43;
  b.status = ReplicaStatus::PROCESSING;
  b.type = ReplicaType::LOCAL_DISK;
  b.disk = SampleDisk();
  return {a, b};
}

void ExpectEq(const MemoryDescriptor& a, const MemoryDescriptor& b) {
  EXPECT_EQ(a.endpoint, b.endpoint);
  EXPECT_EQ(a.protocol, b.protocol);
  EXPECT_EQ(a.buffer_address, b.buffer_address);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.rkey, b.rkey);
  EXPECT_EQ(a.segment_id, b.segment_id);
}

void ExpectEq(const DiskDescriptor& a, const DiskDescriptor& b) {
  EXPECT_EQ(a.client_id, b.client_id);
  EXPECT_EQ(a.object_size, b.object_size);
  EXPECT_EQ(a.endpoint, b.endpoint);
}

void ExpectEq(const ReplicaDescriptor& a, const ReplicaDescriptor& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.type, b.type);
  if (a.type == ReplicaType::MEMORY) {
    ExpectEq(a.memory, b.memory);
  } else {
    ExpectEq(a.disk, b.disk);
  }
}

void ExpectEq(const std::vector<ReplicaDescriptor>& a, const std::vector<ReplicaDescriptor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ExpectEq(a[i], b[i]);
}

// Writes `value` into the 16-bit union discriminant of a struct (the
// generated API cannot produce an unknown tag, a hostile peer can).
template <typename T>
void SetDiscriminant(typename T::Builder builder, uint16_t value) {
  auto proto = capnp::Schema::from<T>().getProto().getStruct();
  capnp::AnyStruct::Builder any(kj::mv(builder));
  auto data = any.getDataSection();
  const size_t offset = proto.getDiscriminantOffset() * 2;
  ASSERT_LE(offset + 2, data.size());
  std::memcpy(data.begin() + offset, &value, 2);
}

TEST(RpcConvertTest, UuidRoundTrip) {
  capnp::MallocMessageBuilder b;
  UUID id = UUID::Generate();
  Encode(id, b.initRoot<wire::Uuid>());
  Wire w(b);
  EXPECT_EQ(Decode(w.Root<wire::Uuid>()), id);
}

TEST(RpcConvertTest, SegmentRoundTrip) {
  Segment s;
  s.id = UUID::Generate();
  s.name = "node-a/seg0";
  s.base = 0x7f1234560000ULL;
  s.size = 1ULL << 34;
  s.endpoint = "192.168.1.10:15000";
  s.protocol = "ucx";
  s.rkey = Binary(200, 0);
  capnp::MallocMessageBuilder b;
  Encode(s, b.initRoot<wire::Segment>());
  Wire w(b);
  Segment out;
  ASSERT_EQ(Decode(w.Root<wire::Segment>(), &out), ErrorCode::OK);
  EXPECT_EQ(out.id, s.id);
  EXPECT_EQ(out.name, s.name);
  EXPECT_EQ(out.base, s.base);
  EXPECT_EQ(out.size, s.size);
  EXPECT_EQ(out.endpoint, s.endpoint);
  EXPECT_EQ(out.protocol, s.protocol);
  EXPECT_EQ(out.rkey, s.rkey);
}

TEST(RpcConvertTest, DescriptorsRoundTrip) {
  {
    capnp::MallocMessageBuilder b;
    Encode(SampleMemory(), b.initRoot<wire::MemoryDescriptor>());
    Wire w(b);
    MemoryDescriptor out;
    ASSERT_EQ(Decode(w.Root<wire::MemoryDescriptor>(), &out), ErrorCode::OK);
    ExpectEq(out, SampleMemory());
  }
  {
    capnp::MallocMessageBuilder b;
    Encode(SampleDisk(), b.initRoot<wire::DiskDescriptor>());
    Wire w(b);
    DiskDescriptor out;
    ASSERT_EQ(Decode(w.Root<wire::DiskDescriptor>(), &out), ErrorCode::OK);
    ExpectEq(out, SampleDisk());
  }
  for (const auto& r : SampleReplicas()) {
    capnp::MallocMessageBuilder b;
    Encode(r, b.initRoot<wire::ReplicaDescriptor>());
    Wire w(b);
    ReplicaDescriptor out;
    ASSERT_EQ(Decode(w.Root<wire::ReplicaDescriptor>(), &out), ErrorCode::OK);
    ExpectEq(out, r);
  }
}

TEST(RpcConvertTest, EveryEnumValueRoundTrips) {
  for (auto s : {ReplicaStatus::INITIALIZED, ReplicaStatus::PROCESSING, ReplicaStatus::COMPLETE,
                 ReplicaStatus::REMOVED, ReplicaStatus::FAILED}) {
    ReplicaStatus out{};
    ASSERT_EQ(rpcconv::DecodeEnum(rpcconv::EncodeEnum(s), &out), ErrorCode::OK);
    EXPECT_EQ(out, s);
  }
  for (auto t : {ReplicaType::MEMORY, ReplicaType::LOCAL_DISK}) {
    ReplicaType out{};
    ASSERT_EQ(rpcconv::DecodeEnum(rpcconv::EncodeEnum(t), &out), ErrorCode::OK);
    EXPECT_EQ(out, t);
  }
  for (auto d : {DataType::UNKNOWN, DataType::KVCACHE, DataType::TENSOR, DataType::WEIGHT}) {
    DataType out{};
    ASSERT_EQ(rpcconv::DecodeEnum(rpcconv::EncodeEnum(d), &out), ErrorCode::OK);
    EXPECT_EQ(out, d);
  }
  for (auto c : {ClientStatus::OK, ClientStatus::NEED_REMOUNT}) {
    ClientStatus out{};
    ASSERT_EQ(rpcconv::DecodeEnum(rpcconv::EncodeEnum(c), &out), ErrorCode::OK);
    EXPECT_EQ(out, c);
  }
}

TEST(RpcConvertTest, PutConfigRoundTrip) {
  PutConfig c;
  c.replica_num = 3;
  c.preferred_segments = {"seg-a", "seg-b", ""};
  c.checksum = 0xdeadbeefcafef00dULL;
  c.data_type = DataType::TENSOR;
  c.hard_pin = true;
  c.soft_pin_ttl_ms = 12345;
  c.group_id = "layer-7";
  c.replace = true;
  c.prefer_host = "10.0.0.2";
  capnp::MallocMessageBuilder b;
  Encode(c, b.initRoot<wire::PutConfig>());
  Wire w(b);
  PutConfig out;
  ASSERT_EQ(Decode(w.Root<wire::PutConfig>(), &out), ErrorCode::OK);
  EXPECT_EQ(out.replica_num, 3u);
  EXPECT_EQ(out.preferred_segments, c.preferred_segments);
  EXPECT_EQ(out.checksum, c.checksum);
  EXPECT_EQ(out.data_type, DataType::TENSOR);
  EXPECT_TRUE(out.hard_pin);
  EXPECT_EQ(out.soft_pin_ttl_ms, 12345);
  EXPECT_EQ(out.group_id, "layer-7");
  EXPECT_TRUE(out.replace);
  EXPECT_EQ(out.prefer_host, "10.0.0.2");

  // Defaults: no checksum, one replica.
  capnp::MallocMessageBuilder b2;
  Encode(PutConfig{}, b2.initRoot<wire::PutConfig>());
  Wire w2(b2);
  PutConfig out2;
  out2.checksum = 1;
  ASSERT_EQ(Decode(w2.Root<wire::PutConfig>(), &out2), ErrorCode::OK);
  EXPECT_FALSE(out2.checksum.has_value());
  EXPECT_EQ(out2.replica_num, 1u);
  EXPECT_TRUE(out2.preferred_segments.empty());
  EXPECT_FALSE(out2.replace);

  // A PutConfig never set by the sender reads as the defaults too.
  capnp::MallocMessageBuilder b3;
  b3.initRoot<wire::MasterService::PutStartParams>();
  Wire w3(b3);
  PutConfig out3;
  ASSERT_EQ(Decode(w3.Root<wire::MasterService::PutStartParams>().getConfig(), &out3),
            ErrorCode::OK);
  EXPECT_EQ(out3.replica_num, 1u);
  EXPECT_FALSE(out3.checksum.has_value());
  EXPECT_FALSE(out3.replace) << "an older client's PutConfig is a plain put";
}

TEST(RpcConvertTest, GetReplicaListResponseRoundTrip) {
  GetReplicaListResponse r;
  r.replicas = SampleReplicas();
  r.size = 777;
  r.checksum = 5;
  r.data_type = DataType::KVCACHE;
  r.lease_ttl_ms = 10'000;
  capnp::MallocMessageBuilder b;
  Encode(r, b.initRoot<wire::GetReplicaListResponse>());
  Wire w(b);
  GetReplicaListResponse out;
  ASSERT_EQ(Decode(w.Root<wire::GetReplicaListResponse>(), &out), ErrorCode::OK);
  ExpectEq(out.replicas, r.replicas);
  EXPECT_EQ(out.size, 777u);
  EXPECT_EQ(out.checksum, std::optional<uint64_t>(5));
  EXPECT_EQ(out.data_type, DataType::KVCACHE);
  EXPECT_EQ(out.lease_ttl_ms, 10'000);
}

TEST(RpcConvertTest, ObjectInfoRoundTrip) {
  ObjectInfo i;
  i.key = Binary(300, 9);
  i.size = 1 << 20;
  i.checksum = std::nullopt;
  i.data_type = DataType::WEIGHT;
  i.writer = UUID::Generate();
  i.lease_remaining_ms = 9000;
  i.soft_pin_remaining_ms = 100;
  i.hard_pin = true;
  i.group_id = "g";
  i.replicas = SampleReplicas();
  capnp::MallocMessageBuilder b;
  Encode(i, b.initRoot<wire::ObjectInfo>());
  Wire w(b);
  ObjectInfo out;
  ASSERT_EQ(Decode(w.Root<wire::ObjectInfo>(), &out), ErrorCode::OK);
  EXPECT_EQ(out.key, i.key);
  EXPECT_EQ(out.size, i.size);
  EXPECT_FALSE(out.checksum.has_value());
  EXPECT_EQ(out.data_type, DataType::WEIGHT);
  EXPECT_EQ(out.writer, i.writer);
  EXPECT_EQ(out.lease_remaining_ms, 9000);
  EXPECT_EQ(out.soft_pin_remaining_ms, 100);
  EXPECT_TRUE(out.hard_pin);
  EXPECT_EQ(out.group_id, "g");
  ExpectEq(out.replicas, i.replicas);
}

TEST(RpcConvertTest, OffloadStructsRoundTrip) {
  OffloadTask t{"tenant-a", "key-1", 4096, 0x7f0000001000};
  capnp::MallocMessageBuilder b;
  Encode(t, b.initRoot<wire::OffloadTask>());
  Wire w(b);
  OffloadTask tout;
  ASSERT_EQ(Decode(w.Root<wire::OffloadTask>(), &tout), ErrorCode::OK);
  EXPECT_EQ(tout.tenant, t.tenant);
  EXPECT_EQ(tout.key, t.key);
  EXPECT_EQ(tout.size, t.size);
  EXPECT_EQ(tout.buffer_address, t.buffer_address);

  OffloadedObject o;
  o.tenant = "";
  o.key = "k";
  o.location = StorageObjectMetadata{7, -1, 1, 4096, "10.1.1.1:9000"};
  capnp::MallocMessageBuilder b2;
  auto list = b2.initRoot<wire::MasterService::NotifyOffloadSuccessParams>().initItems(2);
  Encode(o, list[0]);
  o.checksum = 0xfeedULL;
  Encode(o, list[1]);
  Wire w2(b2);
  std::vector<OffloadedObject> out;
  ASSERT_EQ(DecodeList(
                w2.Root<wire::MasterService::NotifyOffloadSuccessParams>().getItems(), 2, &out),
            ErrorCode::OK);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].tenant, "");
  EXPECT_EQ(out[1].key, "k");
  EXPECT_EQ(out[1].location.bucket_id, 7);
  EXPECT_EQ(out[1].location.offset, -1);
  EXPECT_EQ(out[1].location.key_size, 1);
  EXPECT_EQ(out[1].location.data_size, 4096);
  EXPECT_EQ(out[1].location.transport_endpoint, "10.1.1.1:9000");
  EXPECT_FALSE(out[0].checksum.has_value());  // an older node's report
  EXPECT_EQ(out[1].checksum, std::optional<uint64_t>(0xfeedULL));
  // More items than allowed.
  EXPECT_EQ(DecodeList(
                w2.Root<wire::MasterService::NotifyOffloadSuccessParams>().getItems(), 1, &out),
            ErrorCode::INVALID_PARAMS);
}

TEST(RpcConvertTest, PromotionMessagesRoundTrip) {
  capnp::MallocMessageBuilder b;
  auto params = b.initRoot<wire::MasterService::PromoteStartParams>();
  EncodeList(std::vector<PromoteRequest>{{"t", "k1", 4096}, {"", "k2", 1}}, params.initItems(2));
  Wire w(b);
  std::vector<PromoteRequest> requests;
  ASSERT_EQ(DecodeList(w.Root<wire::MasterService::PromoteStartParams>().getItems(), 2, &requests),
            ErrorCode::OK);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].tenant, "t");
  EXPECT_EQ(requests[1].key, "k2");
  EXPECT_EQ(requests[0].size, 4096u);

  capnp::MallocMessageBuilder b2;
  auto results = b2.initRoot<wire::MasterService::PromoteStartResults>();
  EncodeList(std::vector<PromoteGrant>{{ErrorCode::OK, 0x7f0000001000},
                                       {ErrorCode::NO_AVAILABLE_HANDLE, 0}},
             results.initGrants(2));
  Wire w2(b2);
  std::vector<PromoteGrant> grants;
  ASSERT_EQ(DecodeList(w2.Root<wire::MasterService::PromoteStartResults>().getGrants(), 2, &grants),
            ErrorCode::OK);
  EXPECT_EQ(grants[0].buffer_address, 0x7f0000001000u);
  EXPECT_EQ(grants[1].code, ErrorCode::NO_AVAILABLE_HANDLE);

  PromoteResult r{"t", "k", true};
  capnp::MallocMessageBuilder b3;
  Encode(r, b3.initRoot<wire::PromoteResult>());
  Wire w3(b3);
  PromoteResult rout;
  ASSERT_EQ(Decode(w3.Root<wire::PromoteResult>(), &rout), ErrorCode::OK);
  EXPECT_EQ(rout.key, "k");
  EXPECT_TRUE(rout.copied);
}

TEST(RpcConvertTest, RejectsOutOfRangeEnums) {
  ReplicaStatus s;
  EXPECT_EQ(rpcconv::DecodeEnum(static_cast<wire::ReplicaStatus>(5), &s),
            ErrorCode::INVALID_PARAMS);
  ReplicaType t;
  EXPECT_EQ(rpcconv::DecodeEnum(static_cast<wire::ReplicaType>(2), &t),
            ErrorCode::INVALID_PARAMS);
  DataType d;
  EXPECT_EQ(rpcconv::DecodeEnum(static_cast<wire::DataType>(0xffff), &d),
            ErrorCode::INVALID_PARAMS);
  ClientStatus c;
  EXPECT_EQ(rpcconv::DecodeEnum(static_cast<wire::ClientStatus>(9), &c),
            ErrorCode::INVALID_PARAMS);

  // Inside messages.
  {
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<wire::ReplicaDescriptor>();
    Encode(SampleReplicas()[0], r);
    r.setStatus(static_cast<wire::ReplicaStatus>(77));
    Wire w(b);
    ReplicaDescriptor out;
    EXPECT_EQ(Decode(w.Root<wire::ReplicaDescriptor>(), &out), ErrorCode::INVALID_PARAMS);
  }
  {
    capnp::MallocMessageBuilder b;
    auto c = b.initRoot<wire::PutConfig>();
    Encode(PutConfig{}, c);
    c.setDataType(static_cast<wire::DataType>(4));
    Wire w(b);
    PutConfig out;
    EXPECT_EQ(Decode(w.Root<wire::PutConfig>(), &out), ErrorCode::INVALID_PARAMS);
  }
  {
    GetReplicaListResponse r;
    r.replicas = SampleReplicas();
    capnp::MallocMessageBuilder b;
    auto rb = b.initRoot<wire::GetReplicaListResponse>();
    Encode(r, rb);
    rb.getReplicas()[1].setStatus(static_cast<wire::ReplicaStatus>(1000));
    Wire w(b);
    GetReplicaListResponse out;
    EXPECT_EQ(Decode(w.Root<wire::GetReplicaListResponse>(), &out), ErrorCode::INVALID_PARAMS);
  }
}

TEST(RpcConvertTest, RejectsUnknownUnionTags) {
  {
    capnp::MallocMessageBuilder b;
    auto r = b.initRoot<wire::ReplicaDescriptor>();
    Encode(SampleReplicas()[0], r);
    SetDiscriminant<wire::ReplicaDescriptor>(r, 9);
    Wire w(b);
    ReplicaDescriptor out;
    EXPECT_EQ(Decode(w.Root<wire::ReplicaDescriptor>(), &out), ErrorCode::INVALID_PARAMS);
  }
  {
    capnp::MallocMessageBuilder b;
    auto c = b.initRoot<wire::PutConfig>();
    Encode(PutConfig{}, c);
    SetDiscriminant<wire::PutConfig::Checksum>(c.getChecksum(), 3);
    Wire w(b);
    PutConfig out;
    EXPECT_EQ(Decode(w.Root<wire::PutConfig>(), &out), ErrorCode::INVALID_PARAMS);
  }
}

TEST(RpcConvertTest, RejectsOversizedListsAndBlobs) {
  {
    PutConfig c;
    c.preferred_segments.assign(rpcconv::kMaxPreferredSegments + 1, "s");
    capnp::MallocMessageBuilder b;
    Encode(c, b.initRoot<wire::PutConfig>());
    Wire w(b);
    PutConfig out;
    EXPECT_EQ(Decode(w.Root<wire::PutConfig>(), &out), ErrorCode::INVALID_PARAMS);
  }
  {
    GetReplicaListResponse r;
    r.replicas.assign(rpcconv::kMaxReplicasPerObject + 1, SampleReplicas()[0]);
    capnp::MallocMessageBuilder b;
    Encode(r, b.initRoot<wire::GetReplicaListResponse>());
    Wire w(b);
    GetReplicaListResponse out;
    EXPECT_EQ(Decode(w.Root<wire::GetReplicaListResponse>(), &out), ErrorCode::INVALID_PARAMS);
  }
  {
    Segment s;
    s.rkey = std::string(rpcconv::kMaxBlobBytes + 1, 'k');
    capnp::MallocMessageBuilder b;
    Encode(s, b.initRoot<wire::Segment>());
    Wire w(b);
    Segment out;
    EXPECT_EQ(Decode(w.Root<wire::Segment>(), &out), ErrorCode::INVALID_PARAMS);
  }
  {
    std::vector<std::string> keys(10, "key");
    capnp::MallocMessageBuilder b;
    rpcconv::EncodeTexts(keys,
                         b.initRoot<wire::MasterService::BatchExistKeyParams>().initKeys(10));
    Wire w(b);
    auto list = w.Root<wire::MasterService::BatchExistKeyParams>().getKeys();
    std::vector<std::string> out;
    EXPECT_EQ(rpcconv::DecodeTexts(list, 9, &out), ErrorCode::INVALID_PARAMS);
    ASSERT_EQ(rpcconv::DecodeTexts(list, 10, &out), ErrorCode::OK);
    EXPECT_EQ(out, keys);
  }
}

TEST(RpcConvertTest, ErrorCodesOnTheWire) {
  EXPECT_EQ(rpcconv::CodeToWire(ErrorCode::OBJECT_NOT_FOUND), -704);
  EXPECT_EQ(rpcconv::CodeFromWire(-704), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(rpcconv::CodeFromWire(0), ErrorCode::OK);
  EXPECT_EQ(rpcconv::CodeFromWire(123456), ErrorCode::INTERNAL_ERROR);
}

TEST(RpcConvertTest, GuardedDecodeTurnsKjExceptionsIntoInvalidParams) {
  // A message whose root pointer points far outside the segment.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(3);
  auto* bytes = reinterpret_cast<char*>(words.begin());
  std::memset(bytes, 0, words.size() * sizeof(capnp::word));
  uint32_t header[2] = {0, 2};  // one segment of two words
  std::memcpy(bytes, header, 8);
  uint64_t bad_pointer = (uint64_t{1000} << 2) | (uint64_t{1} << 32);  // struct, offset 1000
  std::memcpy(bytes + 8, &bad_pointer, 8);
  ErrorCode code = rpcconv::GuardedDecode([&]() {
    capnp::FlatArrayMessageReader reader(words.asPtr());
    Segment s;
    return Decode(reader.getRoot<wire::Segment>(), &s);
  });
  EXPECT_EQ(code, ErrorCode::INVALID_PARAMS);
}

// --- fuzz ------------------------------------------------------------------

// Decodes every struct a message of root type T can hold; returns the code.
template <typename T>
ErrorCode DecodeAll(typename T::Reader r);

template <>
ErrorCode DecodeAll<wire::MasterService::BatchPutStartParams>(
    wire::MasterService::BatchPutStartParams::Reader r) {
  Decode(r.getClientId());
  std::vector<std::string> keys;
  ErrorCode code = rpcconv::DecodeTexts(r.getKeys(), 65536, &keys);
  if (code != ErrorCode::OK) return code;
  uint64_t sum = 0;
  for (uint64_t s : r.getSizes()) sum += s;
  (void)sum;
  (void)rpcconv::View(r.getTenant());
  PutConfig config;
  return Decode(r.getConfig(), &config);
}

template <>
ErrorCode DecodeAll<wire::MasterService::MountSegmentParams>(
    wire::MasterService::MountSegmentParams::Reader r) {
  Decode(r.getClientId());
  Segment s;
  return Decode(r.getSegment(), &s);
}

template <>
ErrorCode DecodeAll<wire::MasterService::NotifyOffloadSuccessParams>(
    wire::MasterService::NotifyOffloadSuccessParams::Reader r) {
  std::vector<OffloadedObject> items;
  return rpcconv::DecodeList(r.getItems(), 65536, &items);
}

template <>
ErrorCode DecodeAll<wire::MasterService::BatchGetReplicaListResults>(
    wire::MasterService::BatchGetReplicaListResults::Reader r) {
  for (auto item : r.getResults()) {
    (void)item.getCode();
    GetReplicaListResponse resp;
    ErrorCode code = Decode(item.getResponse(), &resp);
    if (code != ErrorCode::OK) return code;
  }
  return ErrorCode::OK;
}

template <>
ErrorCode DecodeAll<wire::MasterService::StatResults>(wire::MasterService::StatResults::Reader r) {
  ObjectInfo info;
  return Decode(r.getInfo(), &info);
}

struct FuzzStats {
  int ok = 0;
  int invalid = 0;
  int exceptions = 0;
};

template <typename T>
void FuzzMessage(capnp::MessageBuilder& builder, uint32_t seed, int iterations,
                 FuzzStats* stats) {
  kj::Array<capnp::word> original = capnp::messageToFlatArray(builder);
  const size_t bytes = original.size() * sizeof(capnp::word);
  // Sanity: the untouched message decodes.
  {
    capnp::FlatArrayMessageReader reader(original.asPtr());
    ASSERT_EQ(DecodeAll<T>(reader.getRoot<T>()), ErrorCode::OK);
  }
  std::mt19937 rng(seed);
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 1 << 20;  // keep the loop fast
  for (int it = 0; it < iterations; ++it) {
    kj::Array<capnp::word> copy = kj::heapArray<capnp::word>(original.size());
    std::memcpy(reinterpret_cast<char*>(copy.begin()),
                reinterpret_cast<const char*>(original.begin()), bytes);
    auto* raw = reinterpret_cast<uint8_t*>(copy.begin());
    const int mode = static_cast<int>(rng() % 4);
    size_t words = copy.size();
    if (mode != 3) {  // flip 1..8 random bits
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) {
        const size_t bit = rng() % (bytes * 8);
        raw[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      }
    }
    if (mode >= 2) words = rng() % (copy.size() + 1);  // truncate
    ErrorCode code = ErrorCode::OK;
    try {
      capnp::FlatArrayMessageReader reader(kj::arrayPtr(copy.begin(), words), options);
      code = DecodeAll<T>(reader.getRoot<T>());
    } catch (const kj::Exception&) {
      ++stats->exceptions;
      continue;
    }
    if (code == ErrorCode::OK) {
      ++stats->ok;
    } else {
      EXPECT_EQ(code, ErrorCode::INVALID_PARAMS);
      ++stats->invalid;
    }
  }
}

TEST(RpcConvertTest, BitFlipFuzzNeverCrashes) {
  FuzzStats stats;
  constexpr int kIterations = 10000;
  {
    capnp::MallocMessageBuilder b;
    auto p = b.initRoot<wire::MasterService::BatchPutStartParams>();
    Encode(UUID::Generate(), p.initClientId());
    p.setTenant("tenant");
    std::vector<std::string> keys;
    for (int i = 0; i < 20; ++i) keys.push_back("key-" + std::to_string(i));
    rpcconv::EncodeTexts(keys, p.initKeys(keys.size()));
    auto sizes = p.initSizes(keys.size());
    for (unsigned i = 0; i < sizes.size(); ++i) sizes.set(i, 100 + i);
    PutConfig c;
    c.preferred_segments = {"a", "b"};
    c.checksum = 7;
    c.group_id = "g";
    Encode(c, p.initConfig());
    FuzzMessage<wire::MasterService::BatchPutStartParams>(b, 1, kIterations, &stats);
  }
  {
    capnp::MallocMessageBuilder b;
    auto p = b.initRoot<wire::MasterService::MountSegmentParams>();
    Encode(UUID::Generate(), p.initClientId());
    Segment s;
    s.id = UUID{3, 4};
    s.name = "seg";
    s.size = 1 << 20;
    s.endpoint = "1.2.3.4:5";
    s.protocol = "rdma";
    s.rkey = Binary(32, 1);
    Encode(s, p.initSegment());
    FuzzMessage<wire::MasterService::MountSegmentParams>(b, 2, kIterations, &stats);
  }
  {
    capnp::MallocMessageBuilder b;
    auto items = b.initRoot<wire::MasterService::NotifyOffloadSuccessParams>().initItems(5);
    for (unsigned i = 0; i < items.size(); ++i) {
      Encode(OffloadedObject{"t", "k" + std::to_string(i), {1, 2, 3, 4, "e:1"}}, items[i]);
    }
    FuzzMessage<wire::MasterService::NotifyOffloadSuccessParams>(b, 3, kIterations, &stats);
  }
  {
    capnp::MallocMessageBuilder b;
    auto results = b.initRoot<wire::MasterService::BatchGetReplicaListResults>().initResults(4);
    for (unsigned i = 0; i < results.size(); ++i) {
      GetReplicaListResponse r;
      r.replicas = SampleReplicas();
      r.size = i;
      results[i].setCode(0);
      Encode(r, results[i].initResponse());
    }
    FuzzMessage<wire::MasterService::BatchGetReplicaListResults>(b, 4, kIterations, &stats);
  }
  {
    capnp::MallocMessageBuilder b;
    ObjectInfo info;
    info.key = "some-key";
    info.replicas = SampleReplicas();
    info.checksum = 1;
    Encode(info, b.initRoot<wire::MasterService::StatResults>().initInfo());
    FuzzMessage<wire::MasterService::StatResults>(b, 5, kIterations, &stats);
  }
  // Every outcome class shows up, i.e. the loop really explores.
  EXPECT_GT(stats.ok, 0);
  EXPECT_GT(stats.invalid, 0);
  EXPECT_GT(stats.exceptions, 0);
  std::printf("fuzz: %d decoded, %d rejected (INVALID_PARAMS), %d kj exceptions\n", stats.ok,
              stats.invalid, stats.exceptions);
}

}  // namespace
}  // namespace shelfmark
