#include "tests/model_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "testing/wait_for.h"

namespace shelfmark::testing {
namespace {

std::string Header(const ValueId& id) {
  return "key=" + std::to_string(id.key) + " writer=" + std::to_string(id.writer) +
         " seq=" + std::to_string(id.seq) + " size=" + std::to_string(id.size) + ";";
}

std::string Printable(const std::string& bytes) {
  std::string out;
  for (char c : bytes.substr(0, 48)) out += (c >= 32 && c < 127) ? c : '.';
  return out;
}

std::string DescribeAll(const std::vector<ValueId>& ids) {
  std::string out = "[";
  for (const ValueId& id : ids) out += (out.size() > 1 ? ", " : "") + Describe(id);
  return out + "]";
}

}  // namespace

// --- values ------------------------------------------------------------------

std::string KeyName(uint32_t key) { return "model-" + std::to_string(key); }

std::string Describe(const ValueId& id) {
  return "{key " + std::to_string(id.key) + " writer " + std::to_string(id.writer) + " seq " +
         std::to_string(id.seq) + " size " + std::to_string(id.size) + "}";
}

std::string MakeValue(const ValueId& id) {
  std::string value = Header(id);
  std::mt19937_64 gen((uint64_t{id.key} << 40) ^ (uint64_t{id.writer} << 32) ^ id.seq);
  while (value.size() < id.size) {
    const uint64_t word = gen();
    value.append(reinterpret_cast<const char*>(&word),
                 std::min<size_t>(sizeof(word), id.size - value.size()));
  }
  return value;
}

std::optional<ValueId> ParseHeader(const std::string& bytes) {
  ValueId id;
  int used = 0;
  if (std::sscanf(bytes.c_str(), "key=%u writer=%u seq=%u size=%u;%n", &id.key, &id.writer,
                  &id.seq, &id.size, &used) != 4 || used == 0) {
    return std::nullopt;
  }
  return id;
}

std::string CheckBytes(uint32_t key, const std::string& bytes,
                       const std::vector<ValueId>& possible) {
  const std::optional<ValueId> id = ParseHeader(bytes);
  if (!id) {
    return "unrecognised bytes (size " + std::to_string(bytes.size()) + ", starting '" +
           Printable(bytes) + "')";
  }
  const std::string expected = MakeValue(*id);
  if (bytes != expected) {
    const auto diff = std::mismatch(bytes.begin(), bytes.end(), expected.begin(), expected.end());
    return "corrupt bytes of " + Describe(*id) + " (size " + std::to_string(bytes.size()) +
           ", first difference at offset " + std::to_string(diff.first - bytes.begin()) + ")";
  }
  if (id->key != key) return "the value of another key: " + Describe(*id);
  if (std::find(possible.begin(), possible.end(), *id) == possible.end()) {
    return "a value the model does not hold: " + Describe(*id) + ", possible " +
           DescribeAll(possible);
  }
  return "";
}

// --- the tally -------------------------------------------------------------------

uint64_t Tally::calls() const {
  uint64_t n = 0;
  for (const auto& [name, count] : outcomes) n += count;
  return n;
}

void Tally::Count(OpKind op, ErrorCode code) {
  ++outcomes[std::string(kOpNames[op]) + " " + std::string(ErrorCodeName(code))];
}

void Tally::Violation(std::string what) {
  if (violations.size() < kViolationsKept) violations.push_back(std::move(what));
  ++violation_count;
}

void Tally::Merge(const Tally& other) {
  for (const auto& [name, n] : other.outcomes) outcomes[name] += n;
  gets_of_held += other.gets_of_held;
  gets_of_held_ok += other.gets_of_held_ok;
  gets_of_certain += other.gets_of_certain;
  gets_of_certain_ok += other.gets_of_certain_ok;
  for (int op = 0; op < kOpKinds; ++op) max_ms[op] = std::max(max_ms[op], other.max_ms[op]);
  violation_count += other.violation_count;
  for (const std::string& v : other.violations) {
    if (violations.size() < kViolationsKept) violations.push_back(v);
  }
}

std::string Tally::ListViolations() const {
  std::string all;
  for (const std::string& v : violations) all += "\n  " + v;
  return all;
}

void PrintTally(const Tally& tally, int64_t hang_bound_ms) {
  std::printf("outcomes:\n");
  for (const auto& [name, n] : tally.outcomes) {
    std::printf("  %-40s %8llu\n", name.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("gets of keys the model held: %llu, returned bytes: %llu\n",
              static_cast<unsigned long long>(tally.gets_of_held),
              static_cast<unsigned long long>(tally.gets_of_held_ok));
  std::printf("gets of keys the model was certain of: %llu, returned bytes: %llu\n",
              static_cast<unsigned long long>(tally.gets_of_certain),
              static_cast<unsigned long long>(tally.gets_of_certain_ok));
  std::printf("longest call: get %lld ms, put %lld ms, remove %lld ms (hang bound %lld ms)\n",
              static_cast<long long>(tally.max_ms[kGet]),
              static_cast<long long>(tally.max_ms[kPut]),
              static_cast<long long>(tally.max_ms[kRemove]),
              static_cast<long long>(hang_bound_ms));
}

void ExpectCorrectAndBounded(const Tally& tally, int64_t hang_bound_ms) {
  EXPECT_EQ(tally.violation_count, 0u) << tally.ListViolations();
  for (int op = 0; op < kOpKinds; ++op) {
    EXPECT_LT(tally.max_ms[op], hang_bound_ms) << kOpNames[op] << " hung";
  }
}

// --- the worker ------------------------------------------------------------------

Worker::Worker(Client* client, uint32_t writer, std::vector<KeyModel>* model,
               const WorkloadOptions& options)
    : client_(client), writer_(writer), model_(model), options_(options), rng_(writer + 1) {}

void Worker::Run(int ops, std::atomic<uint64_t>* done, const std::atomic<bool>* stop) {
  for (int i = 0; i < ops && (stop == nullptr || !stop->load()); ++i) {
    const uint32_t key = static_cast<uint32_t>(rng_() % options_.keys);
    const uint64_t dice = rng_() % 100;
    std::lock_guard<std::mutex> lock((*model_)[key].mu);
    if (dice < 40) {
      Get(key);
    } else if (dice < 80) {
      Put(key, RandomOptions());
    } else {
      Remove(key, /*force=*/rng_() % 2 == 0);
    }
    done->fetch_add(1, std::memory_order_relaxed);
  }
}

ErrorCode Worker::Get(uint32_t key) {
  KeyModel& m = (*model_)[key];
  const bool held = !m.possible.empty();
  const bool certain = m.Certain();
  Result<std::string> got = Timed(kGet, [&] { return client_->Get("", KeyName(key)); });
  tally_.Count(kGet, got.error());
  tally_.gets_of_held += held;
  tally_.gets_of_held_ok += held && got.ok();
  tally_.gets_of_certain += certain;
  tally_.gets_of_certain_ok += certain && got.ok();
  if (got.error() == ErrorCode::OBJECT_NOT_FOUND) {
    if (options_.absence_is_checked && !m.maybe_absent) {
      tally_.Violation("writer " + std::to_string(writer_) + " Get(" + KeyName(key) +
                       ") answered OBJECT_NOT_FOUND: an acknowledged value lost, possible " +
                       DescribeAll(m.possible));
    }
    m.possible.clear();
    m.maybe_absent = true;
  }
  if (!got.ok()) return got.error();
  const std::string wrong = CheckBytes(key, *got, m.possible);
  if (!wrong.empty()) {
    tally_.Violation("writer " + std::to_string(writer_) + " Get(" + KeyName(key) +
                     ") returned " + wrong);
    return ErrorCode::OK;
  }
  m.possible = {*ParseHeader(*got)};
  m.maybe_absent = false;
  return ErrorCode::OK;
}

ErrorCode Worker::Put(uint32_t key, const PutOptions& options) {
  KeyModel& m = (*model_)[key];
  const uint32_t sizes = options_.max_value - options_.min_value + 1;
  const ValueId id{key, writer_, seq_++,
                   options_.min_value + static_cast<uint32_t>(rng_() % sizes)};
  const std::string value = MakeValue(id);
  const ErrorCode rc =
      Timed(kPut, [&] { return client_->Put("", KeyName(key), value, options); });
  tally_.Count(kPut, rc);
  if (rc == ErrorCode::OK) {
    m.possible = {id};
    m.maybe_absent = false;
  } else if (rc != ErrorCode::OBJECT_ALREADY_EXISTS) {
    m.possible.push_back(id);
  }
  return rc;
}

ErrorCode Worker::Remove(uint32_t key, bool force) {
  KeyModel& m = (*model_)[key];
  const ErrorCode rc = Timed(kRemove, [&] { return client_->Remove("", KeyName(key), force); });
  tally_.Count(kRemove, rc);
  if (rc == ErrorCode::OK || rc == ErrorCode::OBJECT_NOT_FOUND) {
    m.possible.clear();
    m.maybe_absent = true;
  } else if (rc != ErrorCode::OBJECT_HAS_LEASE) {
    m.maybe_absent = true;  // its outcome is unknown (RPC_FAIL: it may have been applied)
  }
  return rc;
}

PutOptions Worker::RandomOptions() {
  PutOptions options;
  options.config.replica_num = 1 + static_cast<uint32_t>(rng_() % options_.max_replicas);
  options.compute_checksum = rng_() % 2 == 0;
  return options;
}

template <typename F>
auto Worker::Timed(OpKind op, F call) -> decltype(call()) {
  const auto start = std::chrono::steady_clock::now();
  auto result = call();
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start).count();
  tally_.max_ms[op] = std::max(tally_.max_ms[op], ms);
  return result;
}

// --- the workload ------------------------------------------------------------------

Workload::Workload(std::vector<Client*> clients, WorkloadOptions options)
    : clients_(std::move(clients)), options_(options), model_(options_.keys) {}

Workload::~Workload() {
  Stop();
  Join();
}

void Workload::Preload() {
  ASSERT_FALSE(clients_.empty());
  Worker preload(clients_[0], static_cast<uint32_t>(clients_.size()), &model_, options_);
  for (uint32_t key = 0; key < options_.keys; ++key) {
    std::lock_guard<std::mutex> lock(model_[key].mu);
    const ErrorCode rc = preload.Put(key, PutOptions{});
    ASSERT_EQ(rc, ErrorCode::OK) << KeyName(key) << ": " << ErrorCodeName(rc);
  }
}

void Workload::Start(int ops_per_client) {
  for (size_t c = 0; c < clients_.size(); ++c) {
    workers_.push_back(
        std::make_unique<Worker>(clients_[c], static_cast<uint32_t>(c), &model_, options_));
  }
  for (size_t c = 0; c < clients_.size(); ++c) {
    threads_.emplace_back(
        [this, c, ops_per_client] { workers_[c]->Run(ops_per_client, &done_, &stop_); });
  }
}

void Workload::Join() {
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool Workload::WaitForProgress(uint64_t target, int64_t deadline_ms) const {
  return WaitFor([&] { return done_.load() >= target; }, deadline_ms);
}

Tally Workload::ReadEveryKey() {
  Worker reader(clients_[0], static_cast<uint32_t>(clients_.size()), &model_, options_);
  Tally misses;
  for (uint32_t key = 0; key < options_.keys; ++key) {
    KeyModel& m = model_[key];
    std::lock_guard<std::mutex> lock(m.mu);
    const bool certain = m.Certain();
    const std::vector<ValueId> expected = m.possible;
    const ErrorCode rc = reader.Get(key);
    // OBJECT_NOT_FOUND (and wrong bytes) the reader counts itself; any other
    // error on a key the model is certain of is a violation too.
    if (options_.absence_is_checked && certain && rc != ErrorCode::OK &&
        rc != ErrorCode::OBJECT_NOT_FOUND) {
      misses.Violation("final Get(" + KeyName(key) + ") answered " +
                       std::string(ErrorCodeName(rc)) + ", expected " + DescribeAll(expected));
    }
  }
  Tally tally = reader.tally();
  tally.Merge(misses);
  return tally;
}

Tally Workload::WorkersTally() const {
  Tally tally;
  for (const auto& w : workers_) tally.Merge(w->tally());
  return tally;
}

}  // namespace shelfmark::testing
