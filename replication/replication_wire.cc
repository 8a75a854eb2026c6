#include "replication/replication_wire.h"

#include <cstring>
#include <utility>

#include "common/wire_bytes.h"
#include "snapshot/codec.h"

namespace shelfmark {
namespace {

size_t Begin(ReplicationMsg msg, std::string* out) {
  const size_t start = out->size();
  wire::Appender(out).Put(kReplicationFrameTag).Put(uint32_t{0}).Put(static_cast<uint8_t>(msg));
  return start;
}

void End(std::string* out, size_t start) {
  const uint32_t body = static_cast<uint32_t>(out->size() - start - kReplicationHeaderBytes);
  std::memcpy(out->data() + start + 4, &body, sizeof(body));
}

// A reader past the body's type byte, which must be `msg`.
bool Open(std::string_view body, ReplicationMsg msg, wire::Reader* r) {
  *r = wire::Reader(body.data(), body.size());
  return r->Get<uint8_t>() == static_cast<uint8_t>(msg);
}

}  // namespace

void AppendHello(const ReplicationHello& hello, std::string* out) {
  const size_t start = Begin(ReplicationMsg::kHello, out);
  wire::Appender(out).Put(kReplicationVersion).Bytes(hello.cluster_id).Bytes(hello.client_nonce);
  if (hello.flags != 0 || !hello.id.empty()) wire::Appender(out).Put(hello.flags);
  if (!hello.id.empty()) wire::Appender(out).Bytes(hello.id);
  End(out, start);
}

void AppendProof(std::string_view proof, std::string* out) {
  const size_t start = Begin(ReplicationMsg::kProof, out);
  wire::Appender(out).Bytes(proof);
  End(out, start);
}

void AppendAck(uint64_t seq, std::string* out) {
  const size_t start = Begin(ReplicationMsg::kAck, out);
  wire::Appender(out).Put(seq);
  End(out, start);
}

void AppendChallenge(const ReplicationChallenge& c, std::string* out) {
  const size_t start = Begin(ReplicationMsg::kChallenge, out);
  wire::Appender(out)
      .Put(static_cast<int32_t>(c.code))
      .Put(static_cast<uint8_t>(c.required))
      .Bytes(c.server_nonce);
  End(out, start);
}

void AppendWelcome(const ReplicationWelcome& w, std::string* out) {
  const size_t start = Begin(ReplicationMsg::kWelcome, out);
  wire::Appender(out).Put(static_cast<int32_t>(w.code)).Bytes(w.server_proof);
  End(out, start);
}

namespace {

// A batch frame; its shards compressed or stored (replication_wire.h).
void AppendBatchFrame(const ReplicationBatch& batch, bool compress, std::string* out) {
  const size_t start = Begin(ReplicationMsg::kBatch, out);
  const ChangeSet& c = batch.changes;
  wire::Appender a(out);
  a.Put(batch.flags).Put(c.seq).Put(static_cast<uint8_t>(c.has_segments));
  if (c.has_segments) a.Bytes(EncodeSegments(c.segments));
  a.Put(static_cast<uint32_t>(c.shards.size()));
  for (const ShardState& shard : c.shards) {
    if (compress) {
      a.Bytes(EncodeShard(shard));
      continue;
    }
    // Stored in place: its length is patched in once written.
    const size_t at = out->size();
    a.Put(uint32_t{0});
    AppendShardStored(shard, out);
    const auto bytes = static_cast<uint32_t>(out->size() - at - sizeof(uint32_t));
    std::memcpy(out->data() + at, &bytes, sizeof(bytes));  // little-endian, as wire::Appender
  }
  a.Put(static_cast<uint32_t>(c.removed.size()));
  for (const auto& [tenant, key] : c.removed) a.Bytes(tenant).Bytes(key);
  a.Put(static_cast<uint32_t>(c.held.size()));
  for (const HeldRangeState& h : c.held) {
    a.Put(h.id).Put(h.segment.hi).Put(h.segment.lo).Put(h.offset).Put(h.size).Put(h.remaining_ms);
  }
  a.Put(static_cast<uint32_t>(c.released.size()));
  for (uint64_t id : c.released) a.Put(id);
  End(out, start);
}

}  // namespace

void AppendBatch(const ReplicationBatch& batch, std::string* out) {
  AppendBatchFrame(batch, /*compress=*/false, out);
}

void AppendCopyBatch(const ReplicationBatch& batch, std::string* out) {
  AppendBatchFrame(batch, /*compress=*/true, out);
}

bool ParseReplicationHeader(std::string_view header, uint32_t* body_bytes) {
  if (header.size() < kReplicationHeaderBytes) return false;
  wire::Reader r(header.data(), kReplicationHeaderBytes);
  if (r.Get<uint32_t>() != kReplicationFrameTag) return false;
  *body_bytes = r.Get<uint32_t>();
  return true;
}

Result<ReplicationMsg> MessageOf(std::string_view body) {
  if (body.empty()) return ErrorCode::DATA_CORRUPTED;
  return static_cast<ReplicationMsg>(static_cast<uint8_t>(body[0]));
}

Result<ReplicationHello> DecodeHello(std::string_view body) {
  wire::Reader r(nullptr, 0);
  if (!Open(body, ReplicationMsg::kHello, &r)) return ErrorCode::DATA_CORRUPTED;
  const uint8_t version = r.Get<uint8_t>();
  ReplicationHello hello;
  hello.cluster_id = r.Bytes();
  hello.client_nonce = r.Bytes();
  if (!r.done()) hello.flags = r.Get<uint8_t>();
  if (!r.done()) hello.id = r.Bytes();
  if (!r.done() || (hello.flags & ~kHelloWatch) != 0) return ErrorCode::DATA_CORRUPTED;
  if (version != kReplicationVersion) return ErrorCode::VERSION_MISMATCH;
  return hello;
}

Result<std::string> DecodeProof(std::string_view body) {
  wire::Reader r(nullptr, 0);
  if (!Open(body, ReplicationMsg::kProof, &r)) return ErrorCode::DATA_CORRUPTED;
  std::string proof = r.Bytes();
  if (!r.done()) return ErrorCode::DATA_CORRUPTED;
  return proof;
}

Result<uint64_t> DecodeAck(std::string_view body) {
  wire::Reader r(nullptr, 0);
  if (!Open(body, ReplicationMsg::kAck, &r)) return ErrorCode::DATA_CORRUPTED;
  const uint64_t seq = r.Get<uint64_t>();
  if (!r.done()) return ErrorCode::DATA_CORRUPTED;
  return seq;
}

Result<ReplicationChallenge> DecodeChallenge(std::string_view body) {
  wire::Reader r(nullptr, 0);
  if (!Open(body, ReplicationMsg::kChallenge, &r)) return ErrorCode::DATA_CORRUPTED;
  ReplicationChallenge c;
  c.code = ErrorCodeFromInt(r.Get<int32_t>());
  const uint8_t required = r.Get<uint8_t>();
  c.server_nonce = r.Bytes();
  if (!r.done() || required > 1) return ErrorCode::DATA_CORRUPTED;
  c.required = required == 1;
  return c;
}

Result<ReplicationWelcome> DecodeWelcome(std::string_view body) {
  wire::Reader r(nullptr, 0);
  if (!Open(body, ReplicationMsg::kWelcome, &r)) return ErrorCode::DATA_CORRUPTED;
  ReplicationWelcome w;
  w.code = ErrorCodeFromInt(r.Get<int32_t>());
  w.server_proof = r.Bytes();
  if (!r.done()) return ErrorCode::DATA_CORRUPTED;
  return w;
}

Result<ReplicationBatch> DecodeBatch(std::string_view body) {
  wire::Reader r(nullptr, 0);
  if (!Open(body, ReplicationMsg::kBatch, &r)) return ErrorCode::DATA_CORRUPTED;
  ReplicationBatch batch;
  batch.flags = r.Get<uint8_t>();
  ChangeSet& c = batch.changes;
  c.seq = r.Get<uint64_t>();
  const uint8_t has_segments = r.Get<uint8_t>();
  if (has_segments > 1 || (batch.flags & ~(kBatchReset | kBatchSynced)) != 0) {
    return ErrorCode::DATA_CORRUPTED;
  }
  if (has_segments == 1) {
    auto segments = DecodeSegments(r.BytesView());
    if (!segments.ok()) return ErrorCode::DATA_CORRUPTED;
    c.has_segments = true;
    c.segments = std::move(*segments);
  }
  const uint32_t shards = r.Get<uint32_t>();
  if (shards > r.left() / 4) return ErrorCode::DATA_CORRUPTED;
  for (uint32_t i = 0; i < shards; ++i) {
    auto shard = DecodeShard(r.BytesView());
    if (!shard.ok()) return ErrorCode::DATA_CORRUPTED;
    c.shards.push_back(std::move(*shard));
  }
  const uint32_t removed = r.Get<uint32_t>();
  if (removed > r.left() / 8) return ErrorCode::DATA_CORRUPTED;
  for (uint32_t i = 0; i < removed; ++i) {
    std::string tenant = r.Bytes();
    std::string key = r.Bytes();
    c.removed.emplace_back(std::move(tenant), std::move(key));
  }
  const uint32_t held = r.Get<uint32_t>();
  if (held > r.left() / kHeldRangeBytes) return ErrorCode::DATA_CORRUPTED;
  c.held.resize(held);
  for (HeldRangeState& h : c.held) {
    h.id = r.Get<uint64_t>();
    h.segment.hi = r.Get<uint64_t>();
    h.segment.lo = r.Get<uint64_t>();
    h.offset = r.Get<uint64_t>();
    h.size = r.Get<uint64_t>();
    h.remaining_ms = r.Get<int64_t>();
  }
  const uint32_t released = r.Get<uint32_t>();
  if (released > r.left() / 8) return ErrorCode::DATA_CORRUPTED;
  c.released.resize(released);
  for (uint64_t& id : c.released) id = r.Get<uint64_t>();
  if (!r.done()) return ErrorCode::DATA_CORRUPTED;
  return batch;
}

}  // namespace shelfmark
