"""Mooncake's store API over Shelfmark: MooncakeDistributedStore and its
types, with Mooncake's signatures and conventions (integer return codes in
Mooncake's numbering, b"" for a missing key, buffers by address), so
connectors written for Mooncake run unchanged. docs/python.md lists where
Shelfmark chose a behaviour Mooncake leaves open.

    from mooncake.store import MooncakeDistributedStore
    store = MooncakeDistributedStore()
    store.setup("localhost", "P2PHANDSHAKE", 512 << 20, 128 << 20, "tcp", "", "master:50051")
    store.put("k", b"v"); store.get("k"); store.close()
"""

import enum
import os

import _shelfmark as _native

from mooncake._segments import SegmentsMixin
from mooncake._standalone import MooncakeHostMemAllocator, StandaloneMixin
from mooncake._tasks import QueryTaskResponse, TaskStatus, TaskType, TasksMixin
from mooncake._tensor import TensorMixin
from mooncake._zero_copy import ZeroCopyMixin
from mooncake.mooncake_config import PROTOCOLS, MooncakeConfig, service_address
from shelfmark._util import as_buffer, store_options

__all__ = ["MooncakeDistributedStore", "ReplicateConfig", "SoftPinAction", "ReplicaStatus",
           "ReplicaDescriptor", "MemoryDescriptor", "DiskDescriptor", "BufferDescriptor",
           "BufferHandle", "MooncakeConfig", "TaskType", "TaskStatus", "QueryTaskResponse",
           "MooncakeHostMemAllocator"]

BufferHandle = _native.BufferHandle

_INVALID_PARAMS = -600
_OBJECT_ALREADY_EXISTS = -705

# Shelfmark's ErrorCode follows Mooncake's numbering except for a few codes
# Mooncake has since numbered differently; those are answered with
# Mooncake's numbers here (docs/python.md, "Return codes").
_TO_MOONCAKE = {
    -1000: -601,   # ILLEGAL_CLIENT (Mooncake's -1000 is ETCD_OPERATION_ERROR)
    -1002: -1010,  # UNAVAILABLE_IN_CURRENT_STATUS (Mooncake's -1002: ETCD_TRANSACTION_FAIL)
    -1400: -1000,  # ETCD_OPERATION_ERROR (Shelfmark's -1000 is ILLEGAL_CLIENT; docs/ha.md)
    -1401: -1001,  # ETCD_KEY_NOT_EXIST
    -1402: -1002,  # ETCD_TRANSACTION_FAIL
    -1420: -1400,  # TASK_NOT_FOUND (Shelfmark's -1400 is ETCD_OPERATION_ERROR)
    -1421: -1401,  # TASK_PENDING_LIMIT_EXCEEDED
}
_SHELFMARK_ONLY = frozenset(_TO_MOONCAKE)


def _c(code):
    return _TO_MOONCAKE.get(code, code)


def _cs(codes):
    if _SHELFMARK_ONLY.isdisjoint(codes):
        return codes
    return [_TO_MOONCAKE.get(c, c) for c in codes]


def _put_code(code):
    """A put's answer as Mooncake's client gives it: a key that already
    exists is success (the object stays as it was; upserts replace)."""
    return 0 if code == _OBJECT_ALREADY_EXISTS else _c(code)


def _put_codes(codes):
    return [_put_code(c) for c in codes]


# A soft pin without a TTL lasts this long (Mooncake's default soft-pin TTL).
DEFAULT_SOFT_PIN_TTL_MS = 30 * 60 * 1000


class SoftPinAction(enum.IntEnum):
    PRESERVE = 0  # puts: no soft pin unless with_soft_pin
    ENABLE = 1
    DISABLE = 2


class ReplicaStatus(enum.IntEnum):
    UNDEFINED = 0
    INITIALIZED = 1
    PROCESSING = 2
    COMPLETE = 3
    REMOVED = 4
    FAILED = 5


class ReplicateConfig:
    """How a put places its object. replica_num: MEMORY replicas on distinct
    segments; preferred_segment(s): segment names tried first (a store's
    get_hostname(), a node's --segment_name); with_hard_pin: never evicted; with_soft_pin /
    soft_pin_action=ENABLE: evicted last, for soft_pin_ttl_ms (None or 0:
    30 min); group_ids: one group per key written (None: no groups; ""
    ungrouped); prefer_alloc_in_same_node: after the preferred segments, the
    segments on this store's host (its local_hostname's address) first."""

    def __init__(self):
        self.replica_num = 1
        self.with_soft_pin = False
        self.with_hard_pin = False
        self.soft_pin_action = SoftPinAction.PRESERVE
        self.soft_pin_ttl_ms = None
        self.preferred_segment = ""
        self.preferred_segments = []
        self.prefer_alloc_in_same_node = False
        self.group_ids = None

    def __str__(self):
        return ("ReplicateConfig(replica_num=%d, with_soft_pin=%s, with_hard_pin=%s, "
                "preferred_segments=%r)" % (self.replica_num, self.with_soft_pin,
                                            self.with_hard_pin, self._segments()))

    __repr__ = __str__

    def _segments(self):
        segments = list(self.preferred_segments or [])
        if self.preferred_segment and self.preferred_segment not in segments:
            segments.insert(0, self.preferred_segment)
        return segments

    def _soft_pinned(self):
        return (bool(self.with_soft_pin) or self.soft_pin_action == SoftPinAction.ENABLE) \
            and self.soft_pin_action != SoftPinAction.DISABLE

    def _native(self):
        c = _native.PutConfig()
        c.replica_num = int(self.replica_num)
        c.preferred_segments = self._segments()
        c.hard_pin = bool(self.with_hard_pin)
        c.soft_pin_ttl_ms = \
            int(self.soft_pin_ttl_ms or DEFAULT_SOFT_PIN_TTL_MS) if self._soft_pinned() else 0
        return c


_DEFAULT_CONFIG = _native.PutConfig()


def _put_config(config, replace=False, group="", host=""):
    """The native PutConfig of `config` (None: the defaults); `replace`:
    an upsert's; `group`: the group the keys join; `host`: the writer's own
    address, preferred when config.prefer_alloc_in_same_node."""
    if config is None and not replace and not group:
        return _DEFAULT_CONFIG
    c = _native.PutConfig() if config is None else config._native()
    c.replace = replace
    c.group_id = group
    if config is not None and config.prefer_alloc_in_same_node:
        c.prefer_host = host
    return c


def _upsert_refused(config):
    """Mooncake refuses an upsert whose soft_pin_ttl_ms is set without a soft
    pin to apply it to (INVALID_PARAMS)."""
    return config is not None and config.soft_pin_ttl_ms is not None \
        and not config._soft_pinned()


def _config(config, replace=False, host=""):
    """A single-key write's PutConfig, or None when config.group_ids does not
    name exactly one group (Mooncake answers INVALID_PARAMS)."""
    ids = None if config is None else config.group_ids
    if ids is not None and len(ids) != 1:
        return None
    return _put_config(config, replace, "" if ids is None else str(ids[0]), host)


def _batched(config, lists, call, replace=False, host=""):
    """A batch write: call(lists, PutConfig) -> one code per key, once, or
    with config.group_ids once per group over that group's keys (`lists`:
    the keys first, then the per-key lists, taken in step). The codes in key
    order; INVALID_PARAMS for every key when group_ids or a list does not
    have one entry per key."""
    ids = None if config is None else config.group_ids
    if ids is None:
        return call(lists, _put_config(config, replace, host=host))
    n = len(lists[0])
    if len(ids) != n or any(len(other) != n for other in lists[1:]):
        return [_INVALID_PARAMS] * n
    out = [0] * n
    for group in dict.fromkeys(str(g) for g in ids):
        picked = [i for i, g in enumerate(ids) if str(g) == group]
        codes = call([[values[i] for i in picked] for values in lists],
                     _put_config(config, replace, group, host))
        for i, code in zip(picked, codes):
            out[i] = code
    return out


def _one(config, replace, call, host=""):
    """A single-key write: call(PutConfig) -> its code, as Mooncake answers
    (`host`: _put_config's)."""
    if replace and _upsert_refused(config):
        return _INVALID_PARAMS
    c = _config(config, replace, host)
    if c is None:
        return _INVALID_PARAMS
    code = call(c)
    return _c(code) if replace else _put_code(code)


def _many(config, replace, lists, call, host=""):
    """A batch write (_batched's arguments): one code per key, as Mooncake
    answers."""
    if replace and _upsert_refused(config):
        return [_INVALID_PARAMS] * len(lists[0])
    codes = _batched(config, lists, call, replace, host)
    return _cs(codes) if replace else _put_codes(codes)


def _first_failure(codes):
    return next((c for c in codes if c != 0), 0)


class BufferDescriptor:
    def __init__(self, size, buffer_address, protocol, transport_endpoint):
        self.size = size
        self.buffer_address = buffer_address
        self.protocol = protocol
        self.transport_endpoint = transport_endpoint

    def __repr__(self):
        return ("<BufferDescriptor size=%d buffer_address=%d protocol=%s transport_endpoint=%s>"
                % (self.size, self.buffer_address, self.protocol, self.transport_endpoint))


class MemoryDescriptor:
    def __init__(self, buffer_descriptor):
        self.buffer_descriptor = buffer_descriptor


class DiskDescriptor:
    """A LOCAL_DISK replica: the node at `endpoint` holds it in its SSD store
    (Shelfmark has no file path to give: file_path is "")."""

    def __init__(self, object_size, endpoint):
        self.file_path = ""
        self.object_size = object_size
        self.endpoint = endpoint


class ReplicaDescriptor:
    """One replica of an object, as the master reported it."""

    def __init__(self, info):
        self.status = ReplicaStatus.__members__.get(info.status, ReplicaStatus.UNDEFINED)
        self._info = info

    def is_memory_replica(self):
        return self._info.memory

    def is_disk_replica(self):
        return not self._info.memory

    def get_memory_descriptor(self):
        if not self._info.memory:
            raise RuntimeError("not a memory replica")
        i = self._info
        return MemoryDescriptor(BufferDescriptor(i.size, i.buffer_address, i.protocol, i.endpoint))

    def get_disk_descriptor(self):
        if self._info.memory:
            raise RuntimeError("not a disk replica")
        return DiskDescriptor(self._info.size, self._info.endpoint)

    def __repr__(self):
        return "<ReplicaDescriptor %s %s %s>" % (
            self.status.name, "MEMORY" if self._info.memory else "LOCAL_DISK", self._info.endpoint)


class MooncakeDistributedStore(TensorMixin, ZeroCopyMixin, SegmentsMixin, TasksMixin,
                               StandaloneMixin):
    """Mooncake's store client. Every method answers as Mooncake's does:
    0 / a size / 1-0 for success, a negative Mooncake error code otherwise
    (-600 INVALID_PARAMS before setup() or after close())."""

    def __init__(self):
        self._store = _native.NativeStore()

    # --- setup ----------------------------------------------------------------
    def setup(self, local_hostname=None, metadata_server=None,
              global_segment_size=16 * 1024 * 1024, local_buffer_size=16 * 1024 * 1024,
              protocol="tcp", rdma_devices="", master_server_addr="127.0.0.1:50051",
              engine=None, **kwargs):
        """Connects to the master at master_server_addr ("host:port", or
        Mooncake's "etcd://H:P[;H:P...]": follow the leader published in
        etcd; cluster_id keyword, else $SHELFMARK_CLUSTER_ID, else
        $MC_STORE_CLUSTER_ID, else "shelfmark"); 0 or a negative code
        (-900 RPC_FAIL when the master does not answer or no leader is
        published).

        Also setup(dict) / setup(MooncakeConfig) with the JSON file's fields.
        metadata_server is accepted and unused (Shelfmark needs no metadata
        service); protocol "tcp" runs on UCX, "rdma" on verbs; rdma_devices
        names the device (the first of a comma-separated list).
        local_hostname is "host" or "host:port": the host is where other
        clients reach the hosted segment, "host:port" its name (without a
        port one in 12300-14300 is chosen; get_hostname() tells which).
        Sizes: bytes or size strings ("16MB"); anything else, like "50%",
        answers INVALID_PARAMS (-600), as does a configuration with a bad
        field. Extra keywords: tenant_id, rpc_timeout_ms,
        transfer_timeout_ms, cluster_token, master_token
        ($SHELFMARK_CLUSTER_TOKEN / $SHELFMARK_MASTER_TOKEN), cluster_id;
        enable_client_http_server=True serves this store's GET /health,
        /metrics and /metrics/summary on 0.0.0.0:client_http_port (default
        9300, Mooncake's); enable_ssd_offload=True gives the hosted segment
        an SSD tier in ssd_offload_path (default
        $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH; a config's fields, or
        MOONCAKE_OFFLOAD_ENABLED with setup_with_env), set up by the other
        MOONCAKE_OFFLOAD_* variables (docs/python.md)."""
        if local_hostname is None:
            raise TypeError("setup() needs local_hostname and metadata_server, "
                            "a dict, or a MooncakeConfig (setup_with_env: the environment)")
        try:
            if isinstance(local_hostname, dict):
                cfg = MooncakeConfig.from_dict(local_hostname)
            elif isinstance(local_hostname, MooncakeConfig):
                cfg = local_hostname
            else:
                if str(protocol).lower() not in PROTOCOLS:
                    return _INVALID_PARAMS
                cfg = MooncakeConfig(
                    local_hostname=local_hostname, metadata_server=metadata_server or "",
                    global_segment_size=global_segment_size,
                    local_buffer_size=local_buffer_size, protocol=protocol,
                    device_name=rdma_devices or "", master_server_address=master_server_addr,
                    tenant_id=kwargs.pop("tenant_id", "default"))
        except ValueError:
            return _INVALID_PARAMS  # Mooncake's setup answers a code, not an exception
        extra = dict(kwargs)
        if isinstance(local_hostname, dict):
            extra.update({k: local_hostname[k] for k in
                          ("rpc_timeout_ms", "transfer_timeout_ms", "cluster_token",
                           "master_token", "cluster_id", "enable_client_http_server",
                           "client_http_port") if k in local_hostname})
        return self._setup(cfg, **extra)

    def setup_with_env(self, **kwargs):
        """setup() from $MOONCAKE_CONFIG_PATH or the MOONCAKE_* variables."""
        return self._setup(MooncakeConfig.load_from_env(), **kwargs)

    def _setup(self, cfg, rpc_timeout_ms=10_000, transfer_timeout_ms=5_000, cluster_token=None,
               master_token=None, cluster_id=None, enable_ssd_offload=None, ssd_offload_path=None,
               enable_client_http_server=False, client_http_port=9300):
        address = service_address(cfg)  # the standalone-store shape (_standalone.py)
        if address is not None:  # the service owns the segment and its SSD tier
            return self.setup_dummy(0, cfg.local_buffer_size, address, cfg.tenant_id,
                                    cluster_token, rpc_timeout_ms)
        device = (cfg.device_name or "").split(",")[0].strip()
        o = store_options(
            master=cfg.master_server_address, protocol=PROTOCOLS[cfg.protocol.lower()],
            tenant="" if cfg.tenant_id in ("", "default") else cfg.tenant_id,
            local_buffer_size=cfg.local_buffer_size, global_segment_size=cfg.global_segment_size,
            rpc_timeout_ms=rpc_timeout_ms, transfer_timeout_ms=transfer_timeout_ms,
            cluster_token=cluster_token, master_token=master_token,
            device="" if device == "auto-discovery" else device, hostname=cfg.local_hostname,
            cluster_id=cluster_id)
        o.http_server = bool(enable_client_http_server)
        o.http_port = int(client_http_port)
        # The keywords win over the configuration's fields (a dict's, a
        # MooncakeConfig's, the environment's).
        o.enable_ssd_offload = bool(cfg.enable_ssd_offload if enable_ssd_offload is None
                                    else enable_ssd_offload)
        o.ssd_offload_path = str((cfg.ssd_offload_path if ssd_offload_path is None
                                  else ssd_offload_path) or "")
        return _c(self._embedded().setup(o))

    def close(self):
        self._stop_tasks()  # the tasks this store runs end first
        return self._store.close()

    def get_hostname(self):
        return self._store.hostname()

    def disk_stats(self):
        """Shelfmark's addition: the SSD tier's counters (objects,
        used_bytes, capacity_bytes, corrupt_records, disk_requests,
        disk_served_bytes, disk_errors, offloaded, disk_reported), or None
        without a tier."""
        stats = getattr(self._store, "disk_stats", None)
        return (stats() if stats else None) or None

    def health_check(self):
        """0 when the master answers, else a negative code."""
        return _c(self._store.health_check())

    # --- writes ---------------------------------------------------------------
    # A key that exists answers 0 and keeps its object, as Mooncake's client
    # does (_put_code); config.group_ids gives each key its group.
    def put(self, key, value, config=None):
        return _one(config, False, lambda c: self._store.put(key, as_buffer(value), c),
                    self._host(config))

    def put_parts(self, key, *parts, config=None):
        return _one(config, False, lambda c: self._put_parts(key, parts, c), self._host(config))

    def put_batch(self, keys, values, config=None):
        """0, or the first failing item's code."""
        if len(keys) != len(values):
            return _INVALID_PARAMS
        return _first_failure(_many(config, False, [list(keys), list(values)], self._put_batch,
                                    self._host(config)))

    def put_from(self, key, buffer_ptr, size, config=None):
        if config is None:  # _one's answer without its Python (the per-call hot path)
            code = self._store.put_from(key, buffer_ptr, size, _DEFAULT_CONFIG)
            return code if code == 0 else _put_code(code)
        return _one(config, False, lambda c: self._store.put_from(key, buffer_ptr, size, c),
                    self._host(config))

    def batch_put_from(self, keys, buffer_ptrs, sizes, config=None):
        return _many(config, False, [list(keys), list(buffer_ptrs), list(sizes)],
                     self._batch_put_from, self._host(config))

    def batch_put_from_multi_buffers(self, keys, all_buffer_ptrs, all_sizes, config=None):
        return _many(config, False, [list(keys), list(all_buffer_ptrs), list(all_sizes)],
                     self._batch_put_from_multi_buffers, self._host(config))

    def _host(self, config):
        """This store's address, for config.prefer_alloc_in_same_node."""
        return self._store.listen_ip() if config is not None and \
            config.prefer_alloc_in_same_node else ""

    # The native writes behind both the put and the upsert forms.
    def _put_parts(self, key, parts, c):
        return self._store.put_parts(key, c, *[as_buffer(p) for p in parts])

    def _put_batch(self, lists, c):
        keys, values = lists
        return self._store.put_batch(keys, [as_buffer(v) for v in values], c)

    def _batch_put_from(self, lists, c):
        return self._store.batch_put_from(*lists, c)

    def _batch_put_from_multi_buffers(self, lists, c):
        keys, ptrs, sizes = lists
        return self._store.batch_put_from_multi_buffers(
            keys, [list(p) for p in ptrs], [list(n) for n in sizes], c)

    # --- upserts: replace an existing object atomically ------------------------
    # Readers that looked the old object up finish reading it; lookups after
    # the call see the new one; a missing key is simply put (docs/python.md).
    # soft_pin_ttl_ms without a soft pin: INVALID_PARAMS (_upsert_refused).
    def upsert(self, key, value, config=None):
        return _one(config, True, lambda c: self._store.put(key, as_buffer(value), c),
                    self._host(config))

    def upsert_parts(self, key, *parts, config=None):
        return _one(config, True, lambda c: self._put_parts(key, parts, c), self._host(config))

    def upsert_batch(self, keys, values, config=None):
        """0, or the first failing item's code."""
        if len(keys) != len(values):
            return _INVALID_PARAMS
        return _first_failure(_many(config, True, [list(keys), list(values)], self._put_batch,
                                    self._host(config)))

    def upsert_from(self, key, buffer_ptr, size, config=None):
        return _one(config, True, lambda c: self._store.put_from(key, buffer_ptr, size, c),
                    self._host(config))

    def batch_upsert_from(self, keys, buffer_ptrs, sizes, config=None):
        return _many(config, True, [list(keys), list(buffer_ptrs), list(sizes)],
                     self._batch_put_from, self._host(config))

    def batch_upsert_from_multi_buffers(self, keys, all_buffer_ptrs, all_sizes, config=None):
        return _many(config, True, [list(keys), list(all_buffer_ptrs), list(all_sizes)],
                     self._batch_put_from_multi_buffers, self._host(config))

    # --- reads ----------------------------------------------------------------
    def get(self, key):
        """The bytes, or b"" when the key is missing (or the read failed)."""
        code, value = self._store.get(key)
        return value if code == 0 else b""

    def get_batch(self, keys):
        codes, values = self._store.get_batch(list(keys))
        return [v if c == 0 else b"" for c, v in zip(codes, values)]

    def get_buffer(self, key):
        """A BufferHandle (buffer protocol, ptr(), size()), or None."""
        _, handle = self._store.get_buffer(key)
        return handle

    def batch_get_buffer(self, keys):
        _, handles = self._store.batch_get_buffer(list(keys))
        return handles

    def get_into(self, key, buffer_ptr, size):
        """Bytes read into the registered buffer, or a negative code
        (-10 BUFFER_OVERFLOW when the object is larger than size)."""
        got = self._store.get_into(key, buffer_ptr, size)
        return got if got >= 0 else _c(got)

    def batch_get_into(self, keys, buffer_ptrs, sizes):
        return _cs(self._store.batch_get_into(list(keys), list(buffer_ptrs), list(sizes)))

    def batch_get_into_multi_buffers(self, keys, all_buffer_ptrs, all_sizes,
                                     prefer_alloc_in_same_node=False):
        return _cs(self._store.batch_get_into_multi_buffers(
            list(keys), [list(p) for p in all_buffer_ptrs], [list(s) for s in all_sizes]))

    def get_into_ranges(self, buffer_ptrs, all_keys, all_dst_offsets, all_src_offsets,
                        all_sizes):
        results = self._store.get_into_ranges(list(buffer_ptrs), all_keys, all_dst_offsets,
                                              all_src_offsets, all_sizes)
        return [[_cs(fragments) for fragments in per_key] for per_key in results]

    # --- registered memory ----------------------------------------------------
    def register_buffer(self, buffer_ptr, size):
        return _c(self._store.register_buffer(buffer_ptr, size))

    def unregister_buffer(self, buffer_ptr):
        return _c(self._store.unregister_buffer(buffer_ptr))

    # --- metadata -------------------------------------------------------------
    def is_exist(self, key):
        """1 exists, 0 not, a negative code on error."""
        got = self._store.is_exist(key)
        return got if got >= 0 else _c(got)

    def batch_is_exist(self, keys):
        return _cs(self._store.batch_is_exist(list(keys)))

    def get_size(self, key):
        return _c(self._store.get_size(key))

    def get_replica_desc(self, key):
        _, replicas = self._store.get_replicas(key)
        return [ReplicaDescriptor(r) for r in replicas]

    def batch_get_replica_desc(self, keys):
        return {k: self.get_replica_desc(k) for k in keys}

    def remove(self, key, force=False):
        return _c(self._store.remove(key, force))

    def batch_remove(self, keys, force=False):
        return _cs(self._store.batch_remove(list(keys), force))

    def remove_all(self, force=False):
        """The number of objects removed, or a negative code."""
        return _c(self._store.remove_all(force))

    def remove_by_regex(self, regex, force=False):
        """The number of objects whose key matches `regex` removed, or a
        negative code (-600 for a pattern the master refuses). The syntax is
        POSIX extended, not ECMAScript: docs/python.md."""
        return _c(self._store.remove_by_regex(regex, force))
