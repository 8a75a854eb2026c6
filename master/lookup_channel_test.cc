// The lookup channel (rpc/lookup_wire.h) on the master's RPC port, over real
// loopback TCP against a real Directory: it answers exactly what Cap'n Proto
// answers, both protocols share the port, tokens and tenant bindings hold,
// and garbage on it ends only its own connection; a lookup and its Cap'n
// Proto fallback share one call timeout.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "auth/token_table.h"
#include "common/socket_io.h"
#include "master/rpc_server_test_util.h"
#include "rpc/lookup_client.h"
#include "rpc/lookup_wire.h"
#include "testing/process_util.h"
#include "testing/wait_for.h"

namespace shelfmark {
namespace {

void ExpectSameResponse(const Result<GetReplicaListResponse>& a,
                        const Result<GetReplicaListResponse>& b) {
  ASSERT_EQ(a.ok(), b.ok());
  if (!a.ok()) {
    EXPECT_EQ(a.error(), b.error());
    return;
  }
  EXPECT_EQ(a->size, b->size);
  EXPECT_EQ(a->checksum, b->checksum);
  EXPECT_EQ(a->data_type, b->data_type);
  EXPECT_EQ(a->lease_ttl_ms, b->lease_ttl_ms);
  ASSERT_EQ(a->replicas.size(), b->replicas.size());
  for (size_t i = 0; i < a->replicas.size(); ++i) {
    const ReplicaDescriptor& x = a->replicas[i];
    const ReplicaDescriptor& y = b->replicas[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.status, y.status);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.memory.endpoint, y.memory.endpoint);
    EXPECT_EQ(x.memory.protocol, y.memory.protocol);
    EXPECT_EQ(x.memory.buffer_address, y.memory.buffer_address);
    EXPECT_EQ(x.memory.size, y.memory.size);
    EXPECT_EQ(x.memory.rkey, y.memory.rkey);
    EXPECT_EQ(x.memory.segment_id, y.memory.segment_id);
    EXPECT_EQ(x.disk.client_id, y.disk.client_id);
    EXPECT_EQ(x.disk.endpoint, y.disk.endpoint);
  }
}

class LookupChannelTest : public RpcServerFixture {
 protected:
  LookupClientOptions ChannelOptions(const std::string& token = "") {
    return {"127.0.0.1:" + std::to_string(port_), token, 5000};
  }
  // Puts `keys` (one replica each; "ck" with a checksum) through Cap'n Proto.
  void PutObjects(const std::vector<std::string>& keys, const std::string& tenant = "") {
    MasterClient writer(ClientOptions());
    ASSERT_EQ(writer.MountSegment(MakeSegment("seg-" + tenant)), ErrorCode::OK);
    for (const auto& key : keys) {
      PutConfig config;
      if (key == "ck") config.checksum = 0xfeedULL;
      Put(writer, key, 1000 + key.size(), tenant, config);
    }
  }
};

TEST_F(LookupChannelTest, AnswersWhatCapnpAnswers) {
  PutObjects({"a", "bb", "ck"});
  ASSERT_EQ(dir_->MountLocalDisk(UUID::Generate(), false, "10.0.0.9:7000"), ErrorCode::OK);
  MasterClientOptions capnp_only = ClientOptions();
  capnp_only.lookup_channel = false;
  MasterClient capnp(capnp_only);
  LookupClient channel(ChannelOptions());
  const std::string too_long(5000, 'k');
  for (const std::string key : {"a", "bb", "ck", "missing", "", too_long.c_str()}) {
    SCOPED_TRACE(key.substr(0, 16));
    ExpectSameResponse(channel.GetReplicaList("", key), capnp.GetReplicaList("", key));
  }
  const std::vector<std::string> keys = {"a", "missing", "ck", "", "bb"};
  auto batch = channel.BatchGetReplicaList("", keys);
  auto expected = capnp.BatchGetReplicaList("", keys);
  ASSERT_TRUE(batch.ok()) << ErrorCodeName(batch.error());
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(batch->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) ExpectSameResponse((*batch)[i], (*expected)[i]);
  EXPECT_TRUE(channel.ever_answered());
  // Both protocols are counted under the same methods.
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "GetReplicaList"), 12);
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "BatchGetReplicaList"), 2);
}

TEST_F(LookupChannelTest, MasterClientUsesTheChannelAndCapnpStillServes) {
  PutObjects({"k"});
  MasterClient client(ClientOptions());
  auto r = client.GetReplicaList("", "k");
  ASSERT_TRUE(r.ok()) << ErrorCodeName(r.error());
  EXPECT_EQ(r->replicas.size(), 1u);
  // The same client's other calls (Stat: Cap'n Proto) share the port.
  auto info = client.Stat("", "k");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->key, "k");
  // One connection per protocol (the writer's own connections from
  // PutObjects close on the server's side a moment after the writer goes).
  int open = 0;
  testing::WaitFor(
      [&] {
        open = 0;
        for (int c : server_->OpenConnections()) open += c;
        return open == 2;
      },
      10'000);
  EXPECT_EQ(open, 2);
}

TEST_F(LookupChannelTest, BatchesOverTheLimitAreRefusedWhole) {
  LookupClient channel(ChannelOptions());
  std::vector<std::string> keys(kMaxBatch + 1, "k");
  auto r = channel.BatchGetReplicaList("", keys);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(LookupChannelTest, GarbageEndsOnlyItsOwnConnection) {
  PutObjects({"k"});
  LookupClient good(ChannelOptions());
  ASSERT_TRUE(good.GetReplicaList("", "k").ok());
  // A lookup frame with an unknown op: one INVALID_PARAMS reply, then the end.
  {
    int fd = testing::ConnectLoopback(port_);
    ASSERT_GE(fd, 0);
    std::string frame;
    const size_t start = BeginLookupFrame(&frame);
    frame += "\x7fjunk";
    EndLookupFrame(&frame, start);
    ASSERT_TRUE(SendAll(fd, frame, 5000));
    std::string reply;
    ASSERT_TRUE(ReceiveAll(fd, &reply, 1 << 16, 5000));  // the server closes
    uint32_t body = 0;
    ASSERT_TRUE(ParseLookupHeader(reply, &body));
    ASSERT_EQ(reply.size(), kLookupHeaderBytes + body);
    EXPECT_EQ(DecodeGetReply(reply.substr(kLookupHeaderBytes)).error(), ErrorCode::INVALID_PARAMS);
    ::close(fd);
  }
  // A frame declaring more than the request limit: dropped unanswered.
  {
    int fd = testing::ConnectLoopback(port_);
    ASSERT_GE(fd, 0);
    std::string header;
    header.append(reinterpret_cast<const char*>(&kLookupFrameTag), 4);
    const uint32_t huge = 0xffffffffu;
    header.append(reinterpret_cast<const char*>(&huge), 4);
    ASSERT_TRUE(SendAll(fd, header, 5000));
    EXPECT_TRUE(testing::WaitPeerClosed(fd, 5000));
    ::close(fd);
  }
  // A second frame that is not a lookup frame: the connection ends.
  {
    int fd = testing::ConnectLoopback(port_);
    ASSERT_GE(fd, 0);
    std::string frames;
    AppendGetRequest("", "k", &frames);
    frames += std::string(16, '\0');
    ASSERT_TRUE(SendAll(fd, frames, 5000));
    std::string reply;
    ASSERT_TRUE(ReceiveAll(fd, &reply, 1 << 16, 5000));
    uint32_t body = 0;
    ASSERT_TRUE(ParseLookupHeader(reply, &body));
    EXPECT_TRUE(DecodeGetReply(reply.substr(kLookupHeaderBytes, body)).ok());
    ::close(fd);
  }
  EXPECT_TRUE(good.GetReplicaList("", "k").ok());
  MasterClient capnp(ClientOptions());
  EXPECT_TRUE(capnp.ExistKey("", "k").ok());
}

TEST_F(LookupChannelTest, PipelinedRequestsAreAnsweredInOrder) {
  PutObjects({"k0", "k1", "k2"});
  int fd = testing::ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  std::string frames;
  for (const char* key : {"k0", "nope", "k2", "k1"}) AppendGetRequest("", key, &frames);
  ASSERT_TRUE(SendAll(fd, frames, 5000));
  ::shutdown(fd, SHUT_WR);
  std::string replies;
  ASSERT_TRUE(ReceiveAll(fd, &replies, 1 << 20, 5000));
  ::close(fd);
  std::vector<Result<GetReplicaListResponse>> got;
  for (size_t pos = 0; pos < replies.size();) {
    uint32_t body = 0;
    ASSERT_TRUE(ParseLookupHeader(replies.substr(pos), &body));
    got.push_back(DecodeGetReply(replies.substr(pos + kLookupHeaderBytes, body)));
    pos += kLookupHeaderBytes + body;
  }
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0]->size, 1002u);
  EXPECT_EQ(got[1].error(), ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ(got[2]->size, 1002u);
  ASSERT_TRUE(got[3].ok());
  // Each reply is its own key's: the objects lie at different addresses.
  EXPECT_NE(got[3]->replicas[0].memory.buffer_address, got[0]->replicas[0].memory.buffer_address);
  EXPECT_NE(got[3]->replicas[0].memory.buffer_address, got[2]->replicas[0].memory.buffer_address);
}

// A listening port whose owner never accepts nor answers (a master that
// hangs): the kernel completes each connection into the accept queue and
// keeps what the client sends, for the test to look at afterwards.
class SilentPort {
 public:
  SilentPort() : fd_(testing::ListenLoopback(64, &port_)) {}
  uint16_t port() const { return port_; }
  bool listening() const { return fd_.valid(); }

  // The first four bytes of each connection made so far, in the order they
  // were made: a marker connection goes last in the (FIFO) accept queue,
  // and everything ahead of it is taken.
  std::vector<std::string> Connections() {
    std::vector<std::string> heads;
    UniqueFd marker(testing::ConnectLoopback(port_));
    const uint16_t marker_port = LocalPort(marker.get());
    while (true) {
      sockaddr_in peer{};
      socklen_t len = sizeof(peer);
      UniqueFd conn(::accept(fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len));
      if (!conn.valid() || ntohs(peer.sin_port) == marker_port) return heads;
      std::string head(4, '\0');
      const ssize_t n = WaitFd(conn.get(), POLLIN, 5000)
                            ? ::recv(conn.get(), head.data(), head.size(), MSG_DONTWAIT)
                            : 0;
      head.resize(n > 0 ? static_cast<size_t>(n) : 0);
      heads.push_back(head);
    }
  }

 private:
  static uint16_t LocalPort(int fd) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return 0;
    return ntohs(local.sin_port);
  }

  uint16_t port_ = 0;
  UniqueFd fd_;
};

std::string LookupTag() {
  std::string tag(4, '\0');
  std::memcpy(tag.data(), &kLookupFrameTag, 4);
  return tag;
}

// A lookup takes at most one call timeout (docs/ha.md, "Finding the
// leader"): the lookup channel and its Cap'n Proto fallback share it. A
// master that never answers holds the channel's request for the whole
// call_timeout_ms, which leaves the fallback no time: it is not tried, and
// the master saw one connection, the channel's. Before, the fallback
// connected and waited a second call_timeout_ms.
TEST(LookupDeadline, AChannelThatSpendsTheCallsTimeoutLeavesNothingForTheFallback) {
  SilentPort silent;
  ASSERT_TRUE(silent.listening());
  MasterClientOptions o;
  o.address = "127.0.0.1:" + std::to_string(silent.port());
  o.call_timeout_ms = 300;
  {
    MasterClient client(o);
    EXPECT_EQ(client.GetReplicaList("", "k").error(), ErrorCode::RPC_FAIL);
  }
  {
    MasterClient client(o);
    EXPECT_EQ(client.BatchGetReplicaList("", {"k", "l"}).error(), ErrorCode::RPC_FAIL);
  }
  const std::vector<std::string> heads = silent.Connections();
  EXPECT_EQ(heads, std::vector<std::string>(2, LookupTag()))
      << "one connection per lookup, the lookup channel's";
}

constexpr const char* kTokens =
    "client client-token-0123456789\n"
    "client acme-token-0123456789 tenant=acme\n";

class LookupChannelAuthTest : public LookupChannelTest {
 protected:
  void Configure(RpcServerOptions& options) override { UseTokens(kTokens, options); }
  // Puts through an authenticated Cap'n Proto client.
  void PutWithToken(const std::string& key, const std::string& tenant) {
    MasterClientOptions o = ClientOptions();
    o.token = "client-token-0123456789";
    o.lookup_channel = false;
    MasterClient writer(o);
    Segment segment = MakeSegment("seg-" + tenant);
    ASSERT_EQ(dir_->MountSegment(writer.client_id(), segment), ErrorCode::OK);
    Put(writer, key, 1000, tenant);
  }
};

TEST_F(LookupChannelAuthTest, TokensAndTenantBindingsHold) {
  PutWithToken("k", "");
  PutWithToken("k", "acme");
  LookupClient right(ChannelOptions("client-token-0123456789"));
  EXPECT_TRUE(right.GetReplicaList("", "k").ok());
  LookupClient acme(ChannelOptions("acme-token-0123456789"));
  EXPECT_TRUE(acme.GetReplicaList("acme", "k").ok());
  auto other_tenant = acme.GetReplicaList("", "k");
  ASSERT_FALSE(other_tenant.ok());
  EXPECT_EQ(other_tenant.error(), ErrorCode::PERMISSION_DENIED);
  auto other_batch = acme.BatchGetReplicaList("", {"k"});
  ASSERT_FALSE(other_batch.ok());
  EXPECT_EQ(other_batch.error(), ErrorCode::PERMISSION_DENIED);

  LookupClient wrong(ChannelOptions("wrong-token"));
  auto refused = wrong.GetReplicaList("", "k");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(), ErrorCode::UNAUTHENTICATED);
  LookupClient none(ChannelOptions(""));
  auto anonymous = none.GetReplicaList("", "k");
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.error(), ErrorCode::UNAUTHENTICATED);
  // MasterClient with the right token reads through the channel.
  MasterClientOptions o = ClientOptions();
  o.token = "client-token-0123456789";
  MasterClient client(o);
  EXPECT_TRUE(client.GetReplicaList("", "k").ok());
}

}  // namespace
}  // namespace shelfmark
