# master.capnp: the control-plane protocol between nodes / clients / tools and
# shelfmark-master (design.md section 5). One interface, MasterService, with a
# method per Directory operation (directory/directory.h holds the semantics).
#
# Wire conventions (every method):
#  - `code` in every reply is a shelfmark::ErrorCode value (common/error_code.h;
#    values are stable wire constants). 0 = OK. When `code` is not OK the
#    payload fields of the reply are unset/default and must be ignored.
#  - `tenant` is Text; the empty tenant means the default tenant ("default").
#  - `clientId` is the caller's 128-bit identity (shelfmark::UUID); it is
#    carried by the calls whose Directory counterpart takes a client.
#  - Keys are 1..4096 bytes (else the per-item / whole-call code is
#    INVALID_KEY); they are opaque bytes carried as Text.
#  - Batch calls: `keys` (and `sizes` where present) must have the same length
#    and at most the server's max_batch entries, else the whole call answers
#    INVALID_PARAMS with an empty result list. Otherwise the reply's `code` is
#    OK and the result list holds exactly one entry per key, in request order,
#    each with its own code.
#  - Enum values outside the declared range are rejected with INVALID_PARAMS
#    (never reinterpreted).
#  - `leader` (the last field of every reply but the two handshake methods',
#    added after them: older clients never read it, older masters leave it
#    empty): with `code` NOT_LEADER, the `host:port` of the leader this master
#    last saw in etcd when that is another master (docs/ha.md, "NOT_LEADER
#    names the leader"); empty when it knows none, and with every other code.
#  - Cap'n Proto exceptions (e.g. DISCONNECTED) are transport failures; the
#    client library reports them as RPC_FAIL.
#  - Authentication (docs/security.md): a master started with tokens answers
#    every call but the two handshake methods with UNAUTHENTICATED, and
#    closes the connection, until the connection has completed
#    authChallenge + authenticate; afterwards a call outside the token's
#    roles or tenant answers PERMISSION_DENIED (the connection stays).

@0x81ee7e5cc6a09bae;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shelfmark::wire");

# shelfmark::UUID: `hi` is the first 8 bytes of the canonical form, `lo` the
# last 8. The nil UUID (0, 0) is never a valid client or segment id.
struct Uuid {
  hi @0 :UInt64;
  lo @1 :UInt64;
}

# Mirrors shelfmark::ReplicaStatus (same numeric values).
enum ReplicaStatus {
  initialized @0;
  processing @1;
  complete @2;
  removed @3;
  failed @4;
}

# Mirrors shelfmark::ReplicaType.
enum ReplicaType {
  memory @0;
  localDisk @1;
}

# Mirrors shelfmark::DataType.
enum DataType {
  unknown @0;
  kvcache @1;
  tensor @2;
  weight @3;
}

# Mirrors shelfmark::ClientStatus.
enum ClientStatus {
  ok @0;
  needRemount @1;
}

# A node's DRAM segment, as the node mounts it.
struct Segment {
  id @0 :Uuid;          # non-nil, unique per segment
  name @1 :Text;        # non-empty; the name PutConfig.preferredSegments refers to
  base @2 :UInt64;      # virtual address of the first byte in the owner
  size @3 :UInt64;      # bytes; > 0
  endpoint @4 :Text;    # "ip:port" of the owner's transport
  protocol @5 :Text;    # "rdma" | "ucx" | "loopback" | ...
  rkey @6 :Data;        # opaque, meaning belongs to `protocol`; <= 4096 bytes
}

# Where a MEMORY replica's bytes are: enough for one one-sided read.
struct MemoryDescriptor {
  endpoint @0 :Text;
  protocol @1 :Text;
  bufferAddress @2 :UInt64;  # absolute address inside the segment
  size @3 :UInt64;
  rkey @4 :Data;             # the segment's rkey
  segmentId @5 :Uuid;
}

# Which node holds a LOCAL_DISK replica; the node's own index finds the bytes.
struct DiskDescriptor {
  clientId @0 :Uuid;
  objectSize @1 :UInt64;
  endpoint @2 :Text;
}

# One replica. The union discriminant is the replica's type (MEMORY or
# LOCAL_DISK); exactly the matching descriptor is present.
struct ReplicaDescriptor {
  id @0 :UInt64;               # global replica id
  status @1 :ReplicaStatus;
  union {
    memory @2 :MemoryDescriptor;
    disk @3 :DiskDescriptor;
  }
}

# Options of a put (shelfmark::PutConfig).
struct PutConfig {
  replicaNum @0 :UInt32 = 1;           # MEMORY replicas to place, on distinct segments
  preferredSegments @1 :List(Text);    # segment names tried first, in order (<= 1024)
  checksum :union {                    # optional checksum of the value
    none @2 :Void;
    value @3 :UInt64;
  }
  dataType @4 :DataType;
  hardPin @5 :Bool;                    # never evicted
  softPinTtlMs @6 :Int64;              # > 0: soft-pinned until put end + ttl
  groupId @7 :Text;                    # non-empty: joins this group (same tenant)
  replace @8 :Bool;                    # upsert: replace an existing key atomically at putEnd
  preferHost @9 :Text;                 # non-empty: then the segments whose endpoint is on this host
}

# Answer of GetReplicaList (shelfmark::GetReplicaListResponse).
struct GetReplicaListResponse {
  replicas @0 :List(ReplicaDescriptor);  # COMPLETE replicas only
  size @1 :UInt64;
  checksum :union {
    none @2 :Void;
    value @3 :UInt64;
  }
  dataType @4 :DataType;
  leaseTtlMs @5 :Int64;                  # the lease granted by this read
}

# The operator's view of one object (shelfmark::ObjectInfo).
struct ObjectInfo {
  key @0 :Text;
  size @1 :UInt64;
  checksum :union {
    none @2 :Void;
    value @3 :UInt64;
  }
  dataType @4 :DataType;
  writer @5 :Uuid;
  leaseRemainingMs @6 :Int64;            # 0 when expired
  softPinRemainingMs @7 :Int64;          # 0 when none or expired
  hardPin @8 :Bool;
  groupId @9 :Text;
  replicas @10 :List(ReplicaDescriptor); # every replica, any status
}

# A MEMORY object the node should copy to its SSD store.
struct OffloadTask {
  tenant @0 :Text;
  key @1 :Text;
  size @2 :UInt64;
  bufferAddress @3 :UInt64;  # the pinned MEMORY replica, inside the node's segment
}

# Where a node's SSD store put an object (the node's second-level index).
struct StorageObjectMetadata {
  bucketId @0 :Int64;
  offset @1 :Int64;
  keySize @2 :Int64;
  dataSize @3 :Int64;
  transportEndpoint @4 :Text;
}

# One object a node finished offloading.
struct OffloadedObject {
  tenant @0 :Text;
  key @1 :Text;
  location @2 :StorageObjectMetadata;
  checksum :union {  # XXH3-64 of the stored bytes (names their version)
    none @3 :Void;   # an older node: attached only to an unknown key
    value @4 :UInt64;
  }
}

# An offload task whose copy the node's SSD store could not make.
struct OffloadFailure {
  tenant @0 :Text;
  key @1 :Text;
  code @2 :Int32;  # why: the store's ErrorCode (FILE_WRITE_FAIL, ...)
}

# Promotion on hit (LOCAL_DISK -> MEMORY): an object of the node's SSD store
# to copy back into the node's own segment.
struct PromoteRequest {
  tenant @0 :Text;
  key @1 :Text;
  size @2 :UInt64;
}

# OK: bufferAddress is a range of `size` bytes reserved in the node's segment.
struct PromoteGrant {
  code @0 :Int32;
  bufferAddress @1 :UInt64;
}

# How a granted promotion ended: copied, or abandoned.
struct PromoteResult {
  tenant @0 :Text;
  key @1 :Text;
  copied @2 :Bool;
}

# Per-item results of the batch calls.
struct PutStartResult {
  code @0 :Int32;
  replicas @1 :List(ReplicaDescriptor);  # set when code == OK
}

struct GetReplicaListResult {
  code @0 :Int32;
  response @1 :GetReplicaListResponse;   # set when code == OK
}

struct ExistKeyResult {
  code @0 :Int32;
  exists @1 :Bool;                       # meaningful when code == OK
}

# Copy and move tasks (Mooncake's create_copy_task / create_move_task /
# query_task; docs/directory.md "Copy and move tasks"). Numbers as Mooncake's.
enum TaskType {
  replicaCopy @0;
  replicaMove @1;
}

enum TaskStatus {
  pending @0;
  processing @1;
  success @2;
  failed @3;
}

struct TaskInfo {
  id @0 :Uuid;
  type @1 :TaskType;
  status @2 :TaskStatus;
  key @3 :Text;
  source @4 :Text;                  # a move's source segment name; "" for a copy
  targets @5 :List(Text);           # segment names
  createdAtMsEpoch @6 :Int64;
  lastUpdatedAtMsEpoch @7 :Int64;
  assignedClient @8 :Uuid;          # the client that runs it (its creator)
  error @9 :Int32;                  # FAILED: why (ErrorCode)
  message @10 :Text;                # FAILED: the code's name
}

interface MasterService {
  # --- segments and clients ---------------------------------------------------
  mountSegment @0 (clientId :Uuid, segment :Segment) -> (code :Int32, leader :Text);
  unmountSegment @1 (clientId :Uuid, segmentId :Uuid) -> (code :Int32, leader :Text);
  # A graceful unmount's grace period (Directory::DrainSegment): the segment
  # takes no new allocations, its replicas are still read, until the owner's
  # unmountSegment. A master older than this answers UNIMPLEMENTED.
  drainSegment @34 (clientId :Uuid, segmentId :Uuid) -> (code :Int32, leader :Text);
  # `code` is OK; `status` says whether the client must re-mount.
  ping @2 (clientId :Uuid)
      -> (code :Int32, viewVersion :UInt64, status :ClientStatus, leader :Text);
  mountLocalDisk @3 (clientId :Uuid, enableOffloading :Bool, endpoint :Text)
      -> (code :Int32, leader :Text);

  # --- puts -------------------------------------------------------------------
  putStart @4 (clientId :Uuid, tenant :Text, key :Text, size :UInt64, config :PutConfig)
      -> (code :Int32, replicas :List(ReplicaDescriptor), leader :Text);
  # `checksum` (when `hasChecksum`): the value's checksum, for a put whose
  # putStart carried none (Directory::PutEnd); one that differs from
  # putStart's is INVALID_PARAMS and the put stays unfinished.
  putEnd @5 (clientId :Uuid, tenant :Text, key :Text, type :ReplicaType, hasChecksum :Bool,
             checksum :UInt64)
      -> (code :Int32, leader :Text);
  putRevoke @6 (clientId :Uuid, tenant :Text, key :Text, type :ReplicaType)
      -> (code :Int32, leader :Text);

  # --- reads ------------------------------------------------------------------
  getReplicaList @7 (tenant :Text, key :Text)
      -> (code :Int32, response :GetReplicaListResponse, leader :Text);
  existKey @8 (tenant :Text, key :Text) -> (code :Int32, exists :Bool, leader :Text);
  stat @9 (tenant :Text, key :Text) -> (code :Int32, info :ObjectInfo, leader :Text);
  # At most `limit` keys (the server also caps it at 1,048,576), sorted.
  listKeys @10 (tenant :Text, prefix :Text, limit :UInt64)
      -> (code :Int32, keys :List(Text), leader :Text);
  countKeys @11 (tenant :Text, allTenants :Bool) -> (code :Int32, count :UInt64, leader :Text);
  groupMembers @12 (tenant :Text, groupId :Text) -> (code :Int32, keys :List(Text), leader :Text);

  # --- removal ----------------------------------------------------------------
  remove @13 (tenant :Text, key :Text, force :Bool) -> (code :Int32, leader :Text);
  removeAll @14 (tenant :Text, allTenants :Bool, force :Bool)
      -> (code :Int32, removed :UInt64, leader :Text);
  # RemoveAll's rules over the tenant's keys that `pattern` matches: a POSIX
  # extended regular expression searched anywhere in the key (not
  # ECMAScript: use [0-9] for \d). INVALID_PARAMS for a pattern that is
  # empty, over 256 bytes, holds a NUL or a back-reference, expands past the
  # repetition bounds, or does not compile (docs/limits.md).
  removeByRegex @28 (tenant :Text, pattern :Text, force :Bool)
      -> (code :Int32, removed :UInt64, leader :Text);

  # --- batches: one answer per key, in order ----------------------------------
  # `checksums`: empty (config.checksum applies to every key), or one per
  # key (the checksum of key i, in place of config.checksum); another length
  # is INVALID_PARAMS.
  batchPutStart @15 (clientId :Uuid, tenant :Text, keys :List(Text), sizes :List(UInt64),
                     config :PutConfig, checksums :List(UInt64))
      -> (code :Int32, results :List(PutStartResult), leader :Text);
  # `checksums`: empty, or one per key (putEnd's checksum of key i); another
  # length is INVALID_PARAMS.
  batchPutEnd @16 (clientId :Uuid, tenant :Text, keys :List(Text), checksums :List(UInt64))
      -> (code :Int32, codes :List(Int32), leader :Text);
  batchPutRevoke @17 (clientId :Uuid, tenant :Text, keys :List(Text))
      -> (code :Int32, codes :List(Int32), leader :Text);
  batchGetReplicaList @18 (tenant :Text, keys :List(Text))
      -> (code :Int32, results :List(GetReplicaListResult), leader :Text);
  batchExistKey @19 (tenant :Text, keys :List(Text))
      -> (code :Int32, results :List(ExistKeyResult), leader :Text);
  batchRemove @20 (tenant :Text, keys :List(Text), force :Bool)
      -> (code :Int32, codes :List(Int32), leader :Text);

  # --- offload (MEMORY -> LOCAL_DISK) -----------------------------------------
  # At most `maxTasks` tasks (the server also caps it at its max_batch).
  offloadHeartbeat @21 (clientId :Uuid, maxTasks :UInt64)
      -> (code :Int32, tasks :List(OffloadTask), leader :Text);
  # One code per item, in order; at most max_batch items.
  notifyOffloadSuccess @22 (clientId :Uuid, items :List(OffloadedObject))
      -> (code :Int32, codes :List(Int32), leader :Text);
  evictDiskReplica @23 (clientId :Uuid, tenant :Text, key :Text) -> (code :Int32, leader :Text);
  # Offload tasks the node could not copy (its store refused the write): the
  # pins are released and eviction no longer waits for these copies (nor,
  # until the node's next successful copy, for any copy to that node).
  # One code per item, in order; at most max_batch items.
  notifyOffloadFailure @29 (clientId :Uuid, items :List(OffloadFailure))
      -> (code :Int32, codes :List(Int32), leader :Text);

  # --- promotion on hit (LOCAL_DISK -> MEMORY; docs/directory.md) --------------
  # One grant per item, in order; at most max_batch items. The node copies
  # each granted object from its SSD store into the reserved range, then
  # reports it with promoteEnd (until then the range belongs to nobody else).
  promoteStart @26 (clientId :Uuid, items :List(PromoteRequest))
      -> (code :Int32, grants :List(PromoteGrant), leader :Text);
  # One code per item, in order: OK when a copied object got its MEMORY
  # replica (or an abandoned one's range was given back).
  promoteEnd @27 (clientId :Uuid, items :List(PromoteResult))
      -> (code :Int32, codes :List(Int32), leader :Text);

  # --- copy and move tasks (directory/directory.h for the codes) ----------------
  # A copy names one or more targets and source ""; a move one source and one
  # target. The task is the creating client's to run: taskStart reserves one
  # range per target (replicas in target order), the client writes the
  # object's bytes there, taskEnd (copied: OK, or why the copy failed)
  # attaches them as COMPLETE replicas or gives them back.
  createTask @30 (clientId :Uuid, tenant :Text, type :TaskType, key :Text, source :Text,
                  targets :List(Text))
      -> (code :Int32, taskId :Uuid, leader :Text);
  queryTask @31 (tenant :Text, taskId :Uuid) -> (code :Int32, task :TaskInfo, leader :Text);
  taskStart @32 (clientId :Uuid, tenant :Text, taskId :Uuid)
      -> (code :Int32, key :Text, size :UInt64, replicas :List(ReplicaDescriptor), leader :Text);
  taskEnd @33 (clientId :Uuid, tenant :Text, taskId :Uuid, copied :Int32)
      -> (code :Int32, leader :Text);

  # --- authentication (auth/proof.h, docs/security.md) -------------------------
  # A fresh 32-byte nonce for this connection's handshake (each call replaces
  # the previous one). `required` is false on a master without tokens, which
  # serves every call without a handshake.
  authChallenge @24 () -> (code :Int32, serverNonce :Data, required :Bool);
  # proof = HMAC-SHA256(token, "master/client" || serverNonce || clientNonce)
  # (32-byte clientNonce, framing of auth::Prove). One try per challenge.
  # OK: the connection acts with the token's roles (auth::Role bits) and
  # tenant ("" = any), and serverProof = HMAC-SHA256(token, "master/server"
  # || serverNonce || clientNonce) proves the master knows the token too.
  # UNAUTHENTICATED: no live challenge or a wrong proof (the connection
  # closes); RATE_LIMITED: this peer failed too many handshakes lately.
  authenticate @25 (clientNonce :Data, proof :Data)
      -> (code :Int32, serverProof :Data, roles :UInt32, tenant :Text);
}
