#include "perf/get_options.h"

#include "common/flags.h"
#include "common/host_port.h"
#include "common/object_key.h"
#include "perf/bench_util.h"
#include "perf/master_flags.h"

namespace shelfmark {
namespace {

void AddFlags(FlagSet* f, GetBenchOptions* o) {
  AddMasterFlags(f, &o->master, &o->cluster_id);
  f->AddString("replica", &o->replica, "replica type(s) to measure",
               {kReplicaMemory, kReplicaLocalDisk, "all"});
  f->AddString("protocol", &o->protocol, "engine for MEMORY reads", {"rdma", "ucx", "auto"});
  f->AddString("size", &o->sizes_text, "object sizes in bytes, comma-separated");
  f->AddInt64("iters", &o->iters, "timed gets per replica type and size (all threads)", 1,
              1'000'000'000);
  f->AddInt64("warmup", &o->warmup, "untimed gets per thread first", 0, 1'000'000);
  f->AddInt64("concurrency", &o->concurrency, "client threads issuing gets", 1, 256);
  f->AddInt64("keys", &o->keys, "objects per size", 1, 1'000'000);
  f->AddString("key_dist", &o->key_dist, "which key each get reads", {"uniform", "zipf"});
  f->AddDouble("zipf_theta", &o->zipf_theta, "zipf skew", 0.01, 10);
  f->AddInt64("batch", &o->batch, "keys per get (>1: one BatchGet, memory only)", 1, 4096);
  f->AddBool("location_cache", &o->location_cache,
             "serve repeated gets of a key within its lease without a master lookup");
  f->AddBool("lookup_channel", &o->lookup_channel,
             "master lookups over its lookup channel (false: Cap'n Proto RPC)");
  f->AddString("disk_dirs", &o->disk_dirs_text,
               "nodes' SSD directories, comma-separated (the pread baseline reads there)");
  f->AddInt64("offload_wait_s", &o->offload_wait_s,
              "seconds to wait for LOCAL_DISK replicas to appear", 1, 3600);
  f->AddBool("json", &o->json, "one JSON object per result line");
  f->AddString("json_out", &o->json_out, "also write the JSON lines to this file");
  f->AddString("plot", &o->plot, "write the latency distributions to this PNG (gnuplot)");
  o->credential_flags.Add(*f);
  f->AddString("device", &o->device, "RDMA device for the client's QPs (\"\" = the first)");
  f->AddString("tenant", &o->tenant, "tenant of the benchmark objects");
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    if (comma > at) out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

// "" when the parsed values are consistent, else what is wrong.
std::string Check(const FlagSet& flags, GetBenchOptions* o) {
  if (!flags.positional().empty()) return "unexpected argument '" + flags.positional()[0] + "'";
  if (std::string error = CheckMasterFlags(o->master, o->cluster_id); !error.empty()) {
    return error;
  }
  if (!ParseSizeList(o->sizes_text, &o->sizes)) {
    return "flag --size expects positive integers separated by commas, got '" + o->sizes_text +
           "'";
  }
  if (ValidateTenant(o->tenant) != ErrorCode::OK) {
    return "flag --tenant must be 1.." + std::to_string(kMaxTenantLength) + " bytes";
  }
  ParseKeyDistribution(o->key_dist, &o->distribution);  // the FlagSet allowed only valid names
  o->replicas.clear();
  if (o->replica != kReplicaLocalDisk) o->replicas.push_back(kReplicaMemory);
  if (o->replica != kReplicaMemory) o->replicas.push_back(kReplicaLocalDisk);
  if (o->batch > 1 && o->replica != kReplicaMemory) {
    return "flag --batch > 1 needs --replica=memory (BatchGet reads MEMORY replicas first)";
  }
  if (o->batch > o->keys) return "flag --batch must not exceed --keys";
  o->disk_dirs = SplitList(o->disk_dirs_text);
  for (const std::string& dir : o->disk_dirs) {
    if (dir.front() != '/') return "flag --disk_dirs expects absolute paths, got '" + dir + "'";
  }
  return "";
}

}  // namespace

FlagOutcome ParseGetBenchOptions(int argc, const char* const* argv, GetBenchOptions* o,
                                 std::string* message) {
  return ParseBenchFlags(
      argc, argv, [o](FlagSet* f) { AddFlags(f, o); },
      [o](const FlagSet& f) { return Check(f, o); }, message);
}

}  // namespace shelfmark
