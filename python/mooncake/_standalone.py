"""Mooncake's standalone-store shape, a mixin of MooncakeDistributedStore:
the engine process is a light client of the host's store service
(shelfmark-store-service, docs/node.md), which owns the DRAM segment and
moves the bytes; the engine has no transport and no segment of its own.

    alloc = MooncakeHostMemAllocator()
    ptr = alloc.alloc(64 << 20)                    # shared memory (a sealed memfd)
    store = MooncakeDistributedStore()
    store.setup_dummy(0, 0, "127.0.0.1:50052")     # the service of --port 50052
    store.register_buffer(ptr, 64 << 20)           # handed to the service
    store.batch_put_from(keys, ptrs, sizes)        # the service copies in place

server_address is Mooncake's "host:port" (the service's --port on this
host), or the service's --socket_path, or "@name" (an abstract socket).
The zero-copy calls need buffers inside MooncakeHostMemAllocator's memory
(other memory answers -600: the service cannot see it). mem_pool_size and
local_buffer_size are checked as sizes and otherwise unused: put, put_parts,
put_batch, get, get_batch and get_buffer send their bytes over the socket
(at most 256 MiB a call). The service runs copy and move tasks on its own
client and holds this store's put/get sessions (for its connection).
Segment mounting is not available in this shape: it answers -1011
(Mooncake's UNAVAILABLE_IN_CURRENT_MODE).
setup() reaches this shape too (mooncake_config.service_address: vLLM's
"standalone-store" mode, SGLang's standalone_storage). docs/python.md's
API table has a column for this shape.
"""

import os

import _shelfmark as _native

from shelfmark._util import parse_size

_INVALID_PARAMS = -600
UNAVAILABLE_IN_CURRENT_MODE = -1011  # Mooncake's code; Shelfmark's ErrorCode has none


class ServiceStore(_native.NativeServiceStore):
    """The native store of this shape, with the calls the service does not
    offer answered UNAVAILABLE_IN_CURRENT_MODE (the segment is the
    service's: a dummy client mounts none)."""

    def allocate_and_mount_segment(self, size, engine):
        return UNAVAILABLE_IN_CURRENT_MODE, ""

    def mount_segment(self, path, offset, size, engine):
        return UNAVAILABLE_IN_CURRENT_MODE, ""

    def unmount_and_free_segments(self, segment_ids, grace_ms=0):
        return UNAVAILABLE_IN_CURRENT_MODE

    def unmount_segments(self, segment_ids, grace_ms=0):
        return UNAVAILABLE_IN_CURRENT_MODE


class MooncakeHostMemAllocator:
    """Mooncake's allocator of host memory the store service can map: each
    alloc is a memfd of its own, sealed against resizing, mapped here.
    use_hugepage / hugepage_size are accepted and ignored (regular pages)."""

    def __init__(self, use_hugepage=None, hugepage_size=None):
        del use_hugepage, hugepage_size

    def alloc(self, size):
        """The address of `size` bytes (zero-filled), or 0 when refused."""
        return _native.alloc_shm(int(size)) if int(size) > 0 else 0

    def free(self, ptr):
        """0, or -600 when ptr is not an address alloc returned."""
        return 0 if _native.free_shm(int(ptr)) else _INVALID_PARAMS


class StandaloneMixin:
    def setup_dummy(self, mem_pool_size, local_buffer_size, server_address, tenant_id="default",
                    cluster_token=None, rpc_timeout_ms=10_000):
        """Connects to the host's store service (the token proven both ways:
        cluster_token, else $SHELFMARK_CLUSTER_TOKEN); 0, or -600 for bad
        sizes or address, -900 when no service answers, -1300 when the
        token does not match, -1301 for a tenant the service does not serve."""
        from mooncake.store import _c
        try:
            parse_size(mem_pool_size, "mem_pool_size")
            parse_size(local_buffer_size, "local_buffer_size")
        except ValueError:
            return _INVALID_PARAMS
        o = _native.ServiceStoreOptions()
        o.server_address = str(server_address)
        o.cluster_token = (cluster_token if cluster_token is not None
                           else os.environ.get("SHELFMARK_CLUSTER_TOKEN", ""))
        o.tenant = "" if tenant_id in ("", "default") else tenant_id
        o.timeout_ms = int(rpc_timeout_ms)
        self._store.close()
        store = ServiceStore()
        rc = store.setup(o)
        self._store = store if rc == 0 else _native.NativeStore()
        return _c(rc)

    def _embedded(self):
        """The native store of setup()'s shape (after a setup_dummy, a new one)."""
        if not isinstance(self._store, _native.NativeStore):
            self._store.close()
            self._store = _native.NativeStore()
        return self._store
