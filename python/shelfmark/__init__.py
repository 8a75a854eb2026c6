"""Shelfmark's Python API: a KV-cache store client (docs/python.md).

    import shelfmark
    with shelfmark.Store("10.0.0.1:50051") as store:
        store.put("k", b"bytes")            # any bytes-like, numpy array or CPU tensor
        value = store.get("k")              # bytes; ObjectNotFound (a KeyError) if missing
        n = store.get_into("k", array)      # straight into numpy / torch memory

Failures raise ShelfmarkError (or a subclass) carrying the code's name and
value (`err.name`, `err.code`), the same numbers `mooncake.store` returns.
Every call that waits releases the GIL; a Store may be used from many
threads, and several may live in one process. The same native module also
serves `mooncake.store` (Mooncake's MooncakeDistributedStore).
"""

import enum
import os

import _shelfmark as _native

from shelfmark._util import address_of, as_buffer, parse_size, store_options

__all__ = ["Store", "ErrorCode", "ShelfmarkError", "ObjectNotFound", "ObjectExists",
           "BufferOverflow", "InvalidParams", "RpcError", "TransferError", "parse_size"]

ErrorCode = enum.IntEnum("ErrorCode", sorted(_native.error_codes().items(), key=lambda kv: -kv[1]))
ErrorCode.__doc__ = "Shelfmark's error codes (common/error_code.h; Mooncake's numbering)."


class ShelfmarkError(Exception):
    """A call failed: `code` (a negative int) and `name` ("OBJECT_NOT_FOUND")."""

    def __init__(self, code, what=""):
        self.code = int(code)
        self.name = _native.error_name(self.code)
        self.what = what
        super().__init__("%s%s (%d)" % (what + ": " if what else "", self.name, self.code))

    def __str__(self):
        return self.args[0]


class ObjectNotFound(ShelfmarkError, KeyError):
    """OBJECT_NOT_FOUND (-704)."""


class ObjectExists(ShelfmarkError):
    """OBJECT_ALREADY_EXISTS (-705): objects are immutable; remove first."""


class BufferOverflow(ShelfmarkError):
    """BUFFER_OVERFLOW (-10): the destination is smaller than the object."""


class InvalidParams(ShelfmarkError):
    """INVALID_PARAMS (-600)."""


class RpcError(ShelfmarkError):
    """RPC_FAIL (-900): the master did not answer."""


class TransferError(ShelfmarkError):
    """TRANSFER_FAIL (-800)."""


_CLASSES = {
    ErrorCode.OBJECT_NOT_FOUND: ObjectNotFound,
    ErrorCode.OBJECT_ALREADY_EXISTS: ObjectExists,
    ErrorCode.BUFFER_OVERFLOW: BufferOverflow,
    ErrorCode.INVALID_PARAMS: InvalidParams,
    ErrorCode.RPC_FAIL: RpcError,
    ErrorCode.TRANSFER_FAIL: TransferError,
}


def error(code, what=""):
    """The exception for a negative code."""
    return _CLASSES.get(code, ShelfmarkError)(code, what)


def _check(code, what):
    if code < 0:
        raise error(code, what)
    return code


def _put_config(replicas=1, hard_pin=False, soft_pin_ttl_ms=0, preferred_segments=None,
                group=None, replace=False):
    c = _native.PutConfig()
    c.replace = bool(replace)
    c.replica_num = int(replicas)
    c.hard_pin = bool(hard_pin)
    c.soft_pin_ttl_ms = int(soft_pin_ttl_ms)
    c.preferred_segments = list(preferred_segments or [])
    c.group_id = group or ""
    return c


class Store:
    """A client of one Shelfmark cluster.

    master: "host:port" of shelfmark-master ($SHELFMARK_MASTER, else
    127.0.0.1:50051), or "etcd://H:P[;H:P...]": follow the leader of
    cluster_id published in those etcd endpoints (cluster_id None:
    $SHELFMARK_CLUSTER_ID, else $MC_STORE_CLUSTER_ID, else "shelfmark";
    docs/ha.md). protocol: "ucx" (default), "rdma", "auto" or
    "loopback". tenant: the tenant the keys belong to ("" = default).
    local_buffer_size: the staging buffer put/get copy through (an int or a
    size string such as "64MB"). global_segment_size: DRAM of this process
    the store contributes to the cluster (a segment other clients read
    one-sided, reachable at `hostname`; 0: none); replicas in it are read
    and written with memcpy. cluster_token / master_token:
    $SHELFMARK_CLUSTER_TOKEN / $SHELFMARK_MASTER_TOKEN when not given.
    follow_leader_hints: with a "host:port" master, follow a standby's
    NOT_LEADER to the leader it names (None: $SHELFMARK_FOLLOW_LEADER_HINTS
    is "1"; an etcd:// master always does; docs/ha.md).
    The master is asked once here: RpcError when it does not answer.
    """

    def __init__(self, master=None, *, protocol="ucx", tenant="", local_buffer_size="64MB",
                 rpc_timeout_ms=10_000, transfer_timeout_ms=5_000, cluster_token=None,
                 master_token=None, device="", hostname="", global_segment_size=0,
                 cluster_id=None, follow_leader_hints=None):
        o = store_options(
            master=master or os.environ.get("SHELFMARK_MASTER", "127.0.0.1:50051"),
            protocol=protocol, tenant=tenant, local_buffer_size=local_buffer_size,
            global_segment_size=global_segment_size, rpc_timeout_ms=rpc_timeout_ms,
            transfer_timeout_ms=transfer_timeout_ms, cluster_token=cluster_token,
            master_token=master_token, device=device, hostname=hostname,
            cluster_id=cluster_id, follow_leader_hints=follow_leader_hints)
        self._native = _native.NativeStore()
        _check(self._native.setup(o), "cannot open a store of master %s" % o.master)

    @classmethod
    def through_service(cls, address="127.0.0.1:50052", *, tenant="", cluster_token=None,
                        rpc_timeout_ms=10_000):
        """A store whose calls all go to the host's store service
        (shelfmark-store-service, docs/node.md) at `address`: its "host:port"
        (--port on this host), its --socket_path, or "@name". This process
        opens no transport and hosts nothing. The zero-copy calls (get_into,
        put_from, register) need buffers inside
        mooncake.store.MooncakeHostMemAllocator memory (else InvalidParams);
        local_copies is the service's affair (AttributeError here).
        cluster_token: $SHELFMARK_CLUSTER_TOKEN when not given, proven to
        the service, which proves it back. RpcError when no service answers."""
        o = _native.ServiceStoreOptions()
        o.server_address = str(address)
        o.cluster_token = (cluster_token if cluster_token is not None
                           else os.environ.get("SHELFMARK_CLUSTER_TOKEN", ""))
        o.tenant = tenant
        o.timeout_ms = int(rpc_timeout_ms)
        store = cls.__new__(cls)
        store._native = _native.NativeServiceStore()
        _check(store._native.setup(o), "cannot reach the store service at %s" % address)
        return store

    # --- life ---------------------------------------------------------------
    def close(self):
        """Drops the connection; calls in flight finish first. Idempotent."""
        self._native.close()

    @property
    def closed(self):
        return not self._native.is_open()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def health(self):
        """Raises unless the master answers."""
        _check(self._native.health_check(), "health check")

    def local_copies(self):
        """(copies, bytes): replicas read or written with memcpy because they
        lie in this store's own segment."""
        return self._native.local_copies()

    # --- writes -------------------------------------------------------------
    def put(self, key, value, **config):
        """Stores `value` (bytes-like, numpy array, CPU tensor) under `key`.
        config: replicas, hard_pin, soft_pin_ttl_ms, preferred_segments, group."""
        _check(self._native.put(key, as_buffer(value), _put_config(**config)), "put %r" % key)

    def upsert(self, key, value, **config):
        """Stores `value` under `key`, replacing the object if it exists: readers
        that looked the old one up finish reading it; lookups after this call
        see the new one."""
        self.put(key, value, replace=True, **config)

    def put_parts(self, key, *parts, **config):
        """Stores the concatenation of `parts` as one object."""
        buffers = [as_buffer(p) for p in parts]
        _check(self._native.put_parts(key, _put_config(**config), *buffers), "put %r" % key)

    def put_many(self, items, **config):
        """Stores every (key, value) of a mapping or an iterable of pairs in one
        batch; raises the first failure after the batch ran."""
        pairs = list(items.items() if hasattr(items, "items") else items)
        keys = [k for k, _ in pairs]
        codes = self._native.put_batch(keys, [as_buffer(v) for _, v in pairs],
                                       _put_config(**config))
        for k, c in zip(keys, codes):
            _check(c, "put %r" % k)

    # --- reads --------------------------------------------------------------
    def get(self, key):
        """The object's bytes; ObjectNotFound (a KeyError) when missing."""
        code, value = self._native.get(key)
        _check(code, "get %r" % key)
        return value

    def get_buffer(self, key):
        """The object as a BufferHandle (buffer protocol, no further copy)."""
        code, handle = self._native.get_buffer(key)
        _check(code, "get %r" % key)
        return handle

    def get_many(self, keys):
        """[bytes or None (missing)] in the order of `keys`; other failures raise."""
        keys = list(keys)
        codes, values = self._native.get_batch(keys)
        out = []
        for k, c, v in zip(keys, codes, values):
            if c == ErrorCode.OBJECT_NOT_FOUND:
                out.append(None)
                continue
            _check(c, "get %r" % k)
            out.append(v)
        return out

    def get_into(self, key, buffer):
        """Reads the object into `buffer` (writable bytes-like, numpy array or
        CPU tensor, at least the object's size); returns the object's size.
        A buffer not registered with register() is registered for the call."""
        ptr, n = address_of(buffer, writable=True)
        with self._registered(ptr, n):
            return _check(self._native.get_into(key, ptr, n), "get %r" % key)

    def put_from(self, key, buffer, **config):
        """put() of a registered (or, for this call, registered) buffer."""
        ptr, n = address_of(buffer)
        with self._registered(ptr, n):
            _check(self._native.put_from(key, ptr, n, _put_config(**config)), "put %r" % key)

    # --- registered memory ----------------------------------------------------
    def register(self, buffer):
        """Registers the buffer's memory for zero-copy calls (keep it alive
        until unregister())."""
        ptr, n = address_of(buffer)
        _check(self._native.register_buffer(ptr, n), "register")

    def unregister(self, buffer):
        ptr, _ = address_of(buffer)
        _check(self._native.unregister_buffer(ptr), "unregister")

    def _registered(self, ptr, n):
        return _Registration(self._native, ptr, n)

    # --- metadata -------------------------------------------------------------
    def exists(self, key):
        return bool(_check(self._native.is_exist(key), "exists %r" % key))

    def __contains__(self, key):
        return self.exists(key)

    def size(self, key):
        """The object's size in bytes."""
        return _check(self._native.get_size(key), "size %r" % key)

    def remove(self, key, force=False):
        """Removes the object (force: even while another client holds a read lease)."""
        _check(self._native.remove(key, force), "remove %r" % key)

    def remove_many(self, keys, force=False, missing_ok=True):
        keys = list(keys)
        for k, c in zip(keys, self._native.batch_remove(keys, force)):
            if not (missing_ok and c == ErrorCode.OBJECT_NOT_FOUND):
                _check(c, "remove %r" % k)

    def remove_all(self, force=False):
        """Removes every object of this store's tenant; returns how many."""
        return _check(self._native.remove_all(force), "remove_all")

    def remove_matching(self, pattern, force=False):
        """Removes this tenant's objects whose key matches `pattern` (a POSIX
        extended regular expression, searched anywhere in the key: use [0-9],
        not \\d); returns how many."""
        return _check(self._native.remove_by_regex(pattern, force), "remove %r" % pattern)


class _Registration:
    """Registers [ptr, ptr + n) for a with-block unless it already is."""

    def __init__(self, native, ptr, n):
        self._native, self._ptr, self._n = native, ptr, n
        self._mine = False

    def __enter__(self):
        if self._n and not self._native.is_registered(self._ptr, self._n):
            _check(self._native.register_buffer(self._ptr, self._n), "register")
            self._mine = True

    def __exit__(self, *exc):
        if self._mine:
            self._native.unregister_buffer(self._ptr)
