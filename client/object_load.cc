#include "client/object_load.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace shelfmark {

std::string LoadValue(std::string_view key, uint64_t size) {
  uint64_t x = std::hash<std::string_view>{}(key) | 1;
  std::string v(size, '\0');
  for (uint64_t at = 0; at < size; at += sizeof(x)) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(v.data() + at, &x, std::min<uint64_t>(sizeof(x), size - at));
  }
  return v;
}

std::string LoadKey(std::string_view prefix, uint64_t index) {
  return std::string(prefix) + "-" + std::to_string(index);
}

ErrorCode PutRetryingWhileFull(Client& client, std::string_view tenant, std::string_view key,
                               std::string_view value, const PutOptions& options,
                               int64_t retry_ms, uint64_t* retries) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(retry_ms);
  ErrorCode rc = client.Put(tenant, key, value, options);
  while (rc == ErrorCode::NO_AVAILABLE_HANDLE && std::chrono::steady_clock::now() < deadline) {
    ++*retries;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rc = client.Put(tenant, key, value, options);
  }
  return rc;
}

FillReport FillObjects(Client& client, std::string_view tenant, std::string_view prefix,
                       uint64_t count, uint64_t size, uint32_t replicas, int64_t retry_ms) {
  FillReport report;
  PutOptions options;
  options.config.replica_num = replicas;
  options.compute_checksum = true;
  for (uint64_t i = 0; i < count; ++i) {
    const std::string key = LoadKey(prefix, i);
    const std::string value = LoadValue(key, size);
    const ErrorCode rc =
        PutRetryingWhileFull(client, tenant, key, value, options, retry_ms, &report.retries);
    if (rc != ErrorCode::OK) {
      report.error = rc;
      report.failed_key = key;
      return report;
    }
    ++report.stored;
  }
  return report;
}

namespace {

// Counts a failure in *counter and remembers the first one.
void CountFailure(VerifyReport* r, uint64_t* counter, const std::string& key, ErrorCode rc) {
  ++*counter;
  if (r->first_error == ErrorCode::OK) {
    r->first_error = rc;
    r->first_failed_key = key;
  }
}

}  // namespace

VerifyReport VerifyObjects(Client& client, std::string_view tenant, std::string_view prefix,
                           uint64_t count, uint64_t size) {
  VerifyReport report;
  // One lookup per key: the replica list that classifies the object is the
  // one the read uses (Read = Get without its own Locate). The master's
  // current list, not a cached one (which lacks replicas added since).
  GetOptions fresh;
  fresh.use_location_cache = false;
  std::vector<char> buffer(size);
  if (ErrorCode rc = client.RegisterBuffer(buffer.data(), size); rc != ErrorCode::OK) {
    for (uint64_t i = 0; i < count; ++i) {
      CountFailure(&report, &report.errors, LoadKey(prefix, i), rc);
    }
    return report;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const std::string key = LoadKey(prefix, i);
    auto where = client.Locate(tenant, key, fresh);
    const ErrorCode rc =
        where.ok() ? client.Read(*where, buffer.data(), size) : where.error();
    if (rc == ErrorCode::OBJECT_NOT_FOUND) {
      ++report.evicted;
      continue;
    }
    if (rc != ErrorCode::OK) {
      CountFailure(&report, &report.errors, key, rc);
      continue;
    }
    if (where->info.size != size || LoadValue(key, size) != std::string_view(buffer.data(), size)) {
      CountFailure(&report, &report.wrong_bytes, key, ErrorCode::DATA_CORRUPTED);
      continue;
    }
    bool memory = false, disk = false;
    for (const ReplicaDescriptor& r : where->info.replicas) {
      (r.type == ReplicaType::MEMORY ? memory : disk) = true;
    }
    if (memory && disk) {
      ++report.memory_and_disk;
    } else if (memory) {
      ++report.memory_only;
    } else {
      ++report.disk_only;
    }
  }
  client.UnregisterBuffer(buffer.data());
  return report;
}

}  // namespace shelfmark
