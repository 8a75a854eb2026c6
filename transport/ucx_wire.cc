#include "transport/ucx_wire.h"

namespace shelfmark::ucx_wire {

std::string EncodeHello(const Hello& hello) {
  return Writer()
      .Put(kMagicHello)
      .Put(kVersion)
      .Put(hello.conn_id)
      .Put(hello.client_id.hi)
      .Put(hello.client_id.lo)
      .Bytes(hello.cluster_token)
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
  if (!in.done() || magic != kMagicHello || version != kVersion) return std::nullopt;
  return hello;
}

std::string EncodeHelloReply(const HelloReply& reply) {
  return Writer()
      .Put(kMagicHello)
      .Put(kVersion)
      .Put(static_cast<uint8_t>(reply.accepted))
      .Put(reply.conn_id)
      .Take();
}

std::optional<HelloReply> DecodeHelloReply(const void* bytes, size_t size) {
  Reader in(bytes, size);
  const auto magic = in.Get<uint32_t>();
  const auto version = in.Get<uint8_t>();
  const auto accepted = in.Get<uint8_t>();
  HelloReply reply;
  reply.conn_id = in.Get<uint64_t>();
  if (!in.done() || magic != kMagicHello || version != kVersion || accepted > 1) {
    return std::nullopt;
  }
  reply.accepted = accepted == 1;
  return reply;
}

}  // namespace shelfmark::ucx_wire
