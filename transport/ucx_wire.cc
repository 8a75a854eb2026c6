#include "transport/ucx_wire.h"

namespace shelfmark::ucx_wire {

std::string EncodeNodeAddress(const NodeAddress& address) {
  return Writer()
      .Put(kMagicAddress)
      .Put(kVersion)
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
  address.worker_address = in.Bytes();
  address.boot_id = in.Bytes();
  address.share_name = in.Bytes();
  if (!in.done() || magic != kMagicAddress || version != kVersion ||
      address.worker_address.empty()) {
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
      .Bytes(hello.cluster_token)
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
  hello.cluster_token = in.Bytes();
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
  if (!in.done() || magic != kMagicHello || version != kVersion || accepted > 1) {
    return std::nullopt;
  }
  reply.accepted = accepted == 1;
  return reply;
}

}  // namespace shelfmark::ucx_wire
