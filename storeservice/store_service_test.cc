// The store service and its client against a real master service in-process
// (RpcServer + Directory over Cap'n Proto), a real embedded segment on UCX,
// real unix sockets and real memfds; hostile peers play the protocol by
// hand with the wire functions.
#include "storeservice/store_service.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "auth/proof.h"
#include "common/task_types.h"
#include "common/wire_bytes.h"
#include "common/work_splitter.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "embedded/embedded_client.h"
#include "master/rpc_server_test_util.h"
#include "storeservice/host_mem_allocator.h"
#include "storeservice/service_client.h"
#include "storeservice/service_wire.h"
#include "testing/wait_for.h"

namespace shelfmark::storeservice {
namespace {

constexpr char kToken[] = "store-service-test-token";

std::string RandomSocket() {
  uint64_t bits = 0;
  auth::RandomBytes(&bits, sizeof(bits));
  return "@shelfmark-store-service-test-" + std::to_string(bits);
}

class StoreServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DirectoryOptions options;
    options.default_kv_lease_ttl_ms = 600'000;
    dir_ = MakeTestDirectory(&master_clock_, options);
    std::string master;
    StartLoopbackMaster(*dir_, &server_, &master);
    if (HasFatalFailure()) return;
    EmbeddedOptions o;
    o.master = master;
    o.protocol = "ucx";
    o.cluster_token = kToken;
    o.segment_size = 32 << 20;
    o.segment_name = "service-segment";
    o.staging_bytes = 4 << 20;
    auto embedded = EmbeddedClient::Create(o);
    ASSERT_TRUE(embedded.ok()) << ErrorCodeName(embedded.error());
    embedded_ = std::move(embedded).value();
    socket_ = RandomSocket();
    StartService(kToken);
  }

  void TearDown() override {
    service_.reset();
    embedded_.reset();
    server_->Stop();
  }

  void StartService(const std::string& token,
                    int64_t next_request_poll_us = DefaultReplyPollMicros()) {
    StoreServiceOptions so;
    so.socket = socket_;
    so.cluster_token = token;
    so.tenant = "t";
    so.io_timeout_ms = 2'000;
    so.next_request_poll_us = next_request_poll_us;
    auto service = StoreService::Start(so, embedded_->client());
    ASSERT_TRUE(service.ok());
    service_ = std::move(service).value();
  }

  Result<std::unique_ptr<ServiceClient>> Connect(const std::string& token = kToken,
                                                 const std::string& tenant = "t",
                                                 int64_t reply_poll_us = DefaultReplyPollMicros()) {
    ServiceClientOptions o;
    o.socket = socket_;
    o.cluster_token = token;
    o.tenant = tenant;
    o.timeout_ms = 5'000;
    o.reply_poll_us = reply_poll_us;
    return ServiceClient::Connect(o);
  }

  // A connection through the handshake, for requests written by hand.
  UniqueFd RawSession() {
    UniqueFd fd = ConnectUnix(socket_);
    std::string body;
    std::vector<UniqueFd> fds;
    auth::Nonce service_nonce{};
    EXPECT_EQ(ReadFrame(fd.get(), &body, &fds, 2'000, 2'000), ReadStatus::kOk);
    EXPECT_TRUE(DecodeChallenge(body, &service_nonce));
    Hello hello;
    hello.client_nonce = auth::NewNonce();
    hello.tenant = "t";
    hello.proof =
        std::string(auth::BytesOf(ClientProof(kToken, service_nonce, hello.client_nonce, "t")));
    EXPECT_TRUE(SendFrame(fd.get(), EncodeHello(hello), 2'000));
    Welcome welcome;
    EXPECT_EQ(ReadFrame(fd.get(), &body, &fds, 2'000, 2'000), ReadStatus::kOk);
    EXPECT_TRUE(DecodeWelcome(body, &welcome));
    EXPECT_EQ(welcome.code, 0);
    return fd;
  }

  // One request on a raw session; the answer's leading i32.
  static int32_t Ask(int fd, const std::string& request, int fd_to_pass = -1) {
    std::string body;
    std::vector<UniqueFd> fds;
    if (!SendFrame(fd, request, 2'000, fd_to_pass) ||
        ReadFrame(fd, &body, &fds, 2'000, 2'000) != ReadStatus::kOk) {
      return 1;  // no answer: not a code
    }
    wire::Reader r(body.data(), body.size());
    return r.Get<int32_t>();
  }

  // Fills `size` fresh bytes of AllocShm memory with `fill` and registers
  // them with `client`; the address (0 on failure, with a test failure).
  static uint64_t SharedBytes(ServiceClient& client, uint64_t size, char fill) {
    const uint64_t shm = AllocShm(size);
    auto region = FindShm(shm, size);
    EXPECT_TRUE(region.has_value());
    if (!region) return 0;
    std::memset(reinterpret_cast<void*>(shm), fill, size);
    EXPECT_EQ(client.RegisterShm(region->base, region->size, region->fd.get()), 0);
    return shm;
  }

  static std::string RegisterRequest(uint64_t base, uint64_t size) {
    return wire::Writer().Put(static_cast<uint8_t>(Op::kRegister)).Put(base).Put(size).Take();
  }

  ManualClock master_clock_;
  std::unique_ptr<Directory> dir_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<EmbeddedClient> embedded_;
  std::string socket_;
  std::unique_ptr<StoreService> service_;
};

constexpr int kInvalid = static_cast<int>(ErrorCode::INVALID_PARAMS);

// Frames over a socketpair whose send buffer is far smaller than a frame:
// SendFrame's sendmsg takes it in pieces and a FrameReader gets the body
// byte-exact with the descriptor riding on its start; frames that arrived
// together come out one by one, in order.
TEST(ServiceWireTest, FrameReaderTakesFramesWholeAndInOrder) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair), 0);
  UniqueFd writer(pair[0]), reader_fd(pair[1]);
  const int small = 4096;
  ASSERT_EQ(setsockopt(writer.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  std::string big(4 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 13));
  UniqueFd passed(memfd_create("frame-test", MFD_CLOEXEC));
  ASSERT_TRUE(passed.valid());
  ASSERT_EQ(ftruncate(passed.get(), 12345), 0);
  bool sent = false;
  std::thread send([&] { sent = SendFrame(writer.get(), big, 5'000, passed.get()); });
  FrameReader reader(reader_fd.get());
  std::string body;
  std::vector<UniqueFd> fds;
  EXPECT_EQ(reader.Read(&body, &fds, 5'000, 5'000), ReadStatus::kOk);
  send.join();
  EXPECT_TRUE(sent);
  EXPECT_TRUE(body == big);
  ASSERT_EQ(fds.size(), 1u);
  struct stat st {};
  ASSERT_EQ(fstat(fds[0].get(), &st), 0);
  EXPECT_EQ(st.st_size, 12345);
  fds.clear();
  ASSERT_TRUE(SendFrame(writer.get(), "a", 2'000) && SendFrame(writer.get(), "", 2'000) &&
              SendFrame(writer.get(), "ccc", 2'000));
  for (const char* want : {"a", "", "ccc"}) {
    EXPECT_EQ(reader.Read(&body, &fds, 2'000, 2'000), ReadStatus::kOk);
    EXPECT_EQ(body, want);
  }
  EXPECT_TRUE(fds.empty());
  // Nothing more comes: the wait times out; a header cut short by the
  // writer's close is a bad frame, and a length over the limit too.
  EXPECT_EQ(reader.Read(&body, &fds, 50, 50), ReadStatus::kTimeout);
  ASSERT_TRUE(SendFrame(writer.get(), "four", 2'000));
  EXPECT_EQ(reader.Read(&body, &fds, 2'000, 2'000, 3), ReadStatus::kBad);
  FrameReader fresh(reader_fd.get());
  ASSERT_TRUE(SendAll(writer.get(), std::string("\x10\0", 2), 2'000));
  writer.Reset();
  EXPECT_EQ(fresh.Read(&body, &fds, 2'000, 2'000), ReadStatus::kBad);
}

TEST_F(StoreServiceTest, ZeroCopyCallsMoveBytesThroughSharedMemory) {
  auto client = Connect();
  ASSERT_TRUE(client.ok()) << ErrorCodeName(client.error());
  constexpr uint64_t kItem = 64 << 10, kItems = 8;
  const uint64_t src = AllocShm(kItem * kItems), dst = AllocShm(kItem * kItems);
  ASSERT_NE(src, 0u);
  ASSERT_NE(dst, 0u);
  for (uint64_t base : {src, dst}) {
    auto region = FindShm(base, kItem * kItems);
    ASSERT_TRUE(region.has_value());
    ASSERT_EQ((*client)->RegisterShm(region->base, region->size, region->fd.get()), 0);
  }
  std::vector<Item> puts, gets;
  for (uint64_t i = 0; i < kItems; ++i) {
    std::memset(reinterpret_cast<void*>(src + i * kItem), static_cast<int>('a' + i), kItem);
    puts.push_back(Item{"k" + std::to_string(i), src + i * kItem, kItem});
    gets.push_back(Item{"k" + std::to_string(i), dst + i * kItem, kItem});
  }
  const uint64_t copies_before = embedded_->client()->local_stats().copies;
  EXPECT_EQ((*client)->BatchPutFrom(puts, PutConfig{}), std::vector<int>(kItems, 0));
  EXPECT_EQ((*client)->BatchGetInto(gets), std::vector<int64_t>(kItems, kItem));
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(src), reinterpret_cast<void*>(dst), kItem * kItems),
            0);
  // The service's own segment: memcpy both ways, no transfer.
  EXPECT_GE(embedded_->client()->local_stats().copies, copies_before + 2 * kItems);

  EXPECT_EQ((*client)->Put("inline", "hello service", PutConfig{}), 0);
  std::string value;
  EXPECT_EQ((*client)->Get("inline", &value), 0);
  EXPECT_EQ(value, "hello service");
  EXPECT_EQ((*client)->BatchIsExist({"k0", "missing"}), (std::vector<int>{1, 0}));
  EXPECT_EQ((*client)->GetSize("k3"), static_cast<int64_t>(kItem));
  // (A key never read holds no read lease.)
  EXPECT_EQ((*client)->Put("gone", "soon", PutConfig{}), 0);
  EXPECT_EQ((*client)->Remove("gone", false), 0);
  EXPECT_EQ((*client)->GetSize("gone"), static_cast<int64_t>(ErrorCode::OBJECT_NOT_FOUND));
  EXPECT_EQ((*client)->Health(), 0);
  // Memory outside every registration is refused, item by item.
  std::vector<int64_t> stray =
      (*client)->BatchGetInto({Item{"k0", dst, kItem}, Item{"k0", 4096, kItem}});
  EXPECT_EQ(stray, (std::vector<int64_t>{static_cast<int64_t>(kItem), kInvalid}));
  // The objects belong to the service's tenant.
  auto exists = embedded_->client()->Exist("t", "k0");
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(*exists);
  client->reset();
  EXPECT_TRUE(FreeShm(src));
  EXPECT_TRUE(FreeShm(dst));
}

TEST_F(StoreServiceTest, PartsCallsGatherAndScatterPieces) {
  auto client = Connect();
  ASSERT_TRUE(client.ok());
  constexpr uint64_t kPiece = 16 << 10;
  const uint64_t src = SharedBytes(**client, 4 * kPiece, 'p');
  const uint64_t dst = SharedBytes(**client, 4 * kPiece, 0);
  for (uint64_t i = 0; i < 4 * kPiece; ++i) reinterpret_cast<char*>(src)[i] = static_cast<char>(i * 7);
  // Two objects of two pieces each, the second's pieces in reverse order.
  const std::vector<PartsItem> puts = {
      {"layers-a", {{src, kPiece}, {src + kPiece, kPiece}}},
      {"layers-b", {{src + 3 * kPiece, kPiece}, {src + 2 * kPiece, kPiece}}}};
  EXPECT_EQ((*client)->BatchPutParts(puts, PutConfig{}), (std::vector<int>{0, 0}));
  const std::vector<PartsItem> gets = {
      {"layers-a", {{dst, kPiece}, {dst + kPiece, kPiece}}},
      {"layers-b", {{dst + 2 * kPiece, 2 * kPiece}}},
      {"layers-a", {{dst, kPiece}, {4096, kPiece}}}};  // a piece outside: refused whole
  EXPECT_EQ((*client)->BatchGetIntoParts(gets),
            (std::vector<int64_t>{2 * kPiece, 2 * kPiece, kInvalid}));
  const char* s = reinterpret_cast<const char*>(src);
  const char* d = reinterpret_cast<const char*>(dst);
  EXPECT_EQ(std::memcmp(d, s, 2 * kPiece), 0);
  EXPECT_EQ(std::memcmp(d + 2 * kPiece, s + 3 * kPiece, kPiece), 0);
  EXPECT_EQ(std::memcmp(d + 3 * kPiece, s + 2 * kPiece, kPiece), 0);
  EXPECT_EQ((*client)->BatchRemove({"layers-a", "layers-b", "missing"}, true),
            (std::vector<int>{0, 0, static_cast<int>(ErrorCode::OBJECT_NOT_FOUND)}));
  client->reset();
  EXPECT_TRUE(FreeShm(src));
  EXPECT_TRUE(FreeShm(dst));
}

TEST_F(StoreServiceTest, InlineRangedReplicaRemoveAndTaskCalls) {
  auto client = Connect();
  ASSERT_TRUE(client.ok());
  const int not_found = static_cast<int>(ErrorCode::OBJECT_NOT_FOUND);
  EXPECT_EQ((*client)->PutBatch({"b0", "b1"}, {"zero", "one"}, PutConfig{}),
            (std::vector<int>{0, 0}));
  EXPECT_EQ((*client)->PutBatch({"b2"}, {}, PutConfig{}), std::vector<int>{kInvalid});
  std::vector<std::string> values;
  EXPECT_EQ((*client)->GetBatch({"b0", "missing", "b1"}, &values),
            (std::vector<int>{0, not_found, 0}));
  EXPECT_EQ(values, (std::vector<std::string>{"zero", "", "one"}));

  // Ranged reads land in shared memory; a fragment past the object's end or
  // outside every registration is answered alone.
  std::string object(100, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<char>(i);
  ASSERT_EQ((*client)->Put("ranged", object, PutConfig{}), 0);
  const uint64_t dst = SharedBytes(**client, 4096, 0);
  EXPECT_EQ((*client)->GetIntoRanges("ranged", {{10, 20, dst}, {0, 5, dst + 100}}),
            (std::vector<int64_t>{20, 5}));
  EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(dst), object.data() + 10, 20), 0);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(dst + 100), object.data(), 5), 0);
  EXPECT_EQ((*client)->GetIntoRanges("ranged", {{95, 10, dst}, {0, 5, 4096}, {1, 1, dst}}),
            (std::vector<int64_t>{static_cast<int64_t>(ErrorCode::BUFFER_OVERFLOW), kInvalid, 1}));

  std::vector<ReplicaDescriptor> replicas;
  ASSERT_EQ((*client)->GetReplicas("ranged", &replicas), 0);
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_EQ(replicas[0].type, ReplicaType::MEMORY);
  EXPECT_EQ(replicas[0].memory.size, object.size());
  EXPECT_EQ((*client)->GetReplicas("missing", &replicas), not_found);
  EXPECT_TRUE(replicas.empty());

  EXPECT_EQ((*client)->RemoveByRegex("^b[0-9]$", true), 2);
  EXPECT_EQ((*client)->RemoveByRegex("(", false), kInvalid);
  EXPECT_EQ((*client)->GetSize("b0"), not_found);

  // Tasks run on the service's client: a copy to no segment is refused
  // with the master's code; an id that does not parse is INVALID_PARAMS.
  std::string id;
  EXPECT_LT((*client)->CreateTask(TaskSpec{TaskType::REPLICA_COPY, "ranged", "", {"nowhere"}}, &id),
            0);
  TaskInfo info;
  EXPECT_EQ((*client)->QueryTask("not-a-uuid", &info), kInvalid);
  EXPECT_EQ((*client)->RunTask("not-a-uuid"), kInvalid);
  EXPECT_EQ((*client)->QueryTask(UUID{1, 2}.ToString(), &info),
            static_cast<int>(ErrorCode::TASK_NOT_FOUND));
  EXPECT_EQ((*client)->RemoveAll(true), 1);  // "ranged"
  client->reset();
  EXPECT_TRUE(FreeShm(dst));
}

TEST_F(StoreServiceTest, SessionsBelongToTheirConnection) {
  auto client = Connect();
  ASSERT_TRUE(client.ok());
  constexpr uint64_t kPiece = 4096;
  const uint64_t mem = SharedBytes(**client, 4 * kPiece, 0);
  for (uint64_t i = 0; i < 2 * kPiece; ++i) reinterpret_cast<char*>(mem)[i] = static_cast<char>(i);
  EXPECT_EQ((*client)->PutStart({"layered", "open"}, {2 * kPiece, kPiece}, PutConfig{}),
            (std::vector<int>{0, 0}));
  // The object's second half first, then its first.
  EXPECT_EQ((*client)->SessionRanges(Op::kPutRanges,
                                     {RangedItem{"layered", {{mem + kPiece, kPiece, kPiece}}},
                                      RangedItem{"layered", {{mem, kPiece, 0}}},
                                      RangedItem{"layered", {{4096, kPiece, 0}}}}),
            (std::vector<int64_t>{kPiece, kPiece, kInvalid}));
  EXPECT_EQ((*client)->SessionKeys(Op::kPutEnd, {"layered", "never-started"}),
            (std::vector<int>{0, kInvalid}));
  EXPECT_EQ((*client)->SessionKeys(Op::kGetStart, {"layered"}), std::vector<int>{0});
  EXPECT_EQ((*client)->SessionRanges(Op::kGetRanges,
                                     {RangedItem{"layered", {{mem + 2 * kPiece, 2 * kPiece, 0}}}}),
            std::vector<int64_t>{2 * kPiece});
  EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(mem),
                        reinterpret_cast<const char*>(mem + 2 * kPiece), 2 * kPiece),
            0);
  EXPECT_EQ((*client)->GetEnd({"layered"}), 0);
  // A new connection holds none of the old one's sessions.
  client->reset();
  auto again = Connect();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->SessionKeys(Op::kPutEnd, {"open"}), std::vector<int>{kInvalid});
  EXPECT_EQ((*again)->GetSize("layered"), static_cast<int64_t>(2 * kPiece));
  EXPECT_TRUE(FreeShm(mem));
}

// Having answered, a connection's thread polls for the next request: a
// client calling back to back is served without a blocked thread woken.
// (The poll is long here, so no call comes after it; a call of the
// process's background threads can crowd out a few polls.)
TEST_F(StoreServiceTest, BackToBackRequestsAreFoundByThePoll) {
  const std::string health = wire::Writer().Put(static_cast<uint8_t>(Op::kHealth)).Take();
  for (const int64_t poll_us : {int64_t{0}, int64_t{5'000'000}}) {
    service_.reset();
    StartService(kToken, poll_us);
    UniqueFd fd = RawSession();
    constexpr uint64_t kCalls = 20;
    for (uint64_t i = 0; i < kCalls; ++i) ASSERT_EQ(Ask(fd.get(), health), 0) << "call " << i;
    const StoreServiceCounters c = service_->counters();
    EXPECT_EQ(c.requests, kCalls);
    if (poll_us == 0) {
      EXPECT_EQ(c.polled_requests, 0u);
    } else {
      EXPECT_GE(c.polled_requests, kCalls / 2) << "of " << kCalls;
    }
  }
}

// A call whose copies the service splits (kSplitCopyBytes or more) is not
// polled for: its answer outlasts a poll, and the misses of such batches
// would stop the polls of the small calls between them. Those still poll.
// (The budget is long, so that no answer misses it however slow the
// build: every poll made is counted, hit or miss.)
TEST_F(StoreServiceTest, BigBatchesAreNotPolledForAndSmallCallsStillAre) {
  auto client = Connect(kToken, "t", /*reply_poll_us=*/5'000'000);
  ASSERT_TRUE(client.ok()) << ErrorCodeName(client.error());
  constexpr uint64_t kItem = 64 << 10, kItems = kSplitCopyBytes / kItem;
  const uint64_t src = SharedBytes(**client, kItem * kItems, 'b');
  const uint64_t dst = SharedBytes(**client, kItem * kItems, 0);
  ASSERT_NE(src, 0u);
  ASSERT_NE(dst, 0u);
  std::vector<Item> puts, gets;
  for (uint64_t i = 0; i < kItems; ++i) {
    puts.push_back(Item{"big" + std::to_string(i), src + i * kItem, kItem});
    gets.push_back(Item{"big" + std::to_string(i), dst + i * kItem, kItem});
  }
  const uint64_t polls = (*client)->reply_polls();
  EXPECT_EQ((*client)->BatchPutFrom(puts, PutConfig{}), std::vector<int>(kItems, 0));
  for (int i = 0; i <= ReplyPoller::kMaxMisses; ++i) {
    EXPECT_EQ((*client)->BatchGetInto(gets), std::vector<int64_t>(kItems, kItem));
  }
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(src), reinterpret_cast<void*>(dst), kItem * kItems),
            0);
  EXPECT_EQ((*client)->reply_polls(), polls);
  for (int i = 0; i < ReplyPoller::kMaxMisses; ++i) EXPECT_EQ((*client)->Health(), 0);
  EXPECT_EQ((*client)->reply_polls(), polls + ReplyPoller::kMaxMisses);
  client->reset();
  EXPECT_TRUE(FreeShm(src));
  EXPECT_TRUE(FreeShm(dst));
}

TEST_F(StoreServiceTest, HostileBodiesOfTheNewCallsGetTypedErrors) {
  UniqueFd fd = RawSession();
  auto op = [](Op o) { return wire::Writer().Put(static_cast<uint8_t>(o)); };
  // Counts past the body.
  EXPECT_EQ(Ask(fd.get(), op(Op::kGetIntoRanges).Bytes("k").Put(uint32_t{1u << 30}).Take()),
            kInvalid);
  std::string put_batch = op(Op::kPutBatch).Take();
  {
    wire::Writer w;
    PutPutConfig(w, PutConfig{});
    put_batch += w.Put(uint32_t{1u << 30}).Take();
  }
  EXPECT_EQ(Ask(fd.get(), put_batch), kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kGetBatch).Put(uint32_t{1u << 30}).Take()), kInvalid);
  // A ranged read into memory never registered, and with no fragments.
  std::string body;
  std::vector<UniqueFd> fds;
  ASSERT_TRUE(SendFrame(fd.get(),
                        op(Op::kGetIntoRanges)
                            .Bytes("k")
                            .Put(uint32_t{1})
                            .Put(uint64_t{0})
                            .Put(uint64_t{8})
                            .Put(uint64_t{4096})
                            .Take(),
                        2'000));
  ASSERT_EQ(ReadFrame(fd.get(), &body, &fds, 2'000, 2'000), ReadStatus::kOk);
  std::vector<int64_t> answers;
  ASSERT_TRUE(DecodeValues(body, 1, &answers));
  EXPECT_EQ(answers[0], kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kGetIntoRanges).Bytes("k").Put(uint32_t{0}).Take()), kInvalid);
  // An unknown task type, truncated task and remove bodies, trailing bytes.
  EXPECT_EQ(Ask(fd.get(), op(Op::kCreateTask).Put(uint8_t{9}).Bytes("k").Take()), kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kQueryTask).Put(uint16_t{3}).Take()), kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kRunTask).Bytes("junk").Take()), kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kRemoveAll).Take()), kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kRemoveByRegex).Bytes("x").Put(uint8_t{0}).Put(uint8_t{0}).Take()),
            kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kGetReplicas).Take()), kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kGetRanges).Put(uint32_t{1u << 30}).Take()), kInvalid);
  EXPECT_EQ(
      Ask(fd.get(), op(Op::kPutRanges).Put(uint32_t{1}).Bytes("k").Put(uint32_t{1u << 30}).Take()),
      kInvalid);
  EXPECT_EQ(Ask(fd.get(), op(Op::kGetEnd).Put(uint32_t{2}).Take()), kInvalid);
  std::string put_start = op(Op::kPutStart).Take();
  {
    wire::Writer w;
    PutPutConfig(w, PutConfig{});
    put_start += w.Put(uint32_t{1u << 30}).Take();
  }
  EXPECT_EQ(Ask(fd.get(), put_start), kInvalid);
  // Still serving.
  auto client = Connect();
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Health(), 0);
}

TEST_F(StoreServiceTest, TokenAndTenantAreCheckedBothWays) {
  auto wrong = Connect("not-the-token-at-all");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error(), ErrorCode::UNAUTHENTICATED);
  auto other_tenant = Connect(kToken, "other");
  ASSERT_FALSE(other_tenant.ok());
  EXPECT_EQ(other_tenant.error(), ErrorCode::PERMISSION_DENIED);
  EXPECT_GE(service_->counters().refused, 1u);
  // A service that does not know the token cannot pass as one.
  service_.reset();
  StartService("an-impostor-token-value");
  auto fooled = Connect();
  ASSERT_FALSE(fooled.ok());
  EXPECT_EQ(fooled.error(), ErrorCode::UNAUTHENTICATED);
}

TEST_F(StoreServiceTest, HostileBytesAndBadDescriptorsGetTypedErrors) {
  {
    // Garbage instead of a hello: the connection ends, the service lives.
    UniqueFd fd = ConnectUnix(socket_);
    ASSERT_TRUE(SendAll(fd.get(), std::string(64, '\xff'), 2'000));
  }
  {
    // A hello announced at 1 MiB: refused before the service holds it.
    UniqueFd fd = ConnectUnix(socket_);
    std::string body;
    std::vector<UniqueFd> fds;
    ASSERT_EQ(ReadFrame(fd.get(), &body, &fds, 2'000, 2'000), ReadStatus::kOk);  // challenge
    const uint64_t refused = service_->counters().refused;
    ASSERT_TRUE(SendAll(fd.get(), wire::Writer().Put(uint32_t{1u << 20}).Take(), 2'000));
    EXPECT_EQ(ReadFrame(fd.get(), &body, &fds, 2'000, 2'000), ReadStatus::kClosed);
    EXPECT_TRUE(testing::WaitFor([&] { return service_->counters().refused > refused; }, 5'000));
  }
  UniqueFd fd = RawSession();
  // Unknown op, truncated bodies, a batch count past the body.
  EXPECT_EQ(Ask(fd.get(), std::string("\x7f", 1)), kInvalid);
  EXPECT_EQ(Ask(fd.get(), std::string("\x01\x01", 2)), kInvalid);
  EXPECT_EQ(Ask(fd.get(), wire::Writer().Put(uint8_t{7}).Put(uint32_t{1u << 30}).Take()),
            kInvalid);
  const uint64_t base = 1ull << 40, size = 1 << 20;
  // Register without a descriptor, with a pipe, with an unsealed memfd.
  EXPECT_EQ(Ask(fd.get(), RegisterRequest(base, size)), kInvalid);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_EQ(Ask(fd.get(), RegisterRequest(base, size), pipe_fds[0]), kInvalid);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  UniqueFd unsealed(memfd_create("unsealed", MFD_CLOEXEC));
  ASSERT_EQ(ftruncate(unsealed.get(), size), 0);
  EXPECT_EQ(Ask(fd.get(), RegisterRequest(base, size), unsealed.get()), kInvalid);
  // A sealed memfd shorter than claimed, and a range that wraps.
  const uint64_t shm = AllocShm(size);
  auto region = FindShm(shm, size);
  ASSERT_TRUE(region.has_value());
  EXPECT_EQ(Ask(fd.get(), RegisterRequest(base, 2 * size), region->fd.get()), kInvalid);
  EXPECT_EQ(Ask(fd.get(), RegisterRequest(UINT64_MAX - 10, size), region->fd.get()), kInvalid);
  // A descriptor riding on another request.
  EXPECT_EQ(Ask(fd.get(), wire::Writer().Put(uint8_t{10}).Take(), region->fd.get()), kInvalid);
  EXPECT_EQ(service_->counters().mapped_bytes, 0u);
  // A frame announced longer than any allowed: the service ends the connection.
  ASSERT_TRUE(SendAll(fd.get(), wire::Writer().Put(uint32_t{kMaxFrameBytes + 1}).Take(), 2'000));
  std::string body;
  std::vector<UniqueFd> fds;
  EXPECT_EQ(ReadFrame(fd.get(), &body, &fds, 2'000, 2'000), ReadStatus::kClosed);
  EXPECT_TRUE(testing::WaitFor([&] { return service_->counters().dropped >= 1; }, 5'000));
  // Still serving.
  auto client = Connect();
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Health(), 0);
  EXPECT_TRUE(FreeShm(shm));
}

TEST_F(StoreServiceTest, ClientGoneFreesItsMemoryAndKeepsItsObjects) {
  constexpr uint64_t kSize = 1 << 20;
  uint64_t shm = 0;
  {
    auto client = Connect();
    ASSERT_TRUE(client.ok());
    shm = SharedBytes(**client, kSize, 'z');
    EXPECT_EQ(service_->counters().mapped_bytes, kSize);
    EXPECT_EQ((*client)->BatchPutFrom({Item{"kept", shm, kSize}}, PutConfig{}),
              std::vector<int>{0});
  }
  EXPECT_TRUE(testing::WaitFor([&] { return service_->counters().mapped_bytes == 0; }, 5'000));
  EXPECT_TRUE(testing::WaitFor([&] { return service_->counters().clients == 0; }, 5'000));
  auto other = Connect();
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->GetSize("kept"), static_cast<int64_t>(kSize));
  EXPECT_TRUE(FreeShm(shm));
}

TEST_F(StoreServiceTest, DeadServiceIsATypedErrorAndARestartedOneIsReconnected) {
  constexpr uint64_t kSize = 64 << 10;
  auto client = Connect();
  ASSERT_TRUE(client.ok());
  const uint64_t shm = SharedBytes(**client, kSize, 'r');
  EXPECT_EQ((*client)->BatchPutFrom({Item{"before", shm, kSize}}, PutConfig{}),
            std::vector<int>{0});
  service_.reset();
  const int rpc_fail = static_cast<int>(ErrorCode::RPC_FAIL);
  EXPECT_EQ((*client)->Health(), rpc_fail);
  EXPECT_EQ((*client)->BatchGetInto({Item{"before", shm, kSize}}),
            std::vector<int64_t>{rpc_fail});
  // Back on the same socket: the next call reconnects and registers the
  // shared memory again.
  StartService(kToken);
  std::memset(reinterpret_cast<void*>(shm), 0, kSize);
  EXPECT_EQ((*client)->BatchGetInto({Item{"before", shm, kSize}}),
            std::vector<int64_t>{static_cast<int64_t>(kSize)});
  EXPECT_EQ(reinterpret_cast<const char*>(shm)[kSize - 1], 'r');
  client->reset();
  EXPECT_TRUE(FreeShm(shm));
}

}  // namespace
}  // namespace shelfmark::storeservice
