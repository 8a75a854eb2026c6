#include "transport/ucx_wire.h"

#include "transport/proof_parts.h"

namespace shelfmark::ucx_wire {

std::string EncodeNodeAddress(const NodeAddress& address) {
  return Writer()
      .Put(kMagicAddress)
      .Put(kVersion)
      .Put(address.ticket)
      .Put(address.nonce)
      .Bytes(address.worker_address)
      .Bytes(address.boot_id)
      .Bytes(address.share_name)
      .Take();
}

std::optional<NodeAddress> DecodeNodeAddress(const void* bytes, size_t size) {
  Reader in(bytes, size);
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  NodeAddress address;
  address.ticket = in.Get<uint64_t>();
  address.nonce = in.Get<auth::Nonce>();
  address.worker_address = in.Bytes();
  address.boot_id = in.Bytes();
  address.share_name = in.Bytes();
  if (!in.done() || magic != kMagicAddress || version != kVersion ||
      address.worker_address.empty() || address.ticket == 0) {
    return std::nullopt;
  }
  return address;
}

std::string EncodeHello(const Hello& hello) {
  return Writer()
      .Put(kMagicHello)
      .Put(kVersion)
      .Put(hello.conn_id)
      .Put(hello.client_id.hi)
      .Put(hello.client_id.lo)
      .Put(hello.ticket)
      .Put(hello.client_nonce)
      .Put(hello.proof)
      .Bytes(hello.worker_address)
      .Take();
}

std::optional<Hello> DecodeHello(const void* bytes, size_t size) {
  Reader in(bytes, size);
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  Hello hello;
  hello.conn_id = in.Get<uint64_t>();
  hello.client_id.hi = in.Get<uint64_t>();
  hello.client_id.lo = in.Get<uint64_t>();
  hello.ticket = in.Get<uint64_t>();
  hello.client_nonce = in.Get<auth::Nonce>();
  hello.proof = in.Get<auth::Proof>();
  hello.worker_address = in.Bytes();
  if (!in.done() || magic != kMagicHello || version != kVersion) return std::nullopt;
  return hello;
}

std::string EncodeHelloReply(const HelloReply& reply) {
  return Writer()
      .Put(kMagicHello)
      .Put(kVersion)
      .Put(static_cast<uint8_t>(reply.accepted))
      .Put(reply.conn_id)
      .Put(reply.session.id)
      .Put(reply.session.secret)
      .Put(reply.proof)
      .Take();
}

std::optional<HelloReply> DecodeHelloReply(const void* bytes, size_t size) {
  Reader in(bytes, size);
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  const auto accepted = in.Get<uint8_t>();
  HelloReply reply;
  reply.conn_id = in.Get<uint64_t>();
  reply.session.id = in.Get<uint64_t>();
  reply.session.secret = in.Get<uint64_t>();
  reply.proof = in.Get<auth::Proof>();
  if (!in.done() || magic != kMagicHello || version != kVersion || accepted > 1) {
    return std::nullopt;
  }
  reply.accepted = accepted == 1;
  return reply;
}

auth::Proof UcxClientProof(std::string_view token, const auth::Nonce& node_nonce,
                           const Hello& hello) {
  return auth::Prove(token, "ucx/client",
                     {auth::Bytes(node_nonce), auth::Bytes(hello.client_nonce),
                      Le64Part(hello.ticket), Le64Part(hello.conn_id), UuidPart(hello.client_id),
                      hello.worker_address});
}

auth::Proof UcxNodeProof(std::string_view token, const auth::Nonce& node_nonce,
                         const Hello& hello, const HelloReply& reply) {
  return auth::Prove(token, "ucx/node",
                     {auth::Bytes(node_nonce), auth::Bytes(hello.client_nonce),
                      Le64Part(hello.ticket), Le64Part(hello.conn_id), UuidPart(hello.client_id),
                      Le64Part(reply.session.id), Le64Part(reply.session.secret)});
}

}  // namespace shelfmark::ucx_wire
