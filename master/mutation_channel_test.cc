// Puts, existence checks and removes on the framed channel
// (rpc/mutation_wire.h) against a real RpcServer and Directory over
// loopback TCP: each answers what the Cap'n Proto method answers, an object
// is visible only once its PutEnd is answered, tenant bindings, roles and
// `force` rights hold, a standby's gate answers NOT_LEADER without touching
// the directory, and pipelined mutations are answered in order.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "auth/token_table.h"
#include "common/socket_io.h"
#include "master/leadership_gate.h"
#include "master/rpc_server_test_util.h"
#include "rpc/lookup_client.h"
#include "rpc/lookup_wire.h"
#include "rpc/mutation_wire.h"
#include "testing/process_util.h"

namespace shelfmark {
namespace {

class MutationChannelTest : public RpcServerFixture {
 protected:
  LookupClientOptions ChannelOptions(const std::string& token = "") {
    return {"127.0.0.1:" + std::to_string(port_), token, 5000};
  }
  // A client id with a mounted segment.
  UUID Writer(const std::string& segment_name = "seg") {
    const UUID id = UUID::Generate();
    EXPECT_EQ(dir_->MountSegment(id, MakeSegment(segment_name)), ErrorCode::OK);
    return id;
  }
};

TEST_F(MutationChannelTest, PutIsVisibleOnlyAfterPutEndAndMatchesCapnp) {
  const UUID id = Writer();
  LookupClient channel(ChannelOptions());
  PutConfig config;
  config.checksum = 0xabcdULL;
  config.data_type = DataType::KVCACHE;
  auto started = channel.PutStart(id, "", "k", 4096, config);
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ((*started)[0].memory.size, 4096u);
  // Not visible before PutEnd, over either protocol.
  EXPECT_EQ(channel.GetReplicaList("", "k").error(), ErrorCode::REPLICA_IS_NOT_READY);
  auto before = channel.ExistKey("", "k");
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(*before);
  // Another client cannot finish it.
  EXPECT_EQ(channel.PutFinish(true, UUID::Generate(), "", "k", ReplicaType::MEMORY),
            ErrorCode::ILLEGAL_CLIENT);
  ASSERT_EQ(channel.PutFinish(true, id, "", "k", ReplicaType::MEMORY), ErrorCode::OK);
  auto after = channel.GetReplicaList("", "k");
  ASSERT_TRUE(after.ok()) << ErrorCodeName(after.error());
  EXPECT_EQ(after->checksum, config.checksum);
  EXPECT_EQ(after->data_type, DataType::KVCACHE);
  EXPECT_EQ(after->replicas[0].memory.buffer_address, (*started)[0].memory.buffer_address);
  // A second put of the key: what Cap'n Proto answers.
  MasterClientOptions capnp_only = ClientOptions(id);
  capnp_only.lookup_channel = false;
  MasterClient capnp(capnp_only);
  EXPECT_EQ(channel.PutStart(id, "", "k", 4096, config).error(),
            capnp.PutStart("", "k", 4096, config).error());
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "PutStart"), 3);
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "PutEnd"), 2);
}

// PutEnd's checksum (a writer that hashes while it copies), over the lookup
// channel and over Cap'n Proto alike: stored before the object is readable,
// a mismatch with PutStart's refused (INVALID_PARAMS, still unfinished).
TEST_F(MutationChannelTest, PutEndCarriesTheChecksumOverEitherProtocol) {
  const UUID id = Writer();
  for (bool framed : {true, false}) {
    MasterClientOptions options = ClientOptions(id);
    options.lookup_channel = framed;
    MasterClient client(options);
    const std::string k = framed ? "framed-" : "capnp-";
    ASSERT_TRUE(client.PutStart("", k + "late", 100, {}).ok());
    ASSERT_EQ(client.PutEnd("", k + "late", ReplicaType::MEMORY, 0x11), ErrorCode::OK);
    EXPECT_EQ(client.GetReplicaList("", k + "late")->checksum, std::optional<uint64_t>(0x11));
    PutConfig early;
    early.checksum = 5;
    ASSERT_TRUE(client.PutStart("", k + "both", 100, early).ok());
    EXPECT_EQ(client.PutEnd("", k + "both", ReplicaType::MEMORY, 6), ErrorCode::INVALID_PARAMS);
    EXPECT_EQ(client.GetReplicaList("", k + "both").error(), ErrorCode::REPLICA_IS_NOT_READY);
    const std::vector<std::string> keys = {k + "a", k + "b"};
    ASSERT_TRUE(client.BatchPutStart("", keys, {10, 20}, {}).ok());
    auto ended = client.BatchPutEnd("", keys, {21, 22});
    ASSERT_TRUE(ended.ok()) << framed;
    EXPECT_EQ(*ended, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OK}));
    EXPECT_EQ(client.GetReplicaList("", k + "b")->checksum, std::optional<uint64_t>(22));
  }
  EXPECT_EQ(Metric("shelfmark_master_rpc_requests_total", "PutEnd"), 4);
}

TEST_F(MutationChannelTest, RevokeUpsertExistAndRemove) {
  const UUID id = Writer();
  LookupClient channel(ChannelOptions());
  ASSERT_TRUE(channel.PutStart(id, "", "r", 100, {}).ok());
  ASSERT_EQ(channel.PutFinish(false, id, "", "r", ReplicaType::MEMORY), ErrorCode::OK);
  EXPECT_EQ(channel.GetReplicaList("", "r").error(), ErrorCode::OBJECT_NOT_FOUND);
  // Upsert: a put with `replace` swaps the object in at PutEnd.
  ASSERT_TRUE(channel.PutStart(id, "", "u", 100, {}).ok());
  ASSERT_EQ(channel.PutFinish(true, id, "", "u", ReplicaType::MEMORY), ErrorCode::OK);
  PutConfig replace;
  replace.replace = true;
  auto again = channel.PutStart(id, "", "u", 200, replace);
  ASSERT_TRUE(again.ok()) << ErrorCodeName(again.error());
  EXPECT_EQ(channel.GetReplicaList("", "u")->size, 100u) << "the old version until PutEnd";
  ASSERT_EQ(channel.PutFinish(true, id, "", "u", ReplicaType::MEMORY), ErrorCode::OK);
  EXPECT_EQ(channel.GetReplicaList("", "u")->size, 200u);
  auto exist = channel.BatchExistKey("", {"u", "r", ""});
  ASSERT_TRUE(exist.ok());
  ASSERT_EQ(exist->size(), 3u);
  EXPECT_TRUE(*(*exist)[0]);
  EXPECT_FALSE(*(*exist)[1]);
  EXPECT_EQ((*exist)[2].error(), dir_->ExistKey("", "").error());
  // The lookup granted a lease: removal needs force, as over Cap'n Proto.
  EXPECT_EQ(channel.Remove("", "u", false), ErrorCode::OBJECT_HAS_LEASE);
  EXPECT_EQ(channel.Remove("", "u", true), ErrorCode::OK);
  EXPECT_EQ(channel.Remove("", "u", true), ErrorCode::OBJECT_NOT_FOUND);
}

TEST_F(MutationChannelTest, BatchFormsAnswerPerKey) {
  const UUID id = Writer();
  LookupClient channel(ChannelOptions());
  const std::vector<std::string> keys = {"a", "b", "a"};
  auto started = channel.BatchPutStart(id, "", keys, {10, 20, 30}, {}, {1, 2, 3});
  ASSERT_TRUE(started.ok()) << ErrorCodeName(started.error());
  ASSERT_EQ(started->size(), 3u);
  EXPECT_TRUE((*started)[0].ok());
  EXPECT_TRUE((*started)[1].ok());
  EXPECT_EQ((*started)[2].error(), ErrorCode::OBJECT_ALREADY_EXISTS);
  auto ended = channel.BatchPutFinish(true, id, "", {"a", "missing"});
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(*ended, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND}));
  auto revoked = channel.BatchPutFinish(false, id, "", {"b"});
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked, std::vector<ErrorCode>{ErrorCode::OK});
  EXPECT_EQ(channel.GetReplicaList("", "a")->checksum, std::optional<uint64_t>(1));
  EXPECT_EQ(channel.GetReplicaList("", "b").error(), ErrorCode::OBJECT_NOT_FOUND);
  auto removed = channel.BatchRemove("", {"a", "b"}, true);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OBJECT_NOT_FOUND}));
  // Mismatched lengths never leave the client; batches over the limit are
  // refused whole by the master.
  EXPECT_EQ(channel.BatchPutStart(id, "", keys, {1}, {}, {}).error(), ErrorCode::INVALID_PARAMS);
  std::vector<std::string> many(kMaxBatch + 1, "k");
  EXPECT_EQ(channel.BatchRemove("", many, false).error(), ErrorCode::INVALID_PARAMS);
}

TEST_F(MutationChannelTest, MasterClientPutsOverTheChannel) {
  MasterClient client(ClientOptions());
  ASSERT_EQ(client.MountSegment(MakeSegment("mc")), ErrorCode::OK);
  Put(client, "k", 512);
  auto exists = client.ExistKey("", "k");
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(*exists);
  auto batch = client.BatchPutStart("", {"x", "y"}, {1, 2}, {});
  ASSERT_TRUE(batch.ok());
  auto ended = client.BatchPutEnd("", {"x", "y"});
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(*ended, (std::vector<ErrorCode>{ErrorCode::OK, ErrorCode::OK}));
  EXPECT_EQ(client.Remove("", "k", true), ErrorCode::OK);
  // The puts came over the channel: its connection is one of the two (the
  // mount went over Cap'n Proto), and the directory holds what was put.
  int open = 0;
  for (int c : server_->OpenConnections()) open += c;
  EXPECT_EQ(open, 2);
  EXPECT_EQ(dir_->CountKeys("", false), 2u);
}

TEST_F(MutationChannelTest, PipelinedMutationsAreAnsweredInOrder) {
  const UUID id = Writer();
  std::string out;
  AppendChallengeRequest(&out);
  AppendPutStartRequest(id, "", "p", 64, {}, &out);
  AppendPutFinishRequest(LookupOp::kPutEnd, id, "", "p", ReplicaType::MEMORY, &out);
  AppendExistRequest("", "p", &out);
  AppendRemoveRequest("", "p", true, &out);
  AppendExistRequest("", "p", &out);
  UniqueFd fd(testing::ConnectLoopback(port_));
  ASSERT_TRUE(fd.valid());
  ASSERT_TRUE(SendAll(fd.get(), out, 5000));
  std::vector<std::string> bodies;
  std::string in;
  char buf[4096];
  while (bodies.size() < 6) {
    uint32_t body = 0;
    while (in.size() < kLookupHeaderBytes ||
           (ParseLookupHeader(in, &body) && in.size() < kLookupHeaderBytes + body)) {
      const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
      ASSERT_GT(n, 0) << "the master closed after " << bodies.size() << " replies";
      in.append(buf, static_cast<size_t>(n));
    }
    ASSERT_TRUE(ParseLookupHeader(in, &body));
    bodies.push_back(in.substr(kLookupHeaderBytes, body));
    in.erase(0, kLookupHeaderBytes + body);
  }
  EXPECT_TRUE(DecodePutStartReply(bodies[1]).ok());
  EXPECT_EQ(DecodeCodeReply(bodies[2]), ErrorCode::OK);
  auto there = DecodeExistReply(bodies[3]);
  ASSERT_TRUE(there.ok());
  EXPECT_TRUE(*there);
  EXPECT_EQ(DecodeCodeReply(bodies[4]), ErrorCode::OK);
  auto gone = DecodeExistReply(bodies[5]);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
}

constexpr const char* kTokens =
    "client client-token-0123456789\n"
    "client acme-token-0123456789 tenant=acme\n"
    "node node-token-0123456789\n";

class MutationChannelAuthTest : public MutationChannelTest {
 protected:
  void Configure(RpcServerOptions& options) override { UseTokens(kTokens, options); }
};

TEST_F(MutationChannelAuthTest, RolesTenantsAndForceHold) {
  const UUID id = Writer();
  LookupClient acme(ChannelOptions("acme-token-0123456789"));
  EXPECT_TRUE(acme.PutStart(id, "acme", "k", 64, {}).ok());
  EXPECT_EQ(acme.PutStart(id, "", "k", 64, {}).error(), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(acme.BatchPutFinish(true, id, "", {"k"}).error(), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(acme.PutFinish(true, id, "acme", "k", ReplicaType::MEMORY), ErrorCode::OK);
  // `force` needs admin.
  EXPECT_EQ(acme.Remove("acme", "k", true), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(acme.BatchRemove("acme", {"k"}, true).error(), ErrorCode::PERMISSION_DENIED);
  // A node may read (exist) but not put.
  LookupClient node(ChannelOptions("node-token-0123456789"));
  EXPECT_EQ(node.PutStart(id, "", "n", 64, {}).error(), ErrorCode::PERMISSION_DENIED);
  EXPECT_TRUE(node.ExistKey("", "n").ok());
  // No token: UNAUTHENTICATED, and nothing was put.
  LookupClient none(ChannelOptions(""));
  EXPECT_EQ(none.PutStart(id, "", "z", 64, {}).error(), ErrorCode::UNAUTHENTICATED);
  EXPECT_FALSE(*dir_->ExistKey("", "z"));
  EXPECT_EQ(dir_->CountKeys("", true), 1u);
}

// The one-round-trip put's calls (and their batch forms) pass the same
// checks: a tenant-bound token reserves and commits only in its tenant, a
// node role neither, and without a token nothing is reserved.
TEST_F(MutationChannelAuthTest, ReserveAndCommitHoldTheSameChecks) {
  const UUID id = Writer();
  LookupClient acme(ChannelOptions("acme-token-0123456789"));
  EXPECT_EQ(acme.ReservePut(id, "", 64, {}).error(), ErrorCode::PERMISSION_DENIED);
  auto grant = acme.ReservePut(id, "acme", 64, {});
  ASSERT_TRUE(grant.ok()) << ErrorCodeName(grant.error());
  EXPECT_EQ(acme.CommitPut(id, "", "k", grant->id, false, {}).error(),
            ErrorCode::PERMISSION_DENIED);
  LookupClient node(ChannelOptions("node-token-0123456789"));
  EXPECT_EQ(node.ReservePut(id, "", 64, {}).error(), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(node.CommitPut(id, "", "k", grant->id, false, {}).error(),
            ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(node.BatchReservePut(id, "", {64}, {}).error(), ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(acme.BatchReservePut(id, "", {64}, {}).error(), ErrorCode::PERMISSION_DENIED);
  auto batch = acme.BatchReservePut(id, "acme", {64, 64}, {});
  ASSERT_TRUE(batch.ok()) << ErrorCodeName(batch.error());
  const std::vector<uint64_t> ids = {(*batch)[0].id, (*batch)[1].id};
  EXPECT_EQ(acme.BatchCommitPut(id, "", {"b0", "b1"}, ids, {}, false, {}).error(),
            ErrorCode::PERMISSION_DENIED);
  EXPECT_EQ(node.BatchCommitPut(id, "", {"b0", "b1"}, ids, {}, false, {}).error(),
            ErrorCode::PERMISSION_DENIED);
  // Without a token (each refusal ends its connection: a client apiece).
  LookupClient none(ChannelOptions(""));
  EXPECT_EQ(none.ReservePut(id, "", 64, {}).error(), ErrorCode::UNAUTHENTICATED);
  LookupClient none_again(ChannelOptions(""));
  EXPECT_EQ(none_again.CommitPut(id, "", "k", grant->id, false, {}).error(),
            ErrorCode::UNAUTHENTICATED);
  LookupClient none_batch(ChannelOptions(""));
  EXPECT_EQ(none_batch.BatchReservePut(id, "", {64}, {}).error(), ErrorCode::UNAUTHENTICATED);
  EXPECT_EQ(dir_->Stats().put_reservations_held, 3u) << "only acme's";
  EXPECT_EQ(dir_->CountKeys("", true), 0u) << "no refused commit made an object";
  auto committed = acme.CommitPut(id, "acme", "k", grant->id, false, {});
  EXPECT_TRUE(committed.ok()) << ErrorCodeName(committed.error());
  EXPECT_TRUE(*dir_->ExistKey("acme", "k"));
  auto batch_committed = acme.BatchCommitPut(id, "acme", {"b0", "b1"}, ids, {7, 8}, true, {});
  ASSERT_TRUE(batch_committed.ok()) << ErrorCodeName(batch_committed.error());
  for (const auto& r : *batch_committed) {
    ASSERT_TRUE(r.ok()) << ErrorCodeName(r.error());
    EXPECT_TRUE(r.value()) << "renewed";
  }
  auto b1 = dir_->GetReplicaList("acme", "b1");
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ(b1->checksum, std::optional<uint64_t>(8));
}

class MutationChannelStandbyTest : public MutationChannelTest {
 protected:
  void Configure(RpcServerOptions& options) override { options.gate = &gate_; }
  // A gate with HA that was never opened: a standby.
  LeadershipGate gate_{[] { return true; }};
};

TEST_F(MutationChannelStandbyTest, AStandbyRefusesWithoutTouchingTheDirectory) {
  const UUID id = Writer();
  LookupClient channel(ChannelOptions());
  EXPECT_EQ(channel.PutStart(id, "", "k", 64, {}).error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(channel.BatchPutStart(id, "", {"k"}, {64}, {}, {}).error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(channel.BatchReservePut(id, "", {64}, {}).error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(channel.BatchCommitPut(id, "", {"k"}, {1}, {}, true, {}).error(),
            ErrorCode::NOT_LEADER);
  EXPECT_EQ(dir_->Stats().put_reservations_held, 0u);
  EXPECT_EQ(channel.Remove("", "k", false), ErrorCode::NOT_LEADER);
  EXPECT_EQ(channel.ExistKey("", "k").error(), ErrorCode::NOT_LEADER);
  EXPECT_EQ(dir_->CountKeys("", true), 0u);
  gate_.Open();
  EXPECT_TRUE(channel.PutStart(id, "", "k", 64, {}).ok());
}

}  // namespace
}  // namespace shelfmark
