#include "embedded/embedded_client.h"

#include <chrono>
#include <condition_variable>
#include <utility>

#include "common/mutex.h"

namespace shelfmark {
namespace {

ClientOptions ClientOptionsOf(const EmbeddedOptions& o) {
  ClientOptions c;
  c.master = o.master;
  c.cluster_id = o.cluster_id;
  c.follow_leader_hints = o.follow_leader_hints;
  c.master_token = o.master_token;
  c.protocol = o.protocol;
  c.transport.client_id = o.client_id;
  c.transport.cluster_token = o.cluster_token;
  c.transport.device = o.device;
  // Only a hosted segment needs peers to reach this process's engines.
  if (o.segment_size > 0) c.transport.listen_ip = o.listen_ip;
  c.rdma_factory = o.rdma_factory;
  c.rdma_device_present = o.rdma_device_present;
  c.engine_counters = o.engine_counters;
  c.staging_bytes = o.staging_bytes;
  c.rpc_timeout_ms = o.rpc_timeout_ms;
  c.transfer_timeout_ms = o.transfer_timeout_ms;
  c.location_cache = o.location_cache;
  return c;
}

// The first mount's signal, shared with the node's callback.
struct MountSignal {
  Mutex mu;
  std::condition_variable_any cv;
  bool mounted GUARDED_BY(mu) = false;
};

}  // namespace

Result<std::unique_ptr<EmbeddedClient>> EmbeddedClient::Create(EmbeddedOptions options) {
  auto client = Client::Create(ClientOptionsOf(options));
  if (!client.ok()) return client.error();
  std::unique_ptr<EmbeddedClient> embedded(new EmbeddedClient(std::move(client).value()));
  if (options.segment_size == 0) return embedded;
  const ErrorCode rc = embedded->HostSegment(options);
  if (rc != ErrorCode::OK) return rc;  // the destructor closes what was started
  return embedded;
}

EmbeddedClient::EmbeddedClient(std::unique_ptr<Client> client) : client_(std::move(client)) {}

EmbeddedClient::~EmbeddedClient() { (void)Close(); }

ErrorCode EmbeddedClient::HostSegment(const EmbeddedOptions& options) {
  auto protocol = ChooseProtocol(options.protocol,
                                 options.rdma_factory && options.rdma_device_present);
  if (!protocol.ok()) return protocol.error();
  TransportEngine* engine = client_->engine(*protocol);
  if (engine == nullptr) return ErrorCode::INVALID_PARAMS;
  auto signal = std::make_shared<MountSignal>();
  NodeOptions n;
  n.master = options.master;
  n.cluster_id = options.cluster_id;
  n.follow_leader_hints = options.follow_leader_hints;
  n.master_token = !options.node_token.empty()     ? options.node_token
                   : !options.master_token.empty() ? options.master_token
                                                   : options.cluster_token;
  n.client_id = client_->client_id();
  n.segment_size = options.segment_size;
  n.segment_name = options.segment_name;
  n.ping_interval_ms = options.ping_interval_ms;
  n.rpc_timeout_ms = options.rpc_timeout_ms;
  n.on_mounted = [signal](const Segment&) {
    MutexLock lock(&signal->mu);
    signal->mounted = true;
    signal->cv.notify_all();
  };
  auto node = Node::Create(std::move(n), engine);
  if (!node.ok()) return node.error();
  node_ = std::move(node).value();
  const Segment& s = node_->segment();
  ErrorCode rc = client_->AttachLocalSegment(s.id, node_->memory(), s.size);
  if (rc != ErrorCode::OK) return rc;
  node_thread_ = std::thread([this] { unmounted_ = node_->Run(); });
  // A loop rather than wait_for's predicate: the analysis cannot see that a
  // lambda runs with the lock held.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.mount_timeout_ms);
  MutexLock lock(&signal->mu);
  while (!signal->mounted) {
    if (signal->cv.wait_until(lock, deadline) == std::cv_status::timeout) break;
  }
  return signal->mounted ? ErrorCode::OK : ErrorCode::RPC_FAIL;
}

std::optional<Segment> EmbeddedClient::segment() const {
  if (node_ == nullptr) return std::nullopt;
  return node_->segment();
}

NodeCounters EmbeddedClient::node_counters() const {
  return node_ == nullptr ? NodeCounters{} : node_->counters();
}

ErrorCode EmbeddedClient::Close() {
  ErrorCode rc = ErrorCode::OK;
  if (node_ != nullptr) {
    // No more local copies, then the node stops (and unmounts).
    client_->DetachLocalSegment(node_->segment().id);
    node_->Stop();
    if (node_thread_.joinable()) {
      node_thread_.join();
      rc = unmounted_;
    }
    node_.reset();  // unregisters from the client's engine: before the client
  }
  client_.reset();
  return rc;
}

}  // namespace shelfmark
