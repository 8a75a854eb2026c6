#include "master/master_service.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <chrono>
#include <string>
#include <vector>

#include <kj/debug.h>

#include "master/connection_auth.h"
#include "master/lookup_session.h"
#include "master/replication_wait.h"
#include "master/service_shared.h"
#include "replication/replication_leader.h"
#include "service/metrics.h"
#include "rpc/rpc_convert.h"
#include "rpc/task_convert.h"
#include "directory/directory.h"
#include "schemas/master.capnp.h"

namespace shelfmark {
namespace {

using namespace master_internal;  // NOLINT: the method table and shared state

using rpcconv::CodeToWire;
using rpcconv::View;

// Size hint of a reply without a payload list. (Always passing a hint also
// sidesteps a GCC -Wmaybe-uninitialized false positive on kj::Maybe.)
constexpr capnp::MessageSize kSmallReply{8, 0};

// Rough word counts used as first-segment size hints for big replies, so a
// batch reply is built in one segment instead of a chain of growing ones.
size_t ReplicaWords(const ReplicaDescriptor& r) {
  const size_t blob =
      r.type == ReplicaType::MEMORY
          ? r.memory.endpoint.size() + r.memory.protocol.size() + r.memory.rkey.size()
          : r.disk.endpoint.size();
  return 24 + blob / 8;
}
size_t ReplicasWords(const std::vector<ReplicaDescriptor>& rs) {
  size_t words = 1;
  for (const auto& r : rs) words += ReplicaWords(r);
  return words;
}

// A batch's per-key checksums into *out: none, or one per key (`keys`
// of them); another length is INVALID_PARAMS.
ErrorCode DecodeChecksums(capnp::List<uint64_t>::Reader in, size_t keys,
                          std::vector<uint64_t>* out) {
  if (in.size() != 0 && in.size() != keys) return ErrorCode::INVALID_PARAMS;
  out->resize(in.size());
  for (unsigned i = 0; i < in.size(); ++i) (*out)[i] = in[i];
  return ErrorCode::OK;
}

class MasterServiceImpl final : public wire::MasterService::Server {
 public:
  MasterServiceImpl(SharedState& shared, ConnectionHooks hooks)
      : s_(shared),
        dir_(shared.directory),
        auth_(*shared.auth, std::move(hooks.peer)),
        close_after_reply_(std::move(hooks.close_after_reply)) {}

  // --- segments and clients ---------------------------------------------------

  kj::Promise<void> mountSegment(MountSegmentContext ctx) override {
    return Serve(kMountSegment, ctx, [&](auto p) {
      Segment segment;
      ErrorCode code = rpcconv::Decode(p.getSegment(), &segment);
      if (code != ErrorCode::OK) return code;
      return dir_.MountSegment(rpcconv::Decode(p.getClientId()), segment);
    });
  }

  kj::Promise<void> unmountSegment(UnmountSegmentContext ctx) override {
    return Serve(kUnmountSegment, ctx, [&](auto p) {
      return dir_.UnmountSegment(rpcconv::Decode(p.getClientId()),
                                 rpcconv::Decode(p.getSegmentId()));
    });
  }

  kj::Promise<void> drainSegment(DrainSegmentContext ctx) override {
    return Serve(kDrainSegment, ctx, [&](auto p) {
      return dir_.DrainSegment(rpcconv::Decode(p.getClientId()), rpcconv::Decode(p.getSegmentId()));
    });
  }

  kj::Promise<void> ping(PingContext ctx) override {
    return Serve(kPing, ctx, [&](auto p) {
      PingResponse r = dir_.Ping(rpcconv::Decode(p.getClientId()));
      auto out = ctx.getResults(kSmallReply);
      out.setViewVersion(r.view_version);
      out.setStatus(rpcconv::EncodeEnum(r.status));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> mountLocalDisk(MountLocalDiskContext ctx) override {
    return Serve(kMountLocalDisk, ctx, [&](auto p) {
      return dir_.MountLocalDisk(rpcconv::Decode(p.getClientId()), p.getEnableOffloading(),
                                 View(p.getEndpoint()));
    });
  }

  // --- puts -------------------------------------------------------------------

  kj::Promise<void> putStart(PutStartContext ctx) override {
    return Serve(kPutStart, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      PutConfig config;
      ErrorCode code = rpcconv::Decode(p.getConfig(), &config);
      if (code != ErrorCode::OK) return code;
      auto r = dir_.PutStart(rpcconv::Decode(p.getClientId()), View(p.getTenant()),
                             View(p.getKey()), p.getSize(), config);
      if (!r.ok()) return r.error();
      auto out = ctx.getResults(capnp::MessageSize{8 + ReplicasWords(*r), 0});
      rpcconv::EncodeReplicas(*r, out.initReplicas(r->size()));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> putEnd(PutEndContext ctx) override {
    return Serve(kPutEnd, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      ReplicaType type;
      ErrorCode code = rpcconv::DecodeEnum(p.getType(), &type);
      if (code != ErrorCode::OK) return code;
      const std::optional<uint64_t> checksum =
          p.getHasChecksum() ? std::optional<uint64_t>(p.getChecksum()) : std::nullopt;
      return dir_.PutEnd(rpcconv::Decode(p.getClientId()), View(p.getTenant()), View(p.getKey()),
                         type, checksum);
    });
  }

  kj::Promise<void> putRevoke(PutRevokeContext ctx) override {
    return Serve(kPutRevoke, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      ReplicaType type;
      ErrorCode code = rpcconv::DecodeEnum(p.getType(), &type);
      if (code != ErrorCode::OK) return code;
      return dir_.PutRevoke(rpcconv::Decode(p.getClientId()), View(p.getTenant()),
                            View(p.getKey()), type);
    });
  }

  // --- reads ------------------------------------------------------------------

  kj::Promise<void> getReplicaList(GetReplicaListContext ctx) override {
    return Serve(kGetReplicaList, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto r = dir_.GetReplicaList(View(p.getTenant()), View(p.getKey()));
      if (!r.ok()) return r.error();
      auto out = ctx.getResults(capnp::MessageSize{16 + ReplicasWords(r->replicas), 0});
      rpcconv::Encode(*r, out.initResponse());
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> existKey(ExistKeyContext ctx) override {
    return Serve(kExistKey, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto r = dir_.ExistKey(View(p.getTenant()), View(p.getKey()));
      if (!r.ok()) return r.error();
      ctx.getResults(kSmallReply).setExists(*r);
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> stat(StatContext ctx) override {
    return Serve(kStat, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto r = dir_.Stat(View(p.getTenant()), View(p.getKey()));
      if (!r.ok()) return r.error();
      auto out = ctx.getResults(
          capnp::MessageSize{32 + r->key.size() / 8 + ReplicasWords(r->replicas), 0});
      rpcconv::Encode(*r, out.initInfo());
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> listKeys(ListKeysContext ctx) override {
    return Serve(kListKeys, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      const uint64_t limit = std::min<uint64_t>(p.getLimit(), rpcconv::kMaxListKeysLimit);
      auto keys = dir_.ListKeys(View(p.getTenant()), View(p.getPrefix()), limit);
      rpcconv::EncodeTexts(keys, ctx.getResults(TextsHint(keys)).initKeys(keys.size()));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> countKeys(CountKeysContext ctx) override {
    return Serve(kCountKeys, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant()), p.getAllTenants()}); c != ErrorCode::OK) return c;
      ctx.getResults(kSmallReply).setCount(dir_.CountKeys(View(p.getTenant()), p.getAllTenants()));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> groupMembers(GroupMembersContext ctx) override {
    return Serve(kGroupMembers, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto r = dir_.GroupMembers(View(p.getTenant()), View(p.getGroupId()));
      if (!r.ok()) return r.error();
      rpcconv::EncodeTexts(*r, ctx.getResults(TextsHint(*r)).initKeys(r->size()));
      return ErrorCode::OK;
    });
  }

  // --- removal ----------------------------------------------------------------

  kj::Promise<void> remove(RemoveContext ctx) override {
    return Serve(kRemove, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant()), false, p.getForce()}); c != ErrorCode::OK) return c;
      return dir_.Remove(View(p.getTenant()), View(p.getKey()), p.getForce());
    });
  }

  kj::Promise<void> removeAll(RemoveAllContext ctx) override {
    return Serve(kRemoveAll, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant()), p.getAllTenants(), p.getForce()}); c != ErrorCode::OK) return c;
      ctx.getResults(kSmallReply).setRemoved(
          dir_.RemoveAll(View(p.getTenant()), p.getAllTenants(), p.getForce()));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> removeByRegex(RemoveByRegexContext ctx) override {
    return Serve(kRemoveByRegex, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant()), false, p.getForce()}); c != ErrorCode::OK) return c;
      auto r = dir_.RemoveByRegex(View(p.getTenant()), View(p.getPattern()), p.getForce());
      if (!r.ok()) return r.error();
      ctx.getResults(kSmallReply).setRemoved(*r);
      return ErrorCode::OK;
    });
  }

  // --- batches ----------------------------------------------------------------

  kj::Promise<void> batchPutStart(BatchPutStartContext ctx) override {
    return Serve(kBatchPutStart, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto& keys = ScratchKeys();
      ErrorCode code = rpcconv::DecodeTexts(p.getKeys(), s_.max_batch, &keys);
      if (code != ErrorCode::OK) return code;
      auto sizes_in = p.getSizes();
      if (sizes_in.size() != keys.size()) return ErrorCode::INVALID_PARAMS;
      auto& sizes = ScratchSizes();
      sizes.resize(sizes_in.size());
      for (unsigned i = 0; i < sizes_in.size(); ++i) sizes[i] = sizes_in[i];
      PutConfig config;
      code = rpcconv::Decode(p.getConfig(), &config);
      if (code != ErrorCode::OK) return code;
      std::vector<uint64_t> checksums;
      code = DecodeChecksums(p.getChecksums(), keys.size(), &checksums);
      if (code != ErrorCode::OK) return code;
      auto results = dir_.BatchPutStart(rpcconv::Decode(p.getClientId()), View(p.getTenant()),
                                        keys, sizes, config, checksums);
      size_t words = 8;
      for (const auto& r : results) words += 4 + (r.ok() ? ReplicasWords(*r) : 0);
      auto out = ctx.getResults(capnp::MessageSize{words, 0}).initResults(results.size());
      for (size_t i = 0; i < results.size(); ++i) {
        auto item = out[i];
        if (!results[i].ok()) {
          item.setCode(CodeToWire(results[i].error()));
          continue;
        }
        item.setCode(CodeToWire(ErrorCode::OK));
        rpcconv::EncodeReplicas(*results[i], item.initReplicas(results[i]->size()));
      }
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> batchPutEnd(BatchPutEndContext ctx) override {
    return Serve(kBatchPutEnd, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto& keys = ScratchKeys();
      ErrorCode code = rpcconv::DecodeTexts(p.getKeys(), s_.max_batch, &keys);
      if (code != ErrorCode::OK) return code;
      std::vector<uint64_t> checksums;
      code = DecodeChecksums(p.getChecksums(), keys.size(), &checksums);
      if (code != ErrorCode::OK) return code;
      SetCodes(ctx, dir_.BatchPutEnd(rpcconv::Decode(p.getClientId()), View(p.getTenant()), keys,
                                     checksums));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> batchPutRevoke(BatchPutRevokeContext ctx) override {
    return Serve(kBatchPutRevoke, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto& keys = ScratchKeys();
      ErrorCode code = rpcconv::DecodeTexts(p.getKeys(), s_.max_batch, &keys);
      if (code != ErrorCode::OK) return code;
      SetCodes(ctx,
               dir_.BatchPutRevoke(rpcconv::Decode(p.getClientId()), View(p.getTenant()), keys));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> batchGetReplicaList(BatchGetReplicaListContext ctx) override {
    return Serve(kBatchGetReplicaList, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto& keys = ScratchKeys();
      ErrorCode code = rpcconv::DecodeTexts(p.getKeys(), s_.max_batch, &keys);
      if (code != ErrorCode::OK) return code;
      auto results = dir_.BatchGetReplicaList(View(p.getTenant()), keys);
      size_t words = 8;
      for (const auto& r : results) words += 12 + (r.ok() ? ReplicasWords(r->replicas) : 0);
      auto out = ctx.getResults(capnp::MessageSize{words, 0}).initResults(results.size());
      for (size_t i = 0; i < results.size(); ++i) {
        auto item = out[i];
        if (!results[i].ok()) {
          item.setCode(CodeToWire(results[i].error()));
          continue;
        }
        item.setCode(CodeToWire(ErrorCode::OK));
        rpcconv::Encode(*results[i], item.initResponse());
      }
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> batchExistKey(BatchExistKeyContext ctx) override {
    return Serve(kBatchExistKey, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto& keys = ScratchKeys();
      ErrorCode code = rpcconv::DecodeTexts(p.getKeys(), s_.max_batch, &keys);
      if (code != ErrorCode::OK) return code;
      auto results = dir_.BatchExistKey(View(p.getTenant()), keys);
      auto out = ctx.getResults(capnp::MessageSize{8 + 2 * results.size(), 0})
                     .initResults(results.size());
      for (size_t i = 0; i < results.size(); ++i) {
        auto item = out[i];
        item.setCode(CodeToWire(results[i].error()));
        if (results[i].ok()) item.setExists(*results[i]);
      }
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> batchRemove(BatchRemoveContext ctx) override {
    return Serve(kBatchRemove, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant()), false, p.getForce()}); c != ErrorCode::OK) return c;
      auto& keys = ScratchKeys();
      ErrorCode code = rpcconv::DecodeTexts(p.getKeys(), s_.max_batch, &keys);
      if (code != ErrorCode::OK) return code;
      SetCodes(ctx, dir_.BatchRemove(View(p.getTenant()), keys, p.getForce()));
      return ErrorCode::OK;
    });
  }

  // --- offload ----------------------------------------------------------------

  kj::Promise<void> offloadHeartbeat(OffloadHeartbeatContext ctx) override {
    return Serve(kOffloadHeartbeat, ctx, [&](auto p) {
      const size_t max_tasks = static_cast<size_t>(
          std::min<uint64_t>(p.getMaxTasks(), static_cast<uint64_t>(s_.max_batch)));
      auto r = dir_.OffloadHeartbeat(rpcconv::Decode(p.getClientId()), max_tasks);
      if (!r.ok()) return r.error();
      size_t words = 8;
      for (const auto& t : *r) words += 6 + (t.tenant.size() + t.key.size()) / 8;
      auto out = ctx.getResults(capnp::MessageSize{words, 0}).initTasks(r->size());
      for (size_t i = 0; i < r->size(); ++i) rpcconv::Encode((*r)[i], out[i]);
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> notifyOffloadSuccess(NotifyOffloadSuccessContext ctx) override {
    return Serve(kNotifyOffloadSuccess, ctx, [&](auto p) {
      std::vector<OffloadedObject> items;
      ErrorCode code = rpcconv::DecodeList(p.getItems(), s_.max_batch, &items);
      if (code != ErrorCode::OK) return code;
      auto r = dir_.NotifyOffloadSuccess(rpcconv::Decode(p.getClientId()), items);
      if (!r.ok()) return r.error();
      SetCodes(ctx, *r);
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> promoteStart(PromoteStartContext ctx) override {
    return Serve(kPromoteStart, ctx, [&](auto p) {
      std::vector<PromoteRequest> items;
      ErrorCode code = rpcconv::DecodeList(p.getItems(), s_.max_batch, &items);
      if (code != ErrorCode::OK) return code;
      auto r = dir_.PromoteStart(rpcconv::Decode(p.getClientId()), items);
      if (!r.ok()) return r.error();
      auto out = ctx.getResults(capnp::MessageSize{8 + 3 * r->size(), 0}).initGrants(r->size());
      rpcconv::EncodeList(*r, out);
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> promoteEnd(PromoteEndContext ctx) override {
    return Serve(kPromoteEnd, ctx, [&](auto p) {
      std::vector<PromoteResult> items;
      ErrorCode code = rpcconv::DecodeList(p.getItems(), s_.max_batch, &items);
      if (code != ErrorCode::OK) return code;
      auto r = dir_.PromoteEnd(rpcconv::Decode(p.getClientId()), items);
      if (!r.ok()) return r.error();
      SetCodes(ctx, *r);
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> notifyOffloadFailure(NotifyOffloadFailureContext ctx) override {
    return Serve(kNotifyOffloadFailure, ctx, [&](auto p) {
      std::vector<OffloadFailure> items;
      ErrorCode code = rpcconv::DecodeList(p.getItems(), s_.max_batch, &items);
      if (code != ErrorCode::OK) return code;
      auto r = dir_.NotifyOffloadFailure(rpcconv::Decode(p.getClientId()), items);
      if (!r.ok()) return r.error();
      SetCodes(ctx, *r);
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> evictDiskReplica(EvictDiskReplicaContext ctx) override {
    return Serve(kEvictDiskReplica, ctx, [&](auto p) {
      return dir_.EvictDiskReplica(rpcconv::Decode(p.getClientId()), View(p.getTenant()),
                                   View(p.getKey()));
    });
  }

  // --- copy and move tasks -----------------------------------------------------

  kj::Promise<void> createTask(CreateTaskContext ctx) override {
    return Serve(kCreateTask, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      TaskSpec spec;
      ErrorCode code = rpcconv::DecodeEnum(p.getType(), &spec.type);
      if (code == ErrorCode::OK) code = rpcconv::DecodeTexts(p.getTargets(), s_.max_batch, &spec.targets);
      if (code != ErrorCode::OK) return code;
      spec.key = View(p.getKey());
      spec.source = View(p.getSource());
      auto r = dir_.CreateTask(rpcconv::Decode(p.getClientId()), View(p.getTenant()), spec);
      if (!r.ok()) return r.error();
      rpcconv::Encode(*r, ctx.getResults(kSmallReply).initTaskId());
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> queryTask(QueryTaskContext ctx) override {
    return Serve(kQueryTask, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto r = dir_.QueryTask(View(p.getTenant()), rpcconv::Decode(p.getTaskId()));
      if (!r.ok()) return r.error();
      rpcconv::Encode(*r, ctx.getResults(capnp::MessageSize{64, 0}).initTask());
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> taskStart(TaskStartContext ctx) override {
    return Serve(kTaskStart, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      auto r = dir_.TaskStart(rpcconv::Decode(p.getClientId()), View(p.getTenant()),
                              rpcconv::Decode(p.getTaskId()));
      if (!r.ok()) return r.error();
      auto out = ctx.getResults(capnp::MessageSize{16 + ReplicasWords(r->targets), 0});
      out.setKey(rpcconv::AsText(r->key));
      out.setSize(r->size);
      rpcconv::EncodeReplicas(r->targets, out.initReplicas(r->targets.size()));
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> taskEnd(TaskEndContext ctx) override {
    return Serve(kTaskEnd, ctx, [&](auto p) {
      if (ErrorCode c = InScope({View(p.getTenant())}); c != ErrorCode::OK) return c;
      return dir_.TaskEnd(rpcconv::Decode(p.getClientId()), View(p.getTenant()),
                          rpcconv::Decode(p.getTaskId()), ErrorCodeFromInt(p.getCopied()));
    });
  }

  // --- authentication ---------------------------------------------------------

  kj::Promise<void> authChallenge(AuthChallengeContext ctx) override {
    return Serve(kAuthChallenge, ctx, [&](auto) {
      auto out = ctx.getResults(kSmallReply);
      out.setRequired(auth_.required());
      if (auth_.required()) {
        const auth::Nonce nonce = auth_.Challenge();
        out.setServerNonce(capnp::Data::Reader(nonce.data(), nonce.size()));
      }
      return ErrorCode::OK;
    });
  }

  kj::Promise<void> authenticate(AuthenticateContext ctx) override {
    return Serve(kAuthenticate, ctx, [&](auto p) {
      auto granted = auth_.Authenticate(rpcconv::View(p.getClientNonce()),
                                        rpcconv::View(p.getProof()));
      if (!granted.ok()) {
        if (granted.error() != ErrorCode::INVALID_PARAMS) close_after_reply_();
        return granted.error();
      }
      auto out = ctx.getResults(kSmallReply);
      out.setServerProof(
          capnp::Data::Reader(granted->server_proof.data(), granted->server_proof.size()));
      out.setRoles(granted->roles);
      out.setTenant(granted->tenant);
      return ErrorCode::OK;
    });
  }

 private:
  // Runs one call after the connection's role check (auth_.Admit) and the
  // leadership gate (NOT_LEADER on a standby, and for a mutation on a fenced
  // leader); records the per-method metrics.
  // A mutation that succeeded waits for its replication
  // (master/replication_wait.h).
  template <typename Context, typename Fn>
  kj::Promise<void> Serve(Method method, Context& ctx, Fn&& fn) {
    const auto start = std::chrono::steady_clock::now();
    ErrorCode code = kMethodRoles[method] == kOpen ? ErrorCode::OK : auth_.Admit(kMethodRoles[method]);
    if (code == ErrorCode::OK) code = s_.gate.Admit(kMethodKinds[method]);
    if (code == ErrorCode::OK) {
      code = Run(ctx, fn);
    } else {
      Refuse(ctx, code);
      // An unauthenticated caller gets this one answer, then the connection ends.
      if (code == ErrorCode::UNAUTHENTICATED) close_after_reply_();
    }
    const std::optional<uint64_t> seq =
        code == ErrorCode::OK ? ReplicationSeq(s_, kMethodKinds[method]) : std::nullopt;
    if (seq) {
      std::optional<kj::Promise<void>> waited = WaitReplicated(s_, *seq);
      if (waited) {
        // `ctx` is the method's parameter: the continuation holds a copy.
        return kj::mv(*waited).then([this, reply = ctx, method, start, seq = *seq]() mutable {
          const ErrorCode code = AfterReplicated(s_, seq);
          if (code != ErrorCode::OK) Refuse(reply, code);
          RecordCall(s_, method, code, start);
        });
      }
    }
    RecordCall(s_, method, code, start);
    return kj::READY_NOW;
  }

  // Answers a call refused before it ran: the code alone, and with
  // NOT_LEADER the leader this master knows (schemas/master.capnp, `leader`;
  // the handshake methods, never refused so, have no such field).
  template <typename Context>
  void Refuse(Context& ctx, ErrorCode code) {
    auto results = ctx.initResults(kSmallReply);
    results.setCode(CodeToWire(code));
    if constexpr (requires { results.setLeader(capnp::Text::Reader()); }) {
      if (code != ErrorCode::NOT_LEADER) return;
      const std::string leader = s_.gate.leader_hint();
      if (!leader.empty()) results.setLeader(leader);
    }
  }

  // Runs `fn(params)`, which decodes, calls the directory, fills the payload
  // and returns the whole-call code; stores the code in the reply. A
  // kj::Exception escaping fn (a malformed request the capnp reader rejects)
  // becomes INVALID_PARAMS with an empty payload; any other exception
  // INTERNAL_ERROR.
  template <typename Context, typename Fn>
  static ErrorCode Run(Context& ctx, Fn& fn) {
    ErrorCode code;
    try {
      code = fn(ctx.getParams());
      ctx.getResults(kSmallReply).setCode(CodeToWire(code));
    } catch (const kj::Exception&) {
      code = ErrorCode::INVALID_PARAMS;
    } catch (const std::exception&) {
      code = ErrorCode::INTERNAL_ERROR;
    }
    if (code == ErrorCode::INVALID_PARAMS || code == ErrorCode::INTERNAL_ERROR) {
      // Clear any partly built payload (cheap: these are rare answers).
      ctx.initResults(kSmallReply).setCode(CodeToWire(code));
    }
    return code;
  }

  // The tenant and escalation checks of a call that names them.
  ErrorCode InScope(const CallScope& scope) { return auth_.Check(scope); }

  template <typename Context>
  static void SetCodes(Context& ctx, const std::vector<ErrorCode>& codes) {
    auto out = ctx.getResults(capnp::MessageSize{8 + codes.size() / 2, 0}).initCodes(codes.size());
    for (size_t i = 0; i < codes.size(); ++i) out.set(i, CodeToWire(codes[i]));
  }

  static capnp::MessageSize TextsHint(const std::vector<std::string>& texts) {
    size_t words = 8;
    for (const auto& t : texts) words += 2 + t.size() / 8;
    return capnp::MessageSize{words, 0};
  }

  // Per-thread scratch: the loop thread runs one call at a time, so batch
  // key vectors (and their strings' capacity) are reused across calls.
  static std::vector<std::string>& ScratchKeys() {
    thread_local std::vector<std::string> keys;
    return keys;
  }
  static std::vector<uint64_t>& ScratchSizes() {
    thread_local std::vector<uint64_t> sizes;
    return sizes;
  }

  SharedState& s_;
  Directory& dir_;
  ConnectionAuth auth_;
  std::function<void()> close_after_reply_;
};

}  // namespace

struct MasterServiceFactory::Shared : master_internal::SharedState {
  using SharedState::SharedState;
};

void MasterServiceFactory::SetReplication(ReplicationLeader* replication) {
  shared_->replication = replication;
}

std::unique_ptr<LookupSession> MasterServiceFactory::NewLookupSession(std::string peer) const {
  return std::make_unique<LookupSession>(*shared_, std::move(peer));
}

namespace {

// shelfmark_master_auth_handshakes_total{result} and
// shelfmark_master_auth_refused_calls_total{reason} (docs/metrics.md).
void AddAuthMetrics(MetricsRegistry& registry, const AuthCounters& c) {
  auto read = [](const std::atomic<uint64_t>& v) {
    return [&v] { return static_cast<double>(v.load(std::memory_order_relaxed)); };
  };
  const char* handshakes = "shelfmark_master_auth_handshakes_total";
  const char* handshakes_help = "RPC token handshakes, by result.";
  registry.AddCounterFunc(handshakes, handshakes_help, read(c.handshakes_ok), "result=\"ok\"");
  registry.AddCounterFunc(handshakes, handshakes_help, read(c.handshakes_failed),
                          "result=\"failed\"");
  registry.AddCounterFunc(handshakes, handshakes_help, read(c.handshakes_rate_limited),
                          "result=\"rate_limited\"");
  const char* refused = "shelfmark_master_auth_refused_calls_total";
  const char* refused_help = "RPC calls refused by authentication, by reason.";
  registry.AddCounterFunc(refused, refused_help, read(c.calls_unauthenticated),
                          "reason=\"unauthenticated\"");
  registry.AddCounterFunc(refused, refused_help, read(c.calls_denied),
                          "reason=\"permission_denied\"");
}

}  // namespace

MasterServiceFactory::MasterServiceFactory(Directory& directory, MetricsRegistry* metrics,
                                           size_t max_batch, auth::TokenTable tokens,
                                           auth::HandshakeLimits limits, LeadershipGate* gate)
    : shared_(std::make_unique<Shared>(directory, max_batch, std::move(tokens), limits, gate)) {
  if (metrics == nullptr) return;
  AddAuthMetrics(*metrics, shared_->auth->counters);
  shared_->has_metrics = true;
  for (int i = 0; i < kMethodCount; ++i) {
    const std::string labels = std::string("method=\"") + kMethodNames[i] + "\"";
    shared_->metrics[i].requests = metrics->AddCounter(
        "shelfmark_master_rpc_requests_total", "Master RPC calls received, by method.", labels);
    shared_->metrics[i].failures = metrics->AddCounter(
        "shelfmark_master_rpc_failures_total",
        "Master RPC calls whose whole-call answer was not OK, by method.", labels);
    shared_->metrics[i].latency_seconds = metrics->AddHistogram(
        "shelfmark_master_rpc_latency_seconds",
        "Server-side handling time of master RPC calls in seconds, by method.", labels,
        LatencyBucketsSeconds());
  }
}

MasterServiceFactory::~MasterServiceFactory() = default;

capnp::Capability::Client MasterServiceFactory::NewService(ConnectionHooks hooks) const {
  return kj::heap<MasterServiceImpl>(*shared_, std::move(hooks));
}

const AuthCounters& MasterServiceFactory::auth_counters() const { return shared_->auth->counters; }

bool MasterServiceFactory::auth_required() const { return shared_->auth->required(); }

std::shared_ptr<AuthPolicy> MasterServiceFactory::auth_policy() const { return shared_->auth; }

}  // namespace shelfmark
