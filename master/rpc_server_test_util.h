// The RPC server tests' fixture: an RpcServer on a free loopback port over
// a real Directory (no background thread, ManualClock), with helpers to
// reach it through MasterClient.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "auth/token_table.h"
#include "common/clock.h"
#include "directory/directory.h"
#include "directory/directory_test_util.h"
#include "master/rpc_server.h"
#include "rpc/master_client.h"
#include "service/metrics.h"
#include "testing/process_util.h"

namespace shelfmark {

// An RpcServer over `dir` on a free loopback port, default options and no
// metrics: the master that client, embedded and store service tests talk
// to. `*address` is its "127.0.0.1:PORT"; a server that cannot start fails
// the test (check HasFatalFailure() after the call).
inline void StartLoopbackMaster(Directory& dir, std::unique_ptr<RpcServer>* server,
                                std::string* address) {
  RpcServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = 0;
  *server = std::make_unique<RpcServer>(dir, nullptr, options);
  auto port = (*server)->Start();
  ASSERT_TRUE(port.ok()) << ErrorCodeName(port.error());
  *address = "127.0.0.1:" + std::to_string(*port);
}

class RpcServerFixture : public ::testing::Test {
 protected:
  static constexpr size_t kMaxBatch = 4096;

  RpcServerFixture() {
    DirectoryOptions options;
    options.enable_offload = true;
    dir_ = MakeTestDirectory(&clock_, options);
  }

  void SetUp() override {
    server_ = MakeServer(0);
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << ErrorCodeName(port.error());
    port_ = *port;
    ASSERT_NE(port_, 0);
  }

  void TearDown() override {
    if (server_) server_->Stop();
  }

  std::unique_ptr<RpcServer> MakeServer(uint16_t port) {
    RpcServerOptions options;
    options.bind_address = "127.0.0.1";
    options.port = port;
    options.threads = 2;
    options.max_batch = kMaxBatch;
    Configure(options);
    return std::make_unique<RpcServer>(*dir_, &metrics_, options);
  }

  // A derived fixture's changes to the server's options (tokens, limits).
  virtual void Configure(RpcServerOptions&) {}

  MasterClientOptions ClientOptions(UUID id = UUID::Generate()) {
    MasterClientOptions options;
    options.address = "127.0.0.1:" + std::to_string(port_);
    options.client_id = id;
    options.call_timeout_ms = 5000;
    return options;
  }

  static Segment MakeSegment(const std::string& name, uint64_t base = 0x10000000,
                             uint64_t size = 64 << 20) {
    return MakeTestSegment(name, base, size, "10.0.0.1:" + std::to_string(1000 + name.size()),
                           std::string("rk\0ey-", 6) + name);  // binary-safe
  }

  // PutStart + PutEnd through `client`.
  static void Put(MasterClient& client, const std::string& key, uint64_t size = 1024,
                  const std::string& tenant = "", PutConfig config = {}) {
    auto started = client.PutStart(tenant, key, size, config);
    ASSERT_TRUE(started.ok()) << key << ": " << ErrorCodeName(started.error());
    ASSERT_EQ(client.PutEnd(tenant, key), ErrorCode::OK) << key;
  }

  // Sets `options.tokens` from a token file's text (auth/token_table.h).
  static void UseTokens(const char* text, RpcServerOptions& options) {
    std::string error;
    auto table = auth::TokenTable::Parse(text, &error);
    ASSERT_TRUE(table.ok()) << error;
    options.tokens = *table;
  }

  double Metric(const std::string& name, const std::string& method) {
    return testing::MetricValue(metrics_.RenderPrometheus(), name + "{method=\"" + method + "\"}");
  }

  ManualClock clock_;
  std::unique_ptr<Directory> dir_;
  MetricsRegistry metrics_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

}  // namespace shelfmark
