// The fixture of the client tests (client_test.cc, zero_copy_test.cc): the
// real master service (RpcServer + Directory on 127.0.0.1:0) and real Nodes
// whose segments are registered with loopback engines: bytes really move
// (memcpy with the owner-side checks).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/clock.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "master/rpc_server_test_util.h"
#include "node/node.h"
#include "transport/loopback_engine.h"

namespace shelfmark {

constexpr int64_t kLeaseTtlMs = 1000;
// Clients of these tests keep locations until 100 ms before the lease ends
// (the default margin, 1000 ms, would be the whole lease here).
constexpr int64_t kCacheMarginMs = 100;

// The client's engine, with a clock that moves `advance_ms` during every
// transfer: a transfer that takes that long, deterministically.
class SlowEngine final : public TransportEngine {
 public:
  SlowEngine(ManualClock* clock, std::atomic<int64_t>* advance_ms,
             std::atomic<int>* transfers = nullptr)
      : inner_(TransportOptions{}), clock_(clock), advance_ms_(advance_ms), transfers_(transfers) {}
  std::string_view protocol() const override { return inner_.protocol(); }
  std::string endpoint() const override { return inner_.endpoint(); }
  Result<MemoryRegion> RegisterMemory(void* addr, uint64_t size, bool remote) override {
    return inner_.RegisterMemory(addr, size, remote);
  }
  void UnregisterMemory(const MemoryRegion& region) override { inner_.UnregisterMemory(region); }
  TransferStatus Transfer(TransferKind kind, std::span<const TransferOp> ops,
                          int64_t timeout_ms) override {
    TransferStatus st = inner_.Transfer(kind, ops, timeout_ms);
    clock_->AdvanceMs(advance_ms_->load());
    if (transfers_ != nullptr) ++*transfers_;
    return st;
  }

 private:
  LoopbackEngine inner_;
  ManualClock* clock_;
  std::atomic<int64_t>* advance_ms_;
  std::atomic<int>* transfers_;
};

// A Node on a loopback engine, its Run() loop on a thread.
struct TestNode {
  std::unique_ptr<LoopbackEngine> engine;
  std::unique_ptr<Node> node;
  std::thread loop;

  ~TestNode() {
    if (node) node->Stop();
    if (loop.joinable()) loop.join();
  }
  // The node's bytes at a replica address.
  uint8_t* At(uint64_t buffer_address) const {
    return node->memory() + (buffer_address - node->segment().base);
  }
};

// A registered buffer of a client, unregistered at the end (the zero-copy
// and session tests).
class Registered {
 public:
  Registered(Client& client, size_t size) : client_(client), bytes_(size, '\0') {
    EXPECT_EQ(client_.RegisterBuffer(bytes_.data(), bytes_.size()), ErrorCode::OK);
  }
  ~Registered() { client_.UnregisterBuffer(bytes_.data()); }
  char* data() { return bytes_.data(); }
  std::string Str(size_t offset, size_t length) const { return bytes_.substr(offset, length); }

 private:
  Client& client_;
  std::string bytes_;
};

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() {
    DirectoryOptions options;
    options.default_kv_lease_ttl_ms = kLeaseTtlMs;
    options.put_reservation_share = kReservationShare;
    dir_ = MakeTestDirectory(&master_clock_, options);
  }
  // Room for a batch of 8 reservations of 64 KiB in one 32 MiB segment
  // (--put_reservation_share; the default is 1%).
  static constexpr double kReservationShare = 0.05;

  void SetUp() override {
    StartLoopbackMaster(*dir_, &server_, &address_);
  }

  void TearDown() override {
    client_.reset();
    nodes_.clear();
    server_->Stop();
  }

  TestNode& StartNode(const std::string& name, uint64_t size = 32 << 20) {
    auto tn = std::make_unique<TestNode>();
    tn->engine = std::make_unique<LoopbackEngine>(TransportOptions{});
    NodeOptions options;
    options.master = address_;
    options.segment_size = size;
    options.segment_name = name;
    options.ping_interval_ms = 1000;
    auto mounted = std::make_shared<std::promise<void>>();
    options.on_mounted = [mounted, first = true](const Segment&) mutable {
      if (first) mounted->set_value();
      first = false;
    };
    auto node = Node::Create(options, tn->engine.get());
    EXPECT_TRUE(node.ok());
    tn->node = std::move(node).value();
    tn->loop = std::thread([n = tn->node.get()] { (void)n->Run(); });
    mounted->get_future().wait();
    nodes_.push_back(std::move(tn));
    return *nodes_.back();
  }

  // A client with a slow loopback engine (advance 0 unless a test sets it).
  Client& MakeClient(uint64_t staging_bytes = 8 << 20) {
    ClientOptions options;
    options.master = address_;
    options.protocol = "none";
    options.staging_bytes = staging_bytes;
    options.clock = &client_clock_;
    options.location_cache = cache_options_;
    options.reserve_batch_puts = true;  // (off by default) every client test exercises it
    std::vector<std::unique_ptr<TransportEngine>> engines;
    engines.push_back(std::make_unique<SlowEngine>(&client_clock_, &advance_ms_, &transfers_));
    auto client = Client::Create(options, std::move(engines));
    EXPECT_TRUE(client.ok()) << ErrorCodeName(client.error());
    client_ = std::move(client).value();
    return *client_;
  }

  TestNode* NodeOf(const MemoryDescriptor& replica) {
    for (auto& n : nodes_) {
      if (n->node->segment().id == replica.segment_id) return n.get();
    }
    return nullptr;
  }

  static std::string Pattern(size_t size, int seed) {
    std::string s(size, '\0');
    for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + i / 4096) & 0xff);
    return s;
  }

  static LocationCacheOptions CacheOptions(uint64_t max_entries = 1024) {
    LocationCacheOptions o;
    o.max_entries = max_entries;
    o.margin_ms = kCacheMarginMs;
    return o;
  }

  ManualClock master_clock_;
  ManualClock client_clock_;
  LocationCacheOptions cache_options_ = CacheOptions();  // MakeClient's
  std::atomic<int64_t> advance_ms_{0};
  std::atomic<int> transfers_{0};  // Transfer calls of MakeClient's engine
  std::unique_ptr<Directory> dir_;
  std::unique_ptr<RpcServer> server_;
  std::string address_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
  std::unique_ptr<Client> client_;
};

}  // namespace shelfmark
