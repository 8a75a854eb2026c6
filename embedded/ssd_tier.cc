#include "embedded/ssd_tier.h"

#include <charconv>
#include <utility>

#include "ssdstore/storage_backend_factory.h"

namespace shelfmark {
namespace {

constexpr int64_t kMaxHeartbeatSeconds = 3600;

// MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS in ms; false on a bad value.
bool PollInterval(const EnvLookup& env, int64_t* ms, std::string* error) {
  const char* v = env(std::string(kEnvOffloadHeartbeat).c_str());
  if (v == nullptr || *v == '\0') return true;
  const std::string_view text(v);
  int64_t seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 1 ||
      seconds > kMaxHeartbeatSeconds) {
    if (error != nullptr) {
      *error = std::string(kEnvOffloadHeartbeat) + "=" + std::string(text) +
               ": expected whole seconds in [1, " + std::to_string(kMaxHeartbeatSeconds) + "]";
    }
    return false;
  }
  *ms = seconds * 1000;
  return true;
}

}  // namespace

Result<SsdTierConfig> ResolveSsdTier(std::string_view path, const EnvLookup& env,
                                     std::string* error) {
  const std::string explicit_path(path);
  // The explicit path stands in for the variable, so one parser checks both.
  EnvLookup lookup = [&](const char* name) -> const char* {
    if (!explicit_path.empty() && kEnvStoragePath == name) return explicit_path.c_str();
    return env(name);
  };
  const char* where = lookup(std::string(kEnvStoragePath).c_str());
  if (where == nullptr || *where == '\0') {
    if (error != nullptr) {
      *error =
          "the SSD tier needs a directory: ssd_offload_path or " + std::string(kEnvStoragePath);
    }
    return ErrorCode::INVALID_PARAMS;
  }
  SsdTierConfig config;
  auto storage = ParseStorageConfig(lookup, error);
  if (!storage.ok()) {
    // A bad explicit path is named as the caller gave it.
    const std::string var = std::string(kEnvStoragePath) + "=";
    if (!explicit_path.empty() && error != nullptr && error->rfind(var, 0) == 0) {
      error->replace(0, var.size(), "ssd_offload_path=");
    }
    return storage.error();
  }
  config.storage = std::move(storage).value();
  if (!PollInterval(env, &config.offload_poll_interval_ms, error)) {
    return ErrorCode::INVALID_PARAMS;
  }
  return config;
}

Result<std::unique_ptr<SsdTier>> SsdTier::Open(const SsdTierConfig& config, TransportEngine* engine,
                                               std::string* error) {
  if (engine == nullptr || engine->messages() == nullptr || engine->endpoint().empty()) {
    // UCX carries them; a store with protocol rdma has no UCX engine ("auto" has).
    if (error != nullptr) *error = "no listening UCX engine to serve LOCAL_DISK reads on";
    return ErrorCode::INVALID_PARAMS;
  }
  auto backend = OpenStorageBackend(config.storage, nullptr, error);
  if (!backend.ok()) return backend.error();
  return std::unique_ptr<SsdTier>(new SsdTier(config, std::move(backend).value(), engine));
}

SsdTier::SsdTier(SsdTierConfig config, std::unique_ptr<StorageBackend> backend,
                 TransportEngine* engine)
    : config_(std::move(config)), backend_(std::move(backend)), engine_(engine) {}

SsdTier::~SsdTier() { (void)Close(); }

void SsdTier::Wire(NodeOptions& node) {
  node.disk = backend_.get();
  node.disk_am = engine_->messages();
  node.disk_endpoint = engine_->endpoint();
  node.offload_poll_interval_ms = config_.offload_poll_interval_ms;
}

SsdTierStats SsdTier::stats() const {
  SsdTierStats s;
  s.objects = backend_->object_count();
  s.used_bytes = backend_->used_bytes();
  s.capacity_bytes = config_.storage.total_size_limit_bytes;
  s.corrupt_records = backend_->corrupt_records();
  return s;
}

ErrorCode SsdTier::Close() {
  if (closed_) return ErrorCode::OK;
  closed_ = true;
  return backend_->Close();
}

}  // namespace shelfmark
