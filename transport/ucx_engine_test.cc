// Real UCX, two engines in one process: a node listening on 127.0.0.1:0 and
// a client.
#include "transport/ucx_engine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/socket_io.h"
#include "testing/wait_for.h"
#include "transport/ucx_am.h"
#include "transport/ucx_context.h"
#include "transport/ucx_memory_access.h"

namespace shelfmark {
namespace {

TransportOptions Options(std::string token, bool listen, uint16_t port = 0) {
  TransportOptions options;
  options.client_id = UUID::Generate();
  options.cluster_token = std::move(token);
  if (listen) options.listen_ip = "127.0.0.1";
  options.listen_port = port;
  options.connect_timeout_ms = 3000;
  return options;
}

class UcxEngineTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSegment = 16 << 20;

  void SetUp() override {
    segment_.assign(kSegment, 0);
    local_.assign(kSegment, 0);
    StartNode(0);
    auto client = UcxEngine::Create(Options("token", false));
    ASSERT_TRUE(client.ok());
    client_ = std::move(client).value();
    auto local = client_->RegisterMemory(local_.data(), local_.size(), false);
    ASSERT_TRUE(local.ok());
  }

  void StartNode(uint16_t port) {
    auto node = UcxEngine::Create(Options("token", true, port));
    ASSERT_TRUE(node.ok());
    node_ = std::move(node).value();
    auto region = node_->RegisterMemory(segment_.data(), segment_.size(), true);
    ASSERT_TRUE(region.ok());
    desc_.endpoint = node_->endpoint();
    desc_.protocol = "ucx";
    desc_.buffer_address = reinterpret_cast<uint64_t>(segment_.data());
    desc_.size = segment_.size();
    desc_.rkey = region->rkey;
  }

  TransferStatus One(TransferKind kind, const MemoryDescriptor& desc, uint64_t offset, void* local,
                     uint64_t length, int64_t timeout_ms = 5000) {
    TransferOp op{&desc, offset, local, length};
    return client_->Transfer(kind, std::span<const TransferOp>(&op, 1), timeout_ms);
  }

  std::vector<char> segment_, local_;
  std::unique_ptr<UcxEngine> node_, client_;
  MemoryDescriptor desc_;
};

TEST_F(UcxEngineTest, EndpointReportsTheActualPort) {
  EXPECT_EQ(node_->protocol(), "ucx");
  EXPECT_EQ(node_->endpoint().rfind("127.0.0.1:", 0), 0u);
  EXPECT_NE(node_->endpoint(), "127.0.0.1:0");
  EXPECT_EQ(client_->endpoint(), "");
  EXPECT_FALSE(desc_.rkey.empty());
}

TEST_F(UcxEngineTest, WriteThenReadAtSeveralOffsetsAndSizes) {
  const std::vector<std::pair<uint64_t, uint64_t>> cases = {
      {0, 1}, {3, 64}, {4096, 4096}, {12345, 65536 + 17}, {1 << 20, 1 << 20}, {4 << 20, 8 << 20}};
  for (auto [offset, length] : cases) {
    for (uint64_t i = 0; i < length; ++i) local_[i] = static_cast<char>((offset + i) * 13 + 1);
    TransferStatus put = One(TransferKind::WRITE, desc_, offset, local_.data(), length);
    ASSERT_TRUE(put.ok()) << put.message;
    ASSERT_EQ(std::memcmp(segment_.data() + offset, local_.data(), length), 0) << offset;
    char* back = local_.data() + (8 << 20);
    std::memset(back, 0, length);
    TransferStatus get = One(TransferKind::READ, desc_, offset, back, length);
    ASSERT_TRUE(get.ok()) << get.message;
    ASSERT_EQ(std::memcmp(back, segment_.data() + offset, length), 0) << offset;
  }
}

TEST_F(UcxEngineTest, BatchOfReads) {
  for (size_t i = 0; i < 1 << 20; ++i) segment_[i] = static_cast<char>(i * 7 + 3);
  std::vector<TransferOp> ops;
  for (uint64_t i = 0; i < 32; ++i) ops.push_back({&desc_, i * 30000, local_.data() + i * 5000, 5000});
  TransferStatus status = client_->Transfer(TransferKind::READ, ops, 5000);
  ASSERT_TRUE(status.ok()) << status.message;
  for (uint64_t i = 0; i < 32; ++i) {
    EXPECT_EQ(std::memcmp(local_.data() + i * 5000, segment_.data() + i * 30000, 5000), 0);
  }
}

TEST_F(UcxEngineTest, RawUcxGetMatchesTransfer) {
  std::memcpy(segment_.data() + 100, "raw baseline", 12);
  TransferStatus status = RawUcxGet(*client_, desc_, 100, local_.data(), 12, 5000);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(std::string(local_.data(), 12), "raw baseline");
}

TEST_F(UcxEngineTest, OutOfBoundsAndUnregisteredLocalAreInvalidParams) {
  EXPECT_EQ(One(TransferKind::READ, desc_, kSegment - 10, local_.data(), 11).code,
            ErrorCode::INVALID_PARAMS);
  EXPECT_EQ(One(TransferKind::READ, desc_, ~0ull, local_.data(), 2).code, ErrorCode::INVALID_PARAMS);
  std::vector<char> other(64);
  EXPECT_EQ(One(TransferKind::READ, desc_, 0, other.data(), 64).code, ErrorCode::INVALID_PARAMS);
}

TEST_F(UcxEngineTest, ForgedRkeyBytesFailWithoutCrash) {
  // Not an rkey of ours (short, truncated, wrong magic, a zero key, a UCX
  // packed rkey): refused before anything is sent.
  const std::vector<std::string> malformed = {
      "", "x", std::string(12, '\xff'), desc_.rkey.substr(0, 9),
      std::string(desc_.rkey.size(), '\0'), std::string("\x01\0\0\0\0\0\0\0\0\0", 10)};
  for (const std::string& rkey : malformed) {
    MemoryDescriptor bad = desc_;
    bad.rkey = rkey;
    TransferStatus status = One(TransferKind::READ, bad, 0, local_.data(), 64, 2000);
    EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL) << rkey.size();
  }
  // Well-formed, but a key the node never minted: refused by the node.
  MemoryDescriptor forged = desc_;
  forged.rkey = EncodeUcxRkey(DecodeUcxRkey(desc_.rkey).value() ^ 1);
  TransferStatus refused = One(TransferKind::READ, forged, 0, local_.data(), 64, 2000);
  EXPECT_EQ(refused.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(refused.message.find("no live segment"), std::string::npos) << refused.message;
  EXPECT_EQ(node_->transfer_counters()->refused_stale, 1u);
  TransferStatus status = One(TransferKind::READ, desc_, 0, local_.data(), 64);
  EXPECT_TRUE(status.ok()) << status.message;
}

// Issue 28: UCX over tcp checked no bounds, so a descriptor forged with the
// segment's own rkey read or wrote any address of the owner (address 0 or
// 0x1000 faulted it). Now the owner refuses every access outside its
// segment before touching memory, counts it, and goes on serving.
TEST_F(UcxEngineTest, AccessesOutsideTheSegmentAreRefusedByTheOwner) {
  for (size_t i = 0; i < 64; ++i) segment_[i] = static_cast<char>(i + 1);
  const uint64_t base = desc_.buffer_address;
  const std::vector<uint64_t> addresses = {0, 0x1000, base - 4096, base + kSegment,
                                           base + kSegment - 32};
  int tries = 0;
  for (uint64_t address : addresses) {
    for (TransferKind kind : {TransferKind::READ, TransferKind::WRITE}) {
      MemoryDescriptor forged = desc_;  // the client-side range check passes
      forged.buffer_address = address;
      forged.size = 64;
      TransferStatus status = One(kind, forged, 0, local_.data(), 64, 2000);
      EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL) << std::hex << address;
      EXPECT_NE(status.message.find("outside its segment"), std::string::npos) << status.message;
      ++tries;
    }
  }
  EXPECT_EQ(node_->transfer_counters()->refused_out_of_range, static_cast<uint64_t>(tries));
  std::vector<char> first(64);
  ASSERT_TRUE(client_->RegisterMemory(first.data(), first.size(), false).ok());
  TransferStatus status = One(TransferKind::READ, desc_, 0, first.data(), 64);
  ASSERT_TRUE(status.ok()) << status.message;
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(first[i], static_cast<char>(i + 1)) << i;
}

// A region unregistered (an unmounted segment) is refused by its rkey, as
// is a region of a previous process on the same port (its key is gone).
TEST_F(UcxEngineTest, AnUnregisteredRegionIsRefusedNeverServed) {
  std::vector<char> second(4096, 'x');
  auto region = node_->RegisterMemory(second.data(), second.size(), true);
  ASSERT_TRUE(region.ok());
  MemoryDescriptor desc = desc_;
  desc.buffer_address = reinterpret_cast<uint64_t>(second.data());
  desc.size = second.size();
  desc.rkey = region->rkey;
  ASSERT_TRUE(One(TransferKind::READ, desc, 0, local_.data(), 64).ok());
  EXPECT_NE(region->rkey, desc_.rkey);  // one key per region
  node_->UnregisterMemory(*region);
  for (TransferKind kind : {TransferKind::READ, TransferKind::WRITE}) {
    TransferStatus status = One(kind, desc, 0, local_.data(), 64, 2000);
    EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL);
    EXPECT_NE(status.message.find("no live segment"), std::string::npos) << status.message;
  }
  EXPECT_EQ(node_->transfer_counters()->refused_stale, 2u);
}

TEST_F(UcxEngineTest, NodeGoneFailsWithinTimeoutThenRestartReconnects) {
  ASSERT_TRUE(One(TransferKind::READ, desc_, 0, local_.data(), 4096).ok());
  const std::string endpoint = node_->endpoint();
  const uint16_t port = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  node_.reset();
  TransferStatus status = One(TransferKind::READ, desc_, 0, local_.data(), 4096, 2000);
  EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_FALSE(status.message.empty());
  StartNode(port);
  ASSERT_EQ(desc_.endpoint, endpoint);
  std::memcpy(segment_.data(), "restarted", 9);
  status = One(TransferKind::READ, desc_, 0, local_.data(), 9);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(std::string(local_.data(), 9), "restarted");
}

TEST_F(UcxEngineTest, WrongTokenIsRejected) {
  auto intruder = UcxEngine::Create(Options("wrong", false));
  ASSERT_TRUE(intruder.ok());
  ASSERT_TRUE((*intruder)->RegisterMemory(local_.data(), local_.size(), false).ok());
  TransferOp op{&desc_, 0, local_.data(), 64};
  TransferStatus status = (*intruder)->Transfer(TransferKind::READ, std::span(&op, 1), 2000);
  EXPECT_EQ(status.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(status.message.find("rejected the cluster token"), std::string::npos)
      << status.message;
  EXPECT_TRUE(testing::WaitFor([&] { return node_->transfer_counters()->rejected == 1; }, 5000));
  EXPECT_EQ(node_->transfer_counters()->stale_challenges, 0u);  // a fresh ticket, a wrong proof
  EXPECT_EQ(node_->transfer_counters()->accepted, 0u);
}

// A hello recorded on the wire and sent again (here by another engine, over
// a connection of its own) names a ticket the node already took: refused and
// counted, while the node goes on serving the client that made it and new
// ones.
TEST_F(UcxEngineTest, AReplayedHelloIsRefusedAndCounted) {
  std::memcpy(segment_.data(), "object", 6);
  ASSERT_TRUE(One(TransferKind::READ, desc_, 0, local_.data(), 6).ok());
  std::string recorded;
  {
    MutexLock lock(&client_->context().mu());
    recorded = client_->context().testing().sent_hello;
  }
  ASSERT_FALSE(recorded.empty());
  std::optional<ucx_wire::Hello> hello = ucx_wire::DecodeHello(recorded.data(), recorded.size());
  ASSERT_TRUE(hello.has_value());

  TransportOptions options = Options("", false);  // the replayer knows no token
  options.connect_timeout_ms = 1000;  // it never gets an answer: the verdict goes to the client
  auto replayer = UcxEngine::Create(options);
  ASSERT_TRUE(replayer.ok());
  ASSERT_TRUE((*replayer)->RegisterMemory(local_.data(), local_.size(), false).ok());
  {
    MutexLock lock(&(*replayer)->context().mu());
    (*replayer)->context().testing().replay_hello = recorded;
  }
  TransferOp op{&desc_, 0, local_.data(), 6};
  EXPECT_FALSE((*replayer)->Transfer(TransferKind::READ, std::span(&op, 1), 1000).ok());
  EXPECT_TRUE(testing::WaitFor(
      [&] { return node_->transfer_counters()->stale_challenges == 1; }, 5000));
  EXPECT_EQ(node_->transfer_counters()->rejected, 1u);
  EXPECT_EQ(node_->transfer_counters()->accepted, 1u);
  EXPECT_EQ((*replayer)->transfer_counters()->reads_posted, 0u);

  std::memcpy(segment_.data(), "still!", 6);
  ASSERT_TRUE(One(TransferKind::READ, desc_, 0, local_.data(), 6).ok());
  EXPECT_EQ(std::string(local_.data(), 6), "still!");
  auto fresh = UcxEngine::Create(Options("token", false));
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE((*fresh)->RegisterMemory(local_.data(), local_.size(), false).ok());
  TransferStatus good = (*fresh)->Transfer(TransferKind::READ, std::span(&op, 1), 5000);
  EXPECT_TRUE(good.ok()) << good.message;
  EXPECT_EQ(node_->transfer_counters()->accepted, 2u);
}

// A node that accepts every hello but holds another token (what an impostor
// at a node's endpoint can do at best): the client fails the connection
// before posting anything, so none of the object's bytes reach it.
TEST_F(UcxEngineTest, AnEndpointThatCannotProveTheTokenGetsNoObjectBytes) {
  auto impostor = UcxEngine::Create(Options("other", true));
  ASSERT_TRUE(impostor.ok());
  {
    MutexLock lock(&(*impostor)->context().mu());
    (*impostor)->context().testing().accept_any_hello = true;
  }
  std::vector<char> trap(4096, 0);
  auto region = (*impostor)->RegisterMemory(trap.data(), trap.size(), true);
  ASSERT_TRUE(region.ok());
  MemoryDescriptor bait{(*impostor)->endpoint(), "ucx", reinterpret_cast<uint64_t>(trap.data()),
                        trap.size(), region->rkey, UUID::Generate()};
  std::memcpy(local_.data(), "secret object bytes", 19);
  TransferStatus put = One(TransferKind::WRITE, bait, 0, local_.data(), 19);
  EXPECT_EQ(put.code, ErrorCode::TRANSFER_FAIL);
  EXPECT_NE(put.message.find("did not prove the cluster token"), std::string::npos)
      << put.message;
  EXPECT_EQ((*impostor)->transfer_counters()->accepted, 1u);  // it did accept the hello
  EXPECT_EQ(client_->transfer_counters()->writes_posted, 0u);
  EXPECT_EQ(std::count(trap.begin(), trap.end(), 0), static_cast<long>(trap.size()));
  // Active messages are refused the same way, with the typed error.
  EXPECT_EQ(client_->am().Call(bait.endpoint, 1, "", "secret", 2000).error(),
            ErrorCode::UNAUTHENTICATED);
  // The real node is still proven and written to.
  ASSERT_TRUE(One(TransferKind::WRITE, desc_, 0, local_.data(), 19).ok());
  EXPECT_EQ(std::string(segment_.data(), 19), "secret object bytes");
}

TEST(UcxEngineCreateTest, PortInUseIsInvalidParams) {
  auto first = UcxEngine::Create(Options("t", true));
  ASSERT_TRUE(first.ok());
  const std::string endpoint = (*first)->endpoint();
  const auto port = static_cast<uint16_t>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  auto second = UcxEngine::Create(Options("t", true, port));
  EXPECT_EQ(second.error(), ErrorCode::INVALID_PARAMS);
}

// A node segment that is a memfd, shared on this host (TransportEngine::
// ShareLocally): reads and writes are a memcpy from and into the client's
// mapping (counted, no UCX operation posted), inside the segment only; a
// client with a wrong token maps nothing.
class UcxLocalShareTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSize = 4 << 20;

  void SetUp() override {
    memfd_.Reset(memfd_create("ucx-engine-test", MFD_CLOEXEC));
    ASSERT_TRUE(memfd_.valid());
    ASSERT_EQ(ftruncate(memfd_.get(), kSize), 0);
    void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_.get(), 0);
    ASSERT_NE(mem, MAP_FAILED);
    segment_ = static_cast<char*>(mem);
    auto node = UcxEngine::Create(Options("token", true));
    ASSERT_TRUE(node.ok());
    node_ = std::move(node).value();
    auto region = node_->RegisterMemory(segment_, kSize, true);
    ASSERT_TRUE(region.ok());
    ASSERT_EQ(node_->ShareLocally(*region, memfd_.get()), ErrorCode::OK);
    desc_.endpoint = node_->endpoint();
    desc_.protocol = "ucx";
    desc_.buffer_address = reinterpret_cast<uint64_t>(segment_);
    desc_.size = kSize;
    desc_.rkey = region->rkey;
    local_.assign(kSize, 0);
  }
  void TearDown() override {
    node_.reset();
    munmap(segment_, kSize);
  }
  std::unique_ptr<UcxEngine> Client(const std::string& token) {
    auto client = UcxEngine::Create(Options(token, false));
    EXPECT_TRUE(client.ok());
    auto region = (*client)->RegisterMemory(local_.data(), local_.size(), false);
    EXPECT_TRUE(region.ok());
    return std::move(client).value();
  }
  static TransferStatus One(UcxEngine& engine, TransferKind kind, const MemoryDescriptor& desc,
                            uint64_t offset, void* local, uint64_t length) {
    TransferOp op{&desc, offset, local, length};
    return engine.Transfer(kind, std::span<const TransferOp>(&op, 1), 5000);
  }

  UniqueFd memfd_;
  char* segment_ = nullptr;
  std::vector<char> local_;
  std::unique_ptr<UcxEngine> node_;
  MemoryDescriptor desc_;
};

TEST_F(UcxLocalShareTest, SameHostReadsAndWritesAreCopiesThroughTheMappedSegment) {
  auto client = Client("token");
  for (uint64_t i = 0; i < kSize; ++i) segment_[i] = static_cast<char>(i * 7 + 3);
  TransferStatus read = One(*client, TransferKind::READ, desc_, 4096, local_.data(), 1 << 20);
  ASSERT_TRUE(read.ok()) << read.message;
  EXPECT_EQ(std::memcmp(local_.data(), segment_ + 4096, 1 << 20), 0);
  std::string update(64, 'w');
  std::memcpy(local_.data(), update.data(), update.size());
  ASSERT_TRUE(One(*client, TransferKind::WRITE, desc_, 100, local_.data(), 64).ok());
  EXPECT_EQ(std::string(segment_ + 100, 64), update);  // in the node's memory at once
  std::memset(local_.data(), 0, 64);
  ASSERT_TRUE(One(*client, TransferKind::READ, desc_, 100, local_.data(), 64).ok());
  EXPECT_EQ(std::string(local_.data(), 64), update);
  auto counters = client->transfer_counters();
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->local_reads, 2u);
  EXPECT_EQ(counters->local_bytes_read, (1u << 20) + 64);
  EXPECT_EQ(counters->local_writes, 1u);
  EXPECT_EQ(counters->local_bytes_written, 64u);
  EXPECT_EQ(counters->reads_posted, 0u);
  EXPECT_EQ(counters->writes_posted, 0u);
  EXPECT_EQ(counters->local_maps, 1u);
}

// A forged descriptor reaching past the segment (or before it): the write is
// not a local copy (the mapping ends at the segment's end: a copy there
// would fault) but a request that the node refuses whole.
TEST_F(UcxLocalShareTest, AWriteOutsideTheSegmentIsRefusedAndTouchesNothing) {
  auto client = Client("token");
  std::memset(segment_, 's', kSize);
  std::memset(local_.data(), 'x', 4096);
  for (const int64_t shift : {int64_t{kSize} - 32, int64_t{-32}}) {
    MemoryDescriptor forged = desc_;
    forged.buffer_address = desc_.buffer_address + shift;
    forged.size = 4096;
    TransferStatus write = One(*client, TransferKind::WRITE, forged, 0, local_.data(), 64);
    EXPECT_EQ(write.code, ErrorCode::TRANSFER_FAIL) << shift;
    EXPECT_NE(write.message.find("outside its segment"), std::string::npos) << write.message;
  }
  EXPECT_EQ(std::string(segment_ + kSize - 32, 32), std::string(32, 's'));
  EXPECT_EQ(std::string(segment_, 32), std::string(32, 's'));
  auto counters = client->transfer_counters();
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->local_writes, 0u);
  EXPECT_EQ(counters->writes_posted, 2u);
  EXPECT_EQ(node_->transfer_counters()->refused_out_of_range, 2u);
}

// SHELFMARK_UCX_SAME_HOST=0 (read when a connection is made): no mapping,
// reads and writes over UCX.
TEST_F(UcxLocalShareTest, SameHostCopiesCanBeTurnedOff) {
  auto client = Client("token");
  std::memset(local_.data(), 'o', 64);
  setenv("SHELFMARK_UCX_SAME_HOST", "0", 1);
  const TransferStatus write = One(*client, TransferKind::WRITE, desc_, 0, local_.data(), 64);
  unsetenv("SHELFMARK_UCX_SAME_HOST");
  ASSERT_TRUE(write.ok()) << write.message;
  EXPECT_EQ(std::string(segment_, 64), std::string(64, 'o'));
  auto counters = client->transfer_counters();
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->local_maps, 0u);
  EXPECT_EQ(counters->local_writes, 0u);
  EXPECT_EQ(counters->writes_posted, 1u);
}

TEST_F(UcxLocalShareTest, AWrongTokenMapsNothing) {
  auto client = Client("wrong");
  EXPECT_FALSE(One(*client, TransferKind::READ, desc_, 0, local_.data(), 64).ok());
  auto counters = client->transfer_counters();
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->local_reads, 0u);
  EXPECT_EQ(counters->local_maps, 0u);
}

TEST_F(UcxLocalShareTest, ANodeThatIsNotANodeCannotShare) {
  auto client = Client("token");
  MemoryRegion region;
  region.addr = local_.data();
  region.size = 64;
  EXPECT_EQ(client->ShareLocally(region, memfd_.get()), ErrorCode::INVALID_PARAMS);
}

}  // namespace
}  // namespace shelfmark
