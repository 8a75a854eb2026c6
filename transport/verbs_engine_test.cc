// Tests of the "rdma" engine against real RDMA devices. A node engine on
// SHELFMARK_RDMA_DEVICE listens on SHELFMARK_RDMA_SERVER_IP; a client engine
// on SHELFMARK_RDMA_CLIENT_DEVICE (default: the same device) connects to it
// through rdma_cm. The soft-RoCE VM (tests/softroce/) sets these to rxe0 /
// rxe1 over a veth pair. Without an RDMA device (a host kernel without
// InfiniBand) the device tests skip with "no RDMA device"; the private-data
// codec and proof tests run everywhere.
#include "transport/verbs_engine.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/host_port.h"
#include "transport/verbs_connection.h"
#include "transport/verbs_device.h"

namespace shelfmark {
namespace {

constexpr uint64_t kSegmentSize = 8 << 20;
constexpr uint64_t kBufferSize = 8 << 20;
constexpr int64_t kTimeoutMs = 10'000;  // emulated CPUs are slow; failures end sooner

std::string Env(const char* name, std::string fallback = "") {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

void Fill(uint8_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>((i * 2654435761u + seed) >> 13);
}

// --- private data (no device needed) ------------------------------------------------

auth::Nonce NonceOf(uint8_t seed) {
  auth::Nonce nonce;
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(seed * 7 + i);
  return nonce;
}

TEST(VerbsConnectRequestTest, BothRequestsRoundTripAndFitTheConnectLimit) {
  const VerbsConnectHello hello{UUID::Generate(), NonceOf(1)};
  const VerbsConnectProof proof{0x0102030405060708ull,
                                VerbsClientProof("token-a", {9, NonceOf(2)}, hello)};
  for (const VerbsConnectRequest& request : {VerbsConnectRequest(hello), VerbsConnectRequest(proof)}) {
    VerbsConnectData bytes = EncodeConnectRequest(request);
    EXPECT_EQ(bytes.size(), 56u);  // RC connect private data limit for rdma_cm (RDMA_PS_TCP)
    std::optional<VerbsConnectRequest> back = DecodeConnectRequest(bytes.data(), bytes.size());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, request);
    // The CM may pad private data: longer decodes the same.
    std::vector<uint8_t> padded(bytes.begin(), bytes.end());
    padded.resize(92, 0);
    EXPECT_EQ(DecodeConnectRequest(padded.data(), padded.size()), request);
  }
}

TEST(VerbsConnectRequestTest, RejectsShortOrForeignData) {
  auto bytes = EncodeConnectRequest(VerbsConnectHello{UUID::Generate(), NonceOf(3)});
  EXPECT_FALSE(DecodeConnectRequest(bytes.data(), bytes.size() - 1).has_value());
  EXPECT_FALSE(DecodeConnectRequest(nullptr, 0).has_value());
  auto flipped = [&](size_t at, uint8_t value) {
    VerbsConnectData other = bytes;
    other[at] = value;
    return DecodeConnectRequest(other.data(), other.size()).has_value();
  };
  EXPECT_FALSE(flipped(0, 'X'));  // magic
  EXPECT_FALSE(flipped(4, 1));    // the token-digest version: refused
  EXPECT_FALSE(flipped(4, 99));   // unknown version
  EXPECT_FALSE(flipped(5, 0));    // unknown kind
  EXPECT_FALSE(flipped(5, 3));
  auto proof = EncodeConnectRequest(VerbsConnectProof{0, {}});  // ticket 0 is never issued
  EXPECT_FALSE(DecodeConnectRequest(proof.data(), proof.size()).has_value());
}

TEST(VerbsConnectRequestTest, ChallengeAndAcceptRoundTripAndFitTheirLimits) {
  const VerbsChallenge challenge{77, NonceOf(4)};
  auto bytes = EncodeChallenge(challenge);
  EXPECT_LE(bytes.size(), 148u);  // IB CM REJ private data
  EXPECT_EQ(DecodeChallenge(bytes.data(), bytes.size()), challenge);
  std::vector<uint8_t> padded(bytes.begin(), bytes.end());
  padded.resize(148, 0);
  EXPECT_EQ(DecodeChallenge(padded.data(), padded.size()), challenge);
  EXPECT_FALSE(DecodeChallenge(bytes.data(), bytes.size() - 1).has_value());
  bytes[4] = static_cast<uint8_t>(VerbsRejectReason::kWrongToken);  // a plain reject
  EXPECT_FALSE(DecodeChallenge(bytes.data(), bytes.size()).has_value());
  EXPECT_FALSE(DecodeChallenge(EncodeChallenge({0, NonceOf(4)}).data(), 48).has_value());

  const auth::Proof proof = VerbsNodeProof("t", challenge, {UUID{1, 2}, NonceOf(5)});
  auto accept = EncodeAcceptProof(proof);
  EXPECT_LE(accept.size(), 196u);  // IB CM REP private data
  EXPECT_EQ(DecodeAcceptProof(accept.data(), accept.size()), proof);
  EXPECT_FALSE(DecodeAcceptProof(accept.data(), accept.size() - 1).has_value());
  accept[0] = 'X';
  EXPECT_FALSE(DecodeAcceptProof(accept.data(), accept.size()).has_value());
}

// Neither request carries the token or anything fixed that a recorder could
// send again: the proof changes with either nonce and the ticket, and the
// node's proof is not the client's (another label).
TEST(VerbsConnectRequestTest, ProofsBindTheTokenBothNoncesTheTicketAndTheClient) {
  const VerbsConnectHello hello{UUID{5, 6}, NonceOf(6)};
  const VerbsChallenge challenge{1234, NonceOf(7)};
  const auth::Proof proof = VerbsClientProof("cluster-a", challenge, hello);
  auto bytes = EncodeConnectRequest(VerbsConnectProof{challenge.ticket, proof});
  const std::string wire(bytes.begin(), bytes.end());
  EXPECT_EQ(wire.find("cluster-a"), std::string::npos);
  EXPECT_NE(VerbsClientProof("cluster-b", challenge, hello), proof);
  EXPECT_NE(VerbsClientProof("cluster-a", {1235, NonceOf(7)}, hello), proof);
  EXPECT_NE(VerbsClientProof("cluster-a", {1234, NonceOf(8)}, hello), proof);
  EXPECT_NE(VerbsClientProof("cluster-a", challenge, {UUID{5, 6}, NonceOf(9)}), proof);
  EXPECT_NE(VerbsClientProof("cluster-a", challenge, {UUID{5, 7}, NonceOf(6)}), proof);
  EXPECT_NE(VerbsNodeProof("cluster-a", challenge, hello), proof);
}

TEST(VerbsEngineNoDeviceTest, CreateFailsWithATypedErrorWithoutADevice) {
  if (RdmaDevicePresent()) GTEST_SKIP() << "an RDMA device is present";
  std::string error;
  Result<std::unique_ptr<VerbsEngine>> engine = VerbsEngine::Create(TransportOptions{}, &error);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error(), ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(error, "no RDMA device");
  EXPECT_FALSE(CreateVerbsEngine(TransportOptions{}).ok());
}

// --- with devices -----------------------------------------------------------------------

class VerbsEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RdmaDevicePresent()) {
      if (!Env("SHELFMARK_RDMA_DEVICE").empty()) {
        FAIL() << "SHELFMARK_RDMA_DEVICE is set but ibv_get_device_list is empty";
      }
      GTEST_SKIP() << "no RDMA device (ibv_get_device_list is empty): the soft-RoCE VM suite "
                      "(tests/softroce/run_vm_suite.sh) runs these tests";
    }
    server_ip_ = Env("SHELFMARK_RDMA_SERVER_IP");
    if (server_ip_.empty()) {
      GTEST_SKIP() << "RDMA device present but SHELFMARK_RDMA_SERVER_IP is unset";
    }
    server_device_ = Env("SHELFMARK_RDMA_DEVICE");
    client_device_ = Env("SHELFMARK_RDMA_CLIENT_DEVICE", server_device_);
    segment_.reset(new uint8_t[kSegmentSize]);
    buffer_.reset(new uint8_t[kBufferSize]);
    StartNode(0);
    client_ = MakeClient("cluster-a");
    ASSERT_NE(client_, nullptr);
    Result<MemoryRegion> local = client_->RegisterMemory(buffer_.get(), kBufferSize, false);
    ASSERT_TRUE(local.ok());
    local_ = *local;
    EXPECT_TRUE(local_.rkey.empty());
  }

  // (Re)starts the node engine on `port` and registers the segment.
  void StartNode(uint16_t port) {
    TransportOptions options;
    options.client_id = UUID::Generate();
    options.cluster_token = "cluster-a";
    options.listen_ip = server_ip_;
    options.listen_port = port;
    options.device = server_device_;
    std::string error;
    Result<std::unique_ptr<VerbsEngine>> node = VerbsEngine::Create(options, &error);
    ASSERT_TRUE(node.ok()) << error;
    node_ = std::move(node).value();
    Result<MemoryRegion> region = node_->RegisterMemory(segment_.get(), kSegmentSize, true);
    ASSERT_TRUE(region.ok());
    desc_ = {node_->endpoint(), "rdma", reinterpret_cast<uintptr_t>(segment_.get()), kSegmentSize,
             region->rkey, UUID::Generate()};
  }

  std::unique_ptr<VerbsEngine> MakeClient(const std::string& token) {
    TransportOptions options;
    options.client_id = UUID::Generate();
    options.cluster_token = token;
    options.device = client_device_;
    options.connect_timeout_ms = 5000;
    std::string error;
    Result<std::unique_ptr<VerbsEngine>> client = VerbsEngine::Create(options, &error);
    EXPECT_TRUE(client.ok()) << error;
    return client.ok() ? std::move(client).value() : nullptr;
  }

  TransferStatus One(TransferKind kind, const MemoryDescriptor& desc, uint64_t offset, void* local,
                     uint64_t length, int64_t timeout_ms = kTimeoutMs) {
    TransferOp op{&desc, offset, local, length};
    return client_->Transfer(kind, {&op, 1}, timeout_ms);
  }

  std::string server_ip_, server_device_, client_device_;
  std::unique_ptr<uint8_t[]> segment_, buffer_;
  std::unique_ptr<VerbsEngine> node_, client_;
  MemoryRegion local_;
  MemoryDescriptor desc_;
};

TEST_F(VerbsEngineTest, ReportsPortAttributesAndEndpoint) {
  const VerbsPortInfo& port = node_->port();
  EXPECT_EQ(node_->device_name(), server_device_.empty() ? node_->device_name() : server_device_);
  EXPECT_NE(MtuBytes(port.active_mtu), 0u);
  EXPECT_EQ(port.active_mtu_bytes, MtuBytes(port.active_mtu));
  std::string expected_mtu = Env("SHELFMARK_RDMA_EXPECT_MTU");
  if (!expected_mtu.empty()) {
    EXPECT_EQ(port.active_mtu_bytes, std::stoul(expected_mtu));
  }
  if (port.ethernet) {  // RoCE: the v2 GID entry carrying the listen address
    EXPECT_GE(port.gid_index, 0);
    EXPECT_EQ(port.ipv4, server_ip_);
  }
  std::string client_ip = Env("SHELFMARK_RDMA_CLIENT_IP");  // the client's rdma_cm source
  if (!client_ip.empty()) {
    EXPECT_EQ(client_->port().ipv4, client_ip);
  }
  std::optional<HostPort> hp = ParseHostPort(node_->endpoint());
  ASSERT_TRUE(hp.has_value()) << node_->endpoint();
  EXPECT_EQ(hp->host, server_ip_);
  EXPECT_NE(hp->port, 0);
  EXPECT_EQ(desc_.rkey.size(), VerbsEngine::kRkeySize);
  EXPECT_EQ(client_->endpoint(), "");
  std::printf("device %s: active MTU %u, GID index %d (%s); client device %s\n",
              node_->device_name().c_str(), port.active_mtu_bytes, port.gid_index,
              port.ipv4.c_str(), client_->device_name().c_str());
}

TEST_F(VerbsEngineTest, WritesThenReadsBackFrom4KiBTo4MiB) {
  uint32_t seed = 1;
  uint64_t ops = 0;
  for (uint64_t size = 4096; size <= (4u << 20); size *= 4, ++seed) {
    SCOPED_TRACE("size " + std::to_string(size));
    uint64_t offset = (kSegmentSize - size) / 3 & ~uint64_t{7};
    Fill(buffer_.get(), size, seed);
    TransferStatus w = One(TransferKind::WRITE, desc_, offset, buffer_.get(), size);
    ASSERT_TRUE(w.ok()) << w.message;
    // The bytes are in the node's segment (same process: look directly).
    ASSERT_EQ(std::memcmp(segment_.get() + offset, buffer_.get(), size), 0);
    std::memset(buffer_.get(), 0, size);
    TransferStatus r = One(TransferKind::READ, desc_, offset, buffer_.get(), size);
    ASSERT_TRUE(r.ok()) << r.message;
    ASSERT_EQ(std::memcmp(segment_.get() + offset, buffer_.get(), size), 0);
    ++ops;
  }
  VerbsCounters c = client_->counters();
  EXPECT_EQ(c.reads_posted, ops);
  EXPECT_EQ(c.writes_posted, ops);
  EXPECT_EQ(c.connects, 1u);  // one connection, cached
  EXPECT_EQ(node_->counters().accepted, 1u);
  EXPECT_GT(c.bytes_read, 4u << 20);
}

TEST_F(VerbsEngineTest, BatchReadsBeyondTheQueueDepth) {
  Fill(segment_.get(), kSegmentSize, 7);
  constexpr uint64_t kChunk = 4096;
  const size_t count = VerbsEngine::kSendDepth * 2 + 17;  // several post rounds
  std::vector<TransferOp> ops;
  for (size_t i = 0; i < count; ++i) {
    // Scattered remote offsets, contiguous local slots.
    uint64_t remote = (i * 7919 % (kSegmentSize / kChunk)) * kChunk;
    ops.push_back({&desc_, remote, buffer_.get() + i * kChunk, kChunk});
  }
  std::memset(buffer_.get(), 0, count * kChunk);
  TransferStatus s = client_->Transfer(TransferKind::READ, ops, kTimeoutMs);
  ASSERT_TRUE(s.ok()) << s.message;
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(std::memcmp(buffer_.get() + i * kChunk, segment_.get() + ops[i].remote_offset, kChunk),
              0)
        << "op " << i;
  }
  EXPECT_EQ(client_->counters().reads_posted, count);
}

TEST_F(VerbsEngineTest, RawReadReadsTheSameBytes) {
  Fill(segment_.get(), 65536, 3);
  TransferStatus s = client_->RawRead(desc_, 0, local_, buffer_.get(), 65536, kTimeoutMs);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(std::memcmp(buffer_.get(), segment_.get(), 65536), 0);
  EXPECT_EQ(client_->counters().reads_posted, 0u);  // the raw path counts nothing
}

TEST_F(VerbsEngineTest, WrongRkeyFailsNamingTheStatusThenTheConnectionRecovers) {
  MemoryDescriptor forged = desc_;
  forged.rkey[0] = static_cast<char>(forged.rkey[0] ^ 0x5a);
  TransferStatus bad = One(TransferKind::READ, forged, 0, buffer_.get(), 4096);
  EXPECT_EQ(bad.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(bad.message.find("remote access error"), std::string::npos) << bad.message;
  Fill(segment_.get(), 4096, 11);
  TransferStatus good = One(TransferKind::READ, desc_, 0, buffer_.get(), 4096);
  ASSERT_TRUE(good.ok()) << good.message;
  EXPECT_EQ(std::memcmp(buffer_.get(), segment_.get(), 4096), 0);
  EXPECT_EQ(client_->counters().connects, 2u);  // the failed QP was dropped
  EXPECT_EQ(client_->counters().failed_transfers, 1u);
}

TEST_F(VerbsEngineTest, RangeOutsideTheDescriptorIsRejectedBeforePosting) {
  TransferStatus s = One(TransferKind::READ, desc_, kSegmentSize - 100, buffer_.get(), 4096);
  EXPECT_EQ(s.code, ErrorCode::INVALID_PARAMS);
  EXPECT_NE(s.message.find("outside the descriptor"), std::string::npos) << s.message;
  uint8_t unregistered[64];
  s = One(TransferKind::READ, desc_, 0, unregistered, sizeof(unregistered));
  EXPECT_EQ(s.code, ErrorCode::INVALID_PARAMS);
  // A local range running past the end of its region.
  s = One(TransferKind::READ, desc_, 0, buffer_.get() + kBufferSize - 10, 4096);
  EXPECT_EQ(s.code, ErrorCode::INVALID_PARAMS);
  s = One(TransferKind::READ, desc_, 0, buffer_.get(), 0);
  EXPECT_EQ(s.code, ErrorCode::INVALID_PARAMS);
  MemoryDescriptor not_rdma = desc_;
  not_rdma.rkey = "lb1";
  s = One(TransferKind::READ, not_rdma, 0, buffer_.get(), 64);
  EXPECT_EQ(s.code, ErrorCode::INVALID_PARAMS);
  VerbsCounters c = client_->counters();
  EXPECT_EQ(c.reads_posted, 0u);
  EXPECT_EQ(c.connects, 0u);  // nothing reached the network
}

TEST_F(VerbsEngineTest, ForgedLargerDescriptorFailsAtTheOwnersDevice) {
  MemoryDescriptor forged = desc_;
  forged.size = kSegmentSize * 2;
  TransferStatus s = One(TransferKind::READ, forged, kSegmentSize, buffer_.get(), 4096);
  EXPECT_EQ(s.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(s.message.find("remote access error"), std::string::npos) << s.message;
  // Straddling the end of the registration fails too, and writes as well.
  s = One(TransferKind::WRITE, forged, kSegmentSize - 2048, buffer_.get(), 4096);
  EXPECT_EQ(s.code, ErrorCode::TRANSFER_FAIL);
  TransferStatus good = One(TransferKind::READ, desc_, 0, buffer_.get(), 4096);
  EXPECT_TRUE(good.ok()) << good.message;
}

TEST_F(VerbsEngineTest, WrongClusterTokenIsRejected) {
  std::unique_ptr<VerbsEngine> stranger = MakeClient("cluster-b");
  ASSERT_NE(stranger, nullptr);
  Result<MemoryRegion> local = stranger->RegisterMemory(buffer_.get(), 4096, false);
  ASSERT_TRUE(local.ok());
  TransferOp op{&desc_, 0, buffer_.get(), 4096};
  TransferStatus s = stranger->Transfer(TransferKind::READ, {&op, 1}, kTimeoutMs);
  EXPECT_EQ(s.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(s.message.find("cluster token rejected"), std::string::npos) << s.message;
  EXPECT_EQ(node_->counters().rejected, 1u);
  EXPECT_EQ(node_->counters().accepted, 0u);
  EXPECT_EQ(stranger->counters().reads_posted, 0u);
  // The right token still gets in.
  TransferStatus good = One(TransferKind::READ, desc_, 0, buffer_.get(), 4096);
  EXPECT_TRUE(good.ok()) << good.message;
}

// A connect request recorded on the wire and sent again (by another client,
// after the node's challenge to it) names a ticket the node already took:
// rejected and counted, and the node goes on accepting good clients.
TEST_F(VerbsEngineTest, AReplayedConnectRequestIsRejectedAndCounted) {
  std::string error;
  Result<std::unique_ptr<VerbsDevice>> device = VerbsDevice::Open(client_device_, &error);
  ASSERT_TRUE(device.ok()) << error;
  VerbsConnectParams params;
  params.endpoint = node_->endpoint();
  params.source_ip = (*device)->port().ipv4;
  params.client_id = UUID::Generate();
  params.cluster_token = "cluster-a";
  params.timeout_ms = 5000;
  params.testing_sent_proof = std::make_shared<VerbsConnectData>();
  auto first = VerbsConnection::Connect(**device, params, &error);
  ASSERT_TRUE(first.ok()) << error;
  EXPECT_EQ(node_->counters().accepted, 1u);

  VerbsConnectParams replay = params;
  replay.cluster_token = "";  // the replayer knows no token
  replay.testing_sent_proof = nullptr;
  replay.testing_replay_proof = *params.testing_sent_proof;
  auto second = VerbsConnection::Connect(**device, replay, &error);
  EXPECT_EQ(second.error(), ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(error.find("stale challenge"), std::string::npos) << error;
  EXPECT_EQ(node_->counters().rejected, 1u);
  EXPECT_EQ(node_->counters().stale_challenges, 1u);
  EXPECT_EQ(node_->counters().accepted, 1u);

  Fill(segment_.get(), 4096, 12);
  TransferStatus good = One(TransferKind::READ, desc_, 0, buffer_.get(), 4096);
  ASSERT_TRUE(good.ok()) << good.message;
  EXPECT_EQ(std::memcmp(buffer_.get(), segment_.get(), 4096), 0);
  EXPECT_EQ(node_->counters().accepted, 2u);
}

// A node that accepts every proof but holds another token (an impostor at
// a node's endpoint): the client drops the connection before posting, so
// none of the object's bytes reach it.
TEST_F(VerbsEngineTest, AnEndpointThatCannotProveTheTokenGetsNoObjectBytes) {
  TransportOptions options;
  options.client_id = UUID::Generate();
  options.cluster_token = "cluster-b";
  options.listen_ip = server_ip_;
  options.device = server_device_;
  std::string error;
  Result<std::unique_ptr<VerbsEngine>> impostor = VerbsEngine::Create(options, &error);
  ASSERT_TRUE(impostor.ok()) << error;
  ASSERT_NE((*impostor)->testing_listener(), nullptr);
  (*impostor)->testing_listener()->TestingAcceptAnyProof();
  std::vector<uint8_t> trap(4096, 0);
  Result<MemoryRegion> region = (*impostor)->RegisterMemory(trap.data(), trap.size(), true);
  ASSERT_TRUE(region.ok());
  MemoryDescriptor bait{(*impostor)->endpoint(), "rdma", reinterpret_cast<uintptr_t>(trap.data()),
                        trap.size(), region->rkey, UUID::Generate()};
  Fill(buffer_.get(), 4096, 13);
  TransferStatus put = One(TransferKind::WRITE, bait, 0, buffer_.get(), 4096);
  EXPECT_EQ(put.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(put.message.find("did not prove the cluster token"), std::string::npos)
      << put.message;
  EXPECT_EQ((*impostor)->counters().accepted, 1u);  // it did accept
  EXPECT_EQ(client_->counters().writes_posted, 0u);
  EXPECT_EQ(std::count(trap.begin(), trap.end(), 0), static_cast<long>(trap.size()));
  // The real node is proven and written to.
  TransferStatus good = One(TransferKind::WRITE, desc_, 0, buffer_.get(), 4096);
  ASSERT_TRUE(good.ok()) << good.message;
  EXPECT_EQ(std::memcmp(segment_.get(), buffer_.get(), 4096), 0);
}

TEST_F(VerbsEngineTest, NoListenerIsATransferFailure) {
  uint16_t port = ParseHostPort(node_->endpoint())->port;
  node_.reset();
  MemoryDescriptor gone = desc_;
  gone.endpoint = server_ip_ + ":" + std::to_string(port);
  TransferStatus s = One(TransferKind::READ, gone, 0, buffer_.get(), 4096);
  EXPECT_EQ(s.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_FALSE(s.message.empty());
}

TEST_F(VerbsEngineTest, NodeDestroyedMidUseFailsWithinTheTimeout) {
  constexpr int64_t kShortTimeoutMs = 3000;
  std::atomic<int> progress{0};  // good reads; bumped once more when the reader ends
  std::atomic<bool> finished{false};
  TransferStatus failure;
  int64_t failed_call_ms = 0;
  std::thread reader([&] {
    for (;;) {
      auto start = std::chrono::steady_clock::now();
      TransferStatus s = One(TransferKind::READ, desc_, 0, buffer_.get(), 65536, kShortTimeoutMs);
      if (!s.ok()) {
        failed_call_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        failure = s;
        finished = true;
      }
      progress.fetch_add(1);
      progress.notify_all();
      if (finished) return;
    }
  });
  // Wait for a few good reads (or an early failure: the reader then ends).
  for (int seen = progress.load(); seen < 3 && !finished; seen = progress.load()) {
    progress.wait(seen);
  }
  EXPECT_FALSE(finished.load()) << "reads failed before the node went away";
  node_.reset();  // mid-use: the reader keeps reading
  reader.join();  // returns: a failure ended the loop (a hang would time the test out)
  EXPECT_EQ(failure.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_FALSE(failure.message.empty());
  // Transfer's bound: its timeout plus a bounded connect (5 s in MakeClient).
  EXPECT_LE(failed_call_ms, kShortTimeoutMs + 5000) << failure.message;
  std::printf("after the node went away: %s (%lld ms)\n", failure.message.c_str(),
              static_cast<long long>(failed_call_ms));
}

TEST_F(VerbsEngineTest, NewNodeOnTheSamePortIsReconnected) {
  Fill(segment_.get(), 4096, 5);
  ASSERT_TRUE(One(TransferKind::READ, desc_, 0, buffer_.get(), 4096).ok());
  uint16_t port = ParseHostPort(node_->endpoint())->port;
  node_.reset();
  StartNode(port);
  ASSERT_EQ(ParseHostPort(node_->endpoint())->port, port);
  Fill(segment_.get(), 4096, 6);
  // The old connection may still look alive until its disconnect event is
  // read; the contract allows one failure, after which the next call reconnects.
  TransferStatus s = One(TransferKind::READ, desc_, 0, buffer_.get(), 4096);
  if (!s.ok()) {
    std::printf("first read after the restart: %s\n", s.message.c_str());
    s = One(TransferKind::READ, desc_, 0, buffer_.get(), 4096);
  }
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(std::memcmp(buffer_.get(), segment_.get(), 4096), 0);
  EXPECT_EQ(client_->counters().connects, 2u);
  EXPECT_EQ(node_->counters().accepted, 1u);
}

TEST_F(VerbsEngineTest, ConcurrentTransfersFromSeveralThreads) {
  Fill(segment_.get(), kSegmentSize, 9);
  constexpr int kThreads = 4, kReads = 20;
  constexpr uint64_t kChunk = 16384;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint8_t* slot = buffer_.get() + t * kChunk;
      for (int i = 0; i < kReads; ++i) {
        uint64_t offset = ((t * kReads + i) * kChunk) % kSegmentSize;
        if (One(TransferKind::READ, desc_, offset, slot, kChunk).ok() &&
            std::memcmp(slot, segment_.get() + offset, kChunk) == 0) {
          ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kReads);
  EXPECT_EQ(client_->counters().connects, 1u);  // one cached connection, shared
}

}  // namespace
}  // namespace shelfmark
