// shelfmark-cli: inspect and edit the master's directory.
//   shelfmark-cli [--master=HOST:PORT] [--tenant=T] [--json]
//       [--cluster_token_file=PATH] [--master_token_file=PATH] SUBCOMMAND ARGS...
//     stat KEY                       every field of one object and its replicas
//     ls [--prefix=P] [--limit=N]    keys of the tenant, one per line
//     count [--all_tenants]          number of objects
//     rm KEY [--force]               remove one object
//     put KEY FILE [--replicas=N]    store FILE's bytes under KEY (with a checksum)
//     get KEY [FILE]                 the object's bytes, into FILE or to stdout
//     fill PREFIX --count=N --size=B [--replicas=N] [--retry_ms=MS]
//                                    put PREFIX-0 .. PREFIX-(N-1), bytes derived
//                                    from each key (client/object_load.h)
//     verify PREFIX --count=N --size=B
//                                    get them all back, compare, and count where
//                                    they were served from (MEMORY, LOCAL_DISK,
//                                    evicted); exit 1 on wrong bytes or errors
// Credentials, for every subcommand (auth/credential_flags.h, docs/security.md):
// the cluster token from --cluster_token_file, a literal --cluster_token
// (warned about: ps shows it) or $SHELFMARK_CLUSTER_TOKEN, proven to the
// nodes by put, get, fill and verify and to the master by every subcommand,
// unless --master_token_file (or $SHELFMARK_MASTER_TOKEN) gives a token of its
// own for the master. A master with tokens refuses a call without the right
// one: "shelfmark-cli: count: UNAUTHENTICATED", exit 1 (PERMISSION_DENIED for
// a token whose role or tenant does not allow the call).
//   put, get, fill and verify move the bytes themselves (--protocol=auto|rdma|ucx,
//   --device=NAME: the RDMA device the client's QPs use, "" = the first); the
//   other subcommands only talk to the master. With
//   --verbose they print the engines' transfer counters on stderr after the
//   transfer, e.g. "shelfmark-cli: rdma reads posted: 1, writes posted: 0,
//   bytes read: 65536, bytes written: 0, connects: 1" (engines that keep no
//   counters, e.g. ucx: "shelfmark-cli: ucx: no transfer counters").
// Exit codes: 0 success, 1 the master answered an error (its ErrorCode name
// on stderr), 2 bad usage or an unreadable or malformed token file.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auth/credential_flags.h"
#include "common/flags.h"
#include "common/host_port.h"
#include "common/json_line.h"
#include "common/object_key.h"
#include "client/client.h"
#include "ha/master_address.h"
#include "rpc/master_client.h"
#include "client/object_load.h"
#include "client/data_client.h"

namespace shelfmark {
namespace {

struct CliOptions {
  std::string master = "127.0.0.1:50051";
  std::string cluster_id;  // with an etcd:// master ("" : the environment, then "shelfmark")
  std::string tenant;
  bool json = false;
  int64_t timeout_ms = 10'000;
  auth::CredentialFlags credential_flags;
  auth::Credentials credentials;  // resolved from credential_flags
  // Subcommand flags.
  std::string prefix;
  int64_t limit = 0;
  bool all_tenants = false;
  bool force = false;
  int64_t replicas = 1;
  std::string protocol = "auto";
  std::string device;
  bool verbose = false;
  int64_t count = 0;
  int64_t size = 0;
  int64_t retry_ms = 10'000;
};

struct Context {
  const CliOptions& o;
  const std::vector<std::string>& args;  // after the subcommand name
  MasterClient& client;
};

struct Subcommand {
  const char* name;
  const char* synopsis;
  size_t min_args;
  size_t max_args;
  bool first_arg_is_key;
  void (*add_flags)(FlagSet*, CliOptions*);
  int (*run)(const Context&);
};

int Fail(std::string_view what, ErrorCode code) {
  std::fprintf(stderr, "shelfmark-cli: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(ErrorCodeName(code).size()), ErrorCodeName(code).data());
  return 1;
}

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::UNKNOWN: return "UNKNOWN";
    case DataType::KVCACHE: return "KVCACHE";
    case DataType::TENSOR: return "TENSOR";
    case DataType::WEIGHT: return "WEIGHT";
  }
  return "UNKNOWN";
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

std::string HexBytes(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string ReplicaJson(const ReplicaDescriptor& r) {
  JsonObject j;
  j.Uint("id", r.id).Str("type", ReplicaTypeName(r.type)).Str("status", ReplicaStatusName(r.status));
  if (r.type == ReplicaType::MEMORY) {
    j.Str("endpoint", r.memory.endpoint)
        .Str("protocol", r.memory.protocol)
        .Str("buffer_address", Hex(r.memory.buffer_address))
        .Uint("size", r.memory.size)
        .Str("rkey", HexBytes(r.memory.rkey))
        .Str("segment_id", r.memory.segment_id.ToString());
  } else {
    j.Str("client_id", r.disk.client_id.ToString())
        .Uint("object_size", r.disk.object_size)
        .Str("endpoint", r.disk.endpoint);
  }
  return j.str();
}

std::string ReplicaText(const ReplicaDescriptor& r) {
  std::string out = "id=" + std::to_string(r.id) + " type=" + ReplicaTypeName(r.type) +
                    " status=" + ReplicaStatusName(r.status);
  if (r.type == ReplicaType::MEMORY) {
    out += " endpoint=" + r.memory.endpoint + " protocol=" + r.memory.protocol +
           " buffer_address=" + Hex(r.memory.buffer_address) +
           " size=" + std::to_string(r.memory.size) + " rkey=" +
           (r.memory.rkey.empty() ? "-" : HexBytes(r.memory.rkey)) +
           " segment_id=" + r.memory.segment_id.ToString();
  } else {
    out += " client_id=" + r.disk.client_id.ToString() +
           " object_size=" + std::to_string(r.disk.object_size) + " endpoint=" + r.disk.endpoint;
  }
  return out;
}

int RunStat(const Context& c) {
  Result<ObjectInfo> info = c.client.Stat(c.o.tenant, c.args[0]);
  if (!info.ok()) return Fail("stat " + c.args[0], info.error());
  const ObjectInfo& i = *info;
  if (c.o.json) {
    std::vector<std::string> replicas;
    for (const auto& r : i.replicas) replicas.push_back(ReplicaJson(r));
    JsonObject j;
    j.Str("key", i.key).Str("tenant", EffectiveTenant(c.o.tenant)).Uint("size", i.size);
    if (i.checksum) j.Uint("checksum", *i.checksum);
    else j.Null("checksum");
    j.Str("data_type", DataTypeName(i.data_type))
        .Str("writer", i.writer.ToString())
        .Int("lease_remaining_ms", i.lease_remaining_ms)
        .Int("soft_pin_remaining_ms", i.soft_pin_remaining_ms)
        .Bool("hard_pin", i.hard_pin)
        .Str("group_id", i.group_id)
        .Raw("replicas", JsonArray(replicas));
    std::printf("%s\n", j.str().c_str());
    return 0;
  }
  auto line = [](const char* name, const std::string& value) {
    std::printf("%-22s %s\n", name, value.c_str());
  };
  line("key:", JsonQuote(i.key));
  line("tenant:", std::string(EffectiveTenant(c.o.tenant)));
  line("size:", std::to_string(i.size));
  line("checksum:", i.checksum ? Hex(*i.checksum) : "none");
  line("data_type:", DataTypeName(i.data_type));
  line("writer:", i.writer.ToString());
  line("lease_remaining_ms:", std::to_string(i.lease_remaining_ms));
  line("soft_pin_remaining_ms:", std::to_string(i.soft_pin_remaining_ms));
  line("hard_pin:", i.hard_pin ? "true" : "false");
  line("group_id:", i.group_id.empty() ? "none" : JsonQuote(i.group_id));
  line("replicas:", std::to_string(i.replicas.size()));
  for (size_t k = 0; k < i.replicas.size(); ++k) {
    std::printf("  [%zu] %s\n", k, ReplicaText(i.replicas[k]).c_str());
  }
  return 0;
}

void AddLsFlags(FlagSet* f, CliOptions* o) {
  f->AddString("prefix", &o->prefix, "only keys starting with this");
  f->AddInt64("limit", &o->limit, "at most this many keys (0 = all)", 0, INT64_MAX);
}

int RunLs(const Context& c) {
  uint64_t limit = c.o.limit == 0 ? UINT64_MAX : static_cast<uint64_t>(c.o.limit);
  auto keys = c.client.ListKeys(c.o.tenant, c.o.prefix, limit);
  if (!keys.ok()) return Fail("ls", keys.error());
  if (c.o.json) {
    std::vector<std::string> quoted;
    for (const auto& k : *keys) quoted.push_back(JsonQuote(k));
    std::printf("%s\n", JsonArray(quoted).c_str());
  } else {
    // Keys are arbitrary bytes; they are printed raw, one per line.
    for (const auto& k : *keys) {
      std::fwrite(k.data(), 1, k.size(), stdout);
      std::fputc('\n', stdout);
    }
  }
  return 0;
}

void AddCountFlags(FlagSet* f, CliOptions* o) {
  f->AddBool("all_tenants", &o->all_tenants, "count the objects of every tenant");
}

int RunCount(const Context& c) {
  auto n = c.client.CountKeys(c.o.tenant, c.o.all_tenants);
  if (!n.ok()) return Fail("count", n.error());
  if (c.o.json) {
    JsonObject j;
    if (c.o.all_tenants) j.Null("tenant");
    else j.Str("tenant", EffectiveTenant(c.o.tenant));
    std::printf("%s\n", j.Bool("all_tenants", c.o.all_tenants).Uint("count", *n).str().c_str());
  } else {
    std::printf("%" PRIu64 "\n", *n);
  }
  return 0;
}

void AddRmFlags(FlagSet* f, CliOptions* o) {
  f->AddBool("force", &o->force, "remove even when leased or referenced");
}

int RunRm(const Context& c) {
  ErrorCode rc = c.client.Remove(c.o.tenant, c.args[0], c.o.force);
  if (rc != ErrorCode::OK) return Fail("rm " + c.args[0], rc);
  if (c.o.json) {
    std::printf("%s\n", JsonObject().Str("key", c.args[0]).Bool("removed", true).str().c_str());
  } else {
    std::printf("removed %s\n", JsonQuote(c.args[0]).c_str());
  }
  return 0;
}

void AddDataFlags(FlagSet* f, CliOptions* o) {
  f->AddString("protocol", &o->protocol, "data-plane protocol", {"auto", "rdma", "ucx"});
  f->AddString("device", &o->device, "RDMA device for the client's QPs (\"\" = the first)");
  f->AddBool("verbose", &o->verbose, "print the engines' transfer counters on stderr");
}

void AddPutFlags(FlagSet* f, CliOptions* o) {
  AddDataFlags(f, o);
  f->AddInt64("replicas", &o->replicas, "MEMORY replicas on distinct segments", 1, 32);
}

// A data-plane client for put/get; nullptr (after a message) on failure.
std::unique_ptr<Client> MakeDataClient(const CliOptions& o) {
  ClientOptions options;
  options.master = o.master;
  options.cluster_id = o.cluster_id;
  options.protocol = o.protocol;
  options.transport.cluster_token = o.credentials.cluster_token;
  options.master_token = o.credentials.master_token;
  options.transport.device = o.device;
  options.rpc_timeout_ms = o.timeout_ms;
  return CreateDataClient(std::move(options), "shelfmark-cli");
}

int RunPut(const Context& c) {
  std::FILE* in = std::fopen(c.args[1].c_str(), "rb");
  if (in == nullptr) return Fail("put: cannot open " + c.args[1], ErrorCode::FILE_OPEN_FAIL);
  std::string value;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), in)) > 0) value.append(buf, n);
  const bool read_error = std::ferror(in) != 0;
  std::fclose(in);
  if (read_error) return Fail("put: cannot read " + c.args[1], ErrorCode::FILE_READ_FAIL);
  auto client = MakeDataClient(c.o);
  if (client == nullptr) return 1;
  PutOptions options;
  options.config.replica_num = static_cast<uint32_t>(c.o.replicas);
  options.compute_checksum = true;
  ErrorCode rc = client->Put(c.o.tenant, c.args[0], value, options);
  if (c.o.verbose) PrintTransferCounters(*client, "shelfmark-cli");
  if (rc != ErrorCode::OK) return Fail("put " + c.args[0], rc);
  if (c.o.json) {
    std::printf("%s\n",
                JsonObject().Str("key", c.args[0]).Uint("size", value.size()).str().c_str());
  } else {
    std::fprintf(stderr, "put %s: %zu bytes\n", JsonQuote(c.args[0]).c_str(), value.size());
  }
  return 0;
}

int RunGet(const Context& c) {
  auto client = MakeDataClient(c.o);
  if (client == nullptr) return 1;
  auto value = client->Get(c.o.tenant, c.args[0]);
  if (c.o.verbose) PrintTransferCounters(*client, "shelfmark-cli");
  if (!value.ok()) return Fail("get " + c.args[0], value.error());
  const bool to_file = c.args.size() > 1;
  std::FILE* out = to_file ? std::fopen(c.args[1].c_str(), "wb") : stdout;
  if (out == nullptr) return Fail("get: cannot create " + c.args[1], ErrorCode::FILE_OPEN_FAIL);
  bool ok = std::fwrite(value->data(), 1, value->size(), out) == value->size();
  ok &= to_file ? std::fclose(out) == 0 : std::fflush(out) == 0;
  if (!ok) return Fail("get: cannot write the bytes", ErrorCode::FILE_WRITE_FAIL);
  return 0;
}

void AddLoadFlags(FlagSet* f, CliOptions* o) {
  AddDataFlags(f, o);
  f->AddInt64("count", &o->count, "objects", 1, 1'000'000'000);
  f->AddInt64("size", &o->size, "bytes per object", 1, 1LL << 32);
}

void AddFillFlags(FlagSet* f, CliOptions* o) {
  AddLoadFlags(f, o);
  f->AddInt64("replicas", &o->replicas, "MEMORY replicas on distinct segments", 1, 32);
  f->AddInt64("retry_ms", &o->retry_ms,
              "how long a put answered NO_AVAILABLE_HANDLE is retried (eviction frees space)", 0,
              3'600'000);
}

// The load subcommands' shared checks; 0 when fine, else the exit code.
int CheckLoadArgs(const Context& c) {
  if (c.o.count == 0 || c.o.size == 0) {
    std::fprintf(stderr, "shelfmark-cli: flags --count and --size are required\n");
    return 2;
  }
  if (ValidateKey(LoadKey(c.args[0], c.o.count - 1)) != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-cli: PREFIX-<index> must be 1..%zu bytes\n", kMaxKeyLength);
    return 2;
  }
  return 0;
}

int RunFill(const Context& c) {
  if (int rc = CheckLoadArgs(c); rc != 0) return rc;
  auto client = MakeDataClient(c.o);
  if (client == nullptr) return 1;
  const FillReport r = FillObjects(*client, c.o.tenant, c.args[0], c.o.count, c.o.size,
                                   static_cast<uint32_t>(c.o.replicas), c.o.retry_ms);
  std::printf("fill %s: %" PRIu64 " objects of %" PRId64 " bytes stored, %" PRIu64
              " retries while memory was full\n",
              c.args[0].c_str(), r.stored, c.o.size, r.retries);
  if (r.error != ErrorCode::OK) return Fail("put " + r.failed_key, r.error);
  return 0;
}

int RunVerify(const Context& c) {
  if (int rc = CheckLoadArgs(c); rc != 0) return rc;
  auto client = MakeDataClient(c.o);
  if (client == nullptr) return 1;
  const VerifyReport r = VerifyObjects(*client, c.o.tenant, c.args[0], c.o.count, c.o.size);
  if (c.o.json) {
    std::printf("%s\n", JsonObject()
                             .Str("prefix", c.args[0]).Uint("memory_only", r.memory_only)
                             .Uint("memory_and_disk", r.memory_and_disk)
                             .Uint("disk_only", r.disk_only).Uint("evicted", r.evicted)
                             .Uint("wrong_bytes", r.wrong_bytes).Uint("errors", r.errors)
                             .str().c_str());
  } else {
    std::printf("verify %s: %" PRIu64 " served byte-exact (%" PRIu64 " MEMORY only, %" PRIu64
                " MEMORY + LOCAL_DISK, %" PRIu64 " LOCAL_DISK only), %" PRIu64
                " evicted, %" PRIu64 " wrong, %" PRIu64 " errors\n",
                c.args[0].c_str(), r.memory_only + r.memory_and_disk + r.disk_only,
                r.memory_only, r.memory_and_disk, r.disk_only, r.evicted, r.wrong_bytes,
                r.errors);
  }
  if (!r.ok()) return Fail("verify " + r.first_failed_key, r.first_error);
  return 0;
}

void NoFlags(FlagSet*, CliOptions*) {}

constexpr Subcommand kSubcommands[] = {
    {"stat", "stat KEY", 1, 1, true, NoFlags, RunStat},
    {"ls", "ls [--prefix=P] [--limit=N]", 0, 0, false, AddLsFlags, RunLs},
    {"count", "count [--all_tenants]", 0, 0, false, AddCountFlags, RunCount},
    {"rm", "rm KEY [--force]", 1, 1, true, AddRmFlags, RunRm},
    {"put",
     "put KEY FILE [--replicas=N] [--protocol=P] [--device=D] [--verbose]", 2, 2, true,
     AddPutFlags, RunPut},
    {"get", "get KEY [FILE] [--protocol=P] [--device=D] [--verbose]", 1, 2, true, AddDataFlags,
     RunGet},
    {"fill", "fill PREFIX --count=N --size=BYTES [--replicas=N] [--retry_ms=MS] [--protocol=P]",
     1, 1, false, AddFillFlags, RunFill},
    {"verify", "verify PREFIX --count=N --size=BYTES [--protocol=P]", 1, 1, false, AddLoadFlags,
     RunVerify},
};

void AddGlobalFlags(FlagSet* f, CliOptions* o) {
  f->AddString("master", &o->master, "HOST:PORT of shelfmark-master's RPC, or etcd://HOST:PORT[;HOST:PORT...]: follow the leader published in etcd");
  f->AddString("cluster_id", &o->cluster_id, "with an etcd:// --master: the cluster whose leader to follow (\"\" = $SHELFMARK_CLUSTER_ID, else $MC_STORE_CLUSTER_ID, else \"shelfmark\")");
  f->AddString("tenant", &o->tenant, "tenant (\"\" = default)");
  f->AddBool("json", &o->json, "machine-readable output");
  f->AddInt64("timeout_ms", &o->timeout_ms, "per-RPC timeout", 1, 3'600'000);
  o->credential_flags.Add(*f);
}

bool IsEtcdAddress(std::string_view master) { return master.rfind("etcd://", 0) == 0; }

// With an etcd:// --master: connects first, so that a cluster without a
// leader is reported as such (not as a failure of the subcommand's call).
bool FoundLeader(const CliOptions& o, MasterClient& client) {
  const ErrorCode code = client.Connect();
  if (code == ErrorCode::OK) return true;
  if (code == ErrorCode::RPC_FAIL && client.master_address().empty()) {
    std::fprintf(stderr,
                 "shelfmark-cli: no leader found in etcd at %s for cluster ID '%s' within "
                 "%" PRId64 " ms (RPC_FAIL)\n",
                 o.master.substr(std::strlen("etcd://")).c_str(), client.cluster_id().c_str(),
                 o.timeout_ms);
  } else {
    Fail("connect to the leader " + client.master_address() + " published in etcd", code);
  }
  return false;
}

void PrintUsage(FILE* out) {
  CliOptions defaults;
  FlagSet global("shelfmark-cli");
  AddGlobalFlags(&global, &defaults);
  std::fprintf(out,
               "usage: shelfmark-cli [--master=HOST:PORT|etcd://HOST:PORT[;...]] [--cluster_id=ID]\n"
               "                     [--tenant=T] [--json]\n"
               "                     [--cluster_token_file=PATH] [--master_token_file=PATH] "
               "SUBCOMMAND\n");
  for (const Subcommand& s : kSubcommands) std::fprintf(out, "  shelfmark-cli %s\n", s.synopsis);
  std::fprintf(out, "global flags:\n%s", global.Usage().c_str() + global.Usage().find('\n') + 1);
}

// The first argument that is not a flag (after "--", the next one).
const char* FindSubcommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return i + 1 < argc ? argv[i + 1] : nullptr;
    if (std::strcmp(argv[i], "-h") == 0) continue;  // FlagSet's help
    if (std::strncmp(argv[i], "--", 2) != 0) return argv[i];
  }
  return nullptr;
}

int Main(int argc, char** argv) {
  const char* name = FindSubcommand(argc, argv);
  if (name == nullptr) {
    bool help = false;
    for (int i = 1; i < argc; ++i) {
      help |= std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0;
    }
    PrintUsage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  const Subcommand* sub = nullptr;
  for (const Subcommand& s : kSubcommands) {
    if (std::strcmp(s.name, name) == 0) sub = &s;
  }
  if (sub == nullptr) {
    std::fprintf(stderr, "shelfmark-cli: unknown subcommand '%s'\n", name);
    PrintUsage(stderr);
    return 2;
  }
  CliOptions o;
  FlagSet flags(std::string("shelfmark-cli ") + sub->name);
  AddGlobalFlags(&flags, &o);
  sub->add_flags(&flags, &o);
  std::string error;
  if (!flags.Parse(argc, argv, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("shelfmark-cli %s\n%s", sub->synopsis, flags.Usage().c_str());
    return 0;
  }
  std::vector<std::string> args(flags.positional().begin() + 1, flags.positional().end());
  if (args.size() < sub->min_args || args.size() > sub->max_args) {
    std::fprintf(stderr, "usage: shelfmark-cli %s\n", sub->synopsis);
    return 2;
  }
  if (std::string error = ha::MasterFlagError("master", o.master, o.cluster_id);
      !error.empty()) {
    std::fprintf(stderr, "shelfmark-cli: %s\n", error.c_str());
    return 2;
  }
  if (!o.tenant.empty() && ValidateTenant(o.tenant) != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-cli: flag --tenant must be 1..%zu bytes\n", kMaxTenantLength);
    return 2;
  }
  if (sub->first_arg_is_key && ValidateKey(args[0]) != ErrorCode::OK) {
    std::fprintf(stderr, "shelfmark-cli: KEY must be 1..%zu bytes\n", kMaxKeyLength);
    return 2;
  }
  auto credentials = o.credential_flags.Resolve("shelfmark-cli");
  if (!credentials.ok()) return 2;  // Resolve printed why
  o.credentials = std::move(credentials).value();
  MasterClientOptions options;
  options.address = o.master;
  options.cluster_id = o.cluster_id;
  options.call_timeout_ms = o.timeout_ms;
  options.token = o.credentials.master_token;
  MasterClient client(options);
  if (IsEtcdAddress(o.master) && !FoundLeader(o, client)) return 1;
  return sub->run(Context{o, args, client});
}

}  // namespace
}  // namespace shelfmark

int main(int argc, char** argv) { return shelfmark::Main(argc, argv); }
