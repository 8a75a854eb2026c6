// The model-checked mixed workload of the cluster tests (cluster_model_test,
// ha_model_test): clients in the test process, each doing mixed
// Put/Get/Remove calls on shared keys, every answer checked against a model
// of what was acknowledged.
//
// The model: operations on one key are serialised by that key's mutex, held
// across the client call, so for each key the model knows the values that
// may be current, and whether the key may be absent:
//   - Put acknowledged OK       -> exactly its value;
//   - Remove acknowledged OK    -> none, absent (and so does OBJECT_NOT_FOUND,
//                                  from Remove or Get: no object exists);
//   - Get returning value v     -> exactly v (it was current);
//   - Put OBJECT_ALREADY_EXISTS -> unchanged (PutStart refused it);
//   - any other failed Put      -> its value is added (PutEnd may have been
//                                  applied although the call failed);
//   - Remove OBJECT_HAS_LEASE   -> unchanged (the master refused it);
//   - any other failed Remove   -> the values stay possible, and so does
//                                  absence (it may have been applied).
// Every Get that returns bytes must return one of the possible values, byte
// for byte ("no wrong bytes"). Whether a Get may answer OBJECT_NOT_FOUND for
// a key the model says cannot be absent depends on the cluster
// (WorkloadOptions::absence_is_checked): where a key may vanish without a
// call (its replicas were on a killed node, or it was evicted) it may; where
// nothing but a Remove takes a key away, that answer is an acknowledged put
// lost, a violation. Every other answer is a typed error, tallied by code.
// Values are self-describing ("key=K writer=W seq=S size=N;" then bytes
// derived from those numbers), so a wrong answer says what it was.
//
// Thread safety: a Worker is used by one thread at a time; the model's
// entries are guarded by their own mutexes; a Workload's methods are called
// from the test's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"

namespace shelfmark::testing {

// --- values ------------------------------------------------------------------

struct ValueId {
  uint32_t key = 0, writer = 0, seq = 0, size = 0;
  bool operator==(const ValueId&) const = default;
};

std::string KeyName(uint32_t key);
std::string Describe(const ValueId& id);
// The header, then bytes of a generator seeded by the id: `id.size` bytes.
std::string MakeValue(const ValueId& id);
std::optional<ValueId> ParseHeader(const std::string& bytes);
// "" when `bytes` is exactly one of the values `possible` for `key`; else
// what is wrong with them.
std::string CheckBytes(uint32_t key, const std::string& bytes,
                       const std::vector<ValueId>& possible);

// --- the model and the tally ---------------------------------------------------

struct KeyModel {
  std::mutex mu;                  // held across each client call on the key
  std::vector<ValueId> possible;  // values that may be current (guarded by mu)
  bool maybe_absent = true;       // the key may hold no object (guarded by mu)

  // The model knows the key's value for sure: exactly one possible, and
  // present (a key that must read back exactly that value when nothing but
  // a Remove takes keys away).
  bool Certain() const { return possible.size() == 1 && !maybe_absent; }
};

enum OpKind { kGet, kPut, kRemove, kOpKinds };
inline constexpr const char* kOpNames[kOpKinds] = {"get", "put", "remove"};

struct Tally {
  static constexpr size_t kViolationsKept = 20;

  std::map<std::string, uint64_t> outcomes;  // "get OK", "put OBJECT_ALREADY_EXISTS", ...
  uint64_t gets_of_held = 0;     // Gets of a key the model held a value for
  uint64_t gets_of_held_ok = 0;  // ... that returned bytes
  uint64_t gets_of_certain = 0;     // Gets of a key the model was certain of
  uint64_t gets_of_certain_ok = 0;  // ... that returned bytes
  int64_t max_ms[kOpKinds] = {};
  uint64_t violation_count = 0;
  std::vector<std::string> violations;  // the first kViolationsKept

  uint64_t calls() const;
  void Count(OpKind op, ErrorCode code);
  void Violation(std::string what);
  void Merge(const Tally& other);
  // The kept violations, one per line (what a failed EXPECT prints).
  std::string ListViolations() const;
};

// The outcomes by code, the reads of held keys, the longest call of each
// kind against `hang_bound_ms`.
void PrintTally(const Tally& tally, int64_t hang_bound_ms);
// GoogleTest expectations: no violation (the kept ones listed) and no call
// as long as `hang_bound_ms`.
void ExpectCorrectAndBounded(const Tally& tally, int64_t hang_bound_ms);

struct WorkloadOptions {
  uint32_t keys = 1'000;  // keys 0 .. keys-1 (KeyName)
  uint32_t min_value = 256;
  uint32_t max_value = 64 << 10;
  uint32_t max_replicas = 2;  // each Put asks 1 .. max_replicas replicas
  // Nothing takes a key away but a Remove (no node is lost, nothing is
  // evicted): a Get answering OBJECT_NOT_FOUND for a key the model holds is
  // a violation (an acknowledged put lost). False: it is allowed.
  bool absence_is_checked = false;
};

// One client's share of the workload; its calls keep the model up to date.
class Worker {
 public:
  // `model` must hold at least options.keys entries.
  Worker(Client* client, uint32_t writer, std::vector<KeyModel>* model,
         const WorkloadOptions& options);

  // `ops` calls on random keys: 40% Get, 40% Put (1 or 2 replicas, with or
  // without a checksum), 20% Remove (forced or not); each counted in *done.
  // Ends early once *stop (when given) is true.
  void Run(int ops, std::atomic<uint64_t>* done, const std::atomic<bool>* stop = nullptr);

  // Precondition for the three: the key's mutex is held. Each answers the
  // call's code.
  ErrorCode Get(uint32_t key);
  ErrorCode Put(uint32_t key, const PutOptions& options);
  ErrorCode Remove(uint32_t key, bool force);

  const Tally& tally() const { return tally_; }

 private:
  // One to max_replicas replicas, with or without a stored checksum.
  PutOptions RandomOptions();

  // Calls `call`, keeping the longest time an `op` took.
  template <typename F>
  auto Timed(OpKind op, F call) -> decltype(call());

  Client* client_;
  uint32_t writer_;
  std::vector<KeyModel>* model_;
  WorkloadOptions options_;
  std::mt19937_64 rng_;
  uint32_t seq_ = 0;
  Tally tally_;
};

// The whole workload: one Worker per client (writers 0 .. n-1) on one
// model, their threads, a progress count; a first value on every key and a
// final read of every key through the first client (writer n).
class Workload {
 public:
  // The clients must outlive the Workload.
  Workload(std::vector<Client*> clients, WorkloadOptions options);
  ~Workload();  // Stop()s and Join()s

  // Puts a first value on every key, so reads of held keys dominate from
  // the start; a GoogleTest failure (fatal) names the first key refused.
  void Preload();
  // Starts one thread per client, each doing `ops_per_client` calls (fewer
  // once Stop() was called).
  void Start(int ops_per_client);
  // Asks the workers to end after their current call.
  void Stop() { stop_.store(true); }
  void Join();

  uint64_t done() const { return done_.load(); }
  // True once done() >= target; false after `deadline_ms` (stuck).
  bool WaitForProgress(uint64_t target, int64_t deadline_ms) const;

  // After Join: every key read once more, alone, against the model. With
  // absence_is_checked, a key the model is certain of must answer exactly
  // its value (any error is a violation). The tally of those reads.
  Tally ReadEveryKey();
  // The workers' tallies merged (after Join).
  Tally WorkersTally() const;

  std::vector<KeyModel>& model() { return model_; }

 private:
  std::vector<Client*> clients_;
  WorkloadOptions options_;
  std::vector<KeyModel> model_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> done_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace shelfmark::testing
