"""mooncake.store's put and get sessions, their ranged transfers, and
put_from_with_metadata, against a real master and node."""

import time

import numpy as np
import pytest

from conftest import wait_for
from mooncake.store import MooncakeDistributedStore, ReplicateConfig

OK, INVALID_PARAMS, OBJECT_NOT_FOUND, OBJECT_ALREADY_EXISTS = 0, -600, -704, -705
LEASE_EXPIRED = -707
PAGE, LAYERS, KEYS = 4096, 4, 3
OBJECT = PAGE * LAYERS


def open_store(master_addr):
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master_addr) == OK
    return s


@pytest.fixture
def store(master_addr):
    s = open_store(master_addr)
    yield s
    s.close()


class Buffers:
    """A source buffer of known bytes and a zeroed destination, registered."""

    def __init__(self, store, nbytes, seed=7):
        self.store = store
        self.src = (np.arange(nbytes, dtype=np.uint64) * 2654435761 + seed).astype(np.uint8)
        self.dst = np.zeros(nbytes, dtype=np.uint8)

    def __enter__(self):
        for a in (self.src, self.dst):
            assert self.store.register_buffer(a.ctypes.data, a.nbytes) == OK
        return self

    def __exit__(self, *exc):
        for a in (self.src, self.dst):
            assert self.store.unregister_buffer(a.ctypes.data) == OK


def layer_plan(base, keys, layer):
    """Key i's layer `layer`: PAGE bytes at base + i*OBJECT + layer*PAGE,
    object offset layer*PAGE (a KV block written or read layer by layer)."""
    ptrs = [[base + i * OBJECT + layer * PAGE] for i in range(len(keys))]
    return ptrs, [[PAGE]] * len(keys), [[layer * PAGE]] * len(keys)


def test_put_session_layer_by_layer(store, prefix):
    keys = [prefix + str(i) for i in range(KEYS)]
    with Buffers(store, OBJECT * KEYS) as b:
        assert store.batch_put_session_start(keys, [OBJECT] * KEYS) == [OK] * KEYS
        for layer in reversed(range(LAYERS)):  # any order
            ptrs, sizes, offsets = layer_plan(b.src.ctypes.data, keys, layer)
            assert store.batch_put_from_multi_buffer_ranges(keys, ptrs, sizes, offsets) == \
                [PAGE] * KEYS
            assert store.get(keys[0]) == b""  # not readable before the end
        assert store.batch_put_session_end(keys) == [OK] * KEYS
        sizes = [OBJECT] * KEYS
        ptrs = [b.dst.ctypes.data + i * OBJECT for i in range(KEYS)]
        assert store.batch_get_into(keys, ptrs, sizes) == sizes
        assert np.array_equal(b.src, b.dst)
        # The session is gone: another end, or more ranges, find none.
        assert store.batch_put_session_end(keys[:1]) == [INVALID_PARAMS]
        ptrs, sizes, offsets = layer_plan(b.src.ctypes.data, keys, 0)
        assert store.batch_put_from_multi_buffer_ranges(keys, ptrs, sizes, offsets) == \
            [INVALID_PARAMS] * KEYS


def test_put_session_refusals(store, prefix):
    k, done = prefix + "k", prefix + "done"
    with Buffers(store, OBJECT) as b:
        assert store.put_from(done, b.src.ctypes.data, 64) == OK
        config = ReplicateConfig()
        assert store.batch_put_session_start([k, done], [OBJECT, 64], config) == \
            [OK, OBJECT_ALREADY_EXISTS]
        assert store.batch_put_session_start([k], [OBJECT]) == [OBJECT_ALREADY_EXISTS]
        src = b.src.ctypes.data
        other = np.zeros(PAGE, dtype=np.uint8)  # never registered
        cases = [([[src]], [[PAGE]], [[OBJECT - PAGE + 1]]),        # past the object's end
                 ([[other.ctypes.data]], [[PAGE]], [[0]]),           # unregistered memory
                 ([[src, src]], [[PAGE]], [[0, PAGE]])]              # pieces of two lengths
        for ptrs, sizes, offsets in cases:
            assert store.batch_put_from_multi_buffer_ranges([k], ptrs, sizes, offsets) == \
                [INVALID_PARAMS]
        assert store.batch_put_from_multi_buffer_ranges([k, prefix + "none"], [[src]] * 2,
                                                        [[8]] * 2, [[0]] * 2) == \
            [8, INVALID_PARAMS]
        assert store.batch_put_from_multi_buffer_ranges([k], [[src]], [[8]], []) == \
            [INVALID_PARAMS]
        assert other[0] == 0
        assert store.batch_put_session_revoke([k, prefix + "none"]) == [OK, INVALID_PARAMS]
        assert store.is_exist(k) == 0
        # Revoked: the key can be started again, and this time completed.
        assert store.batch_put_session_start([k], [PAGE]) == [OK]
        assert store.batch_put_from_multi_buffer_ranges([k], [[src]], [[PAGE]], [[0]]) == [PAGE]
        assert store.batch_put_session_end([k]) == [OK]
        assert store.get(k) == b.src[:PAGE].tobytes()


def test_get_session_ranges(store, prefix):
    keys = [prefix + str(i) for i in range(KEYS)]
    with Buffers(store, OBJECT * KEYS) as b:
        srcs = [b.src.ctypes.data + i * OBJECT for i in range(KEYS)]
        assert store.batch_put_from(keys, srcs, [OBJECT] * KEYS) == [OK] * KEYS
        assert store.batch_get_session_start(keys + [prefix + "missing"]) == \
            [OK] * KEYS + [OBJECT_NOT_FOUND]
        for layer in range(LAYERS):
            ptrs, sizes, offsets = layer_plan(b.dst.ctypes.data, keys, layer)
            assert store.batch_get_into_multi_buffer_ranges(keys, ptrs, sizes, offsets) == \
                [PAGE] * KEYS
        assert np.array_equal(b.src, b.dst)
        # Two fragments of one key, swapped; a range past the end; no session.
        dst = b.dst.ctypes.data
        assert store.batch_get_into_multi_buffer_ranges(
            [keys[1]], [[dst, dst + 100]], [[100, 50]], [[OBJECT - 100, 0]]) == [150]
        assert np.array_equal(b.dst[:100], b.src[2 * OBJECT - 100:2 * OBJECT])
        assert np.array_equal(b.dst[100:150], b.src[OBJECT:OBJECT + 50])
        assert store.batch_get_into_multi_buffer_ranges(
            [keys[0], prefix + "missing"], [[dst]] * 2, [[8]] * 2, [[OBJECT - 4]] * 2) == \
            [INVALID_PARAMS, INVALID_PARAMS]
        assert store.batch_get_session_end(keys) == OK
        assert store.batch_get_into_multi_buffer_ranges([keys[0]], [[dst]], [[8]], [[0]]) == \
            [INVALID_PARAMS]


def test_get_session_rides_one_lease(tmp_cluster, prefix):
    master, addr = tmp_cluster.start_master("--default_kv_lease_ttl=300")
    tmp_cluster.start_node(addr, "lease-node", segment_bytes=64 << 20)
    store = open_store(addr)
    try:
        with Buffers(store, PAGE) as b:
            k = prefix + "lease"
            assert store.put_from(k, b.src.ctypes.data, PAGE) == OK
            started = time.monotonic()
            assert store.batch_get_session_start([k]) == [OK]
            wait_for(lambda: time.monotonic() > started + 0.6, 5, "the 300 ms lease to pass")
            ptr = b.dst.ctypes.data
            assert store.batch_get_into_multi_buffer_ranges([k], [[ptr]], [[PAGE]], [[0]]) == \
                [LEASE_EXPIRED]
            assert not b.dst.any()  # nothing was read
            assert store.batch_get_session_start([k]) == [OK]  # a fresh lookup, a new lease
            assert store.batch_get_into_multi_buffer_ranges([k], [[ptr]], [[PAGE]], [[0]]) == \
                [PAGE]
            assert np.array_equal(b.src, b.dst)
    finally:
        store.close()


def test_sessions_end_with_their_client(master_addr, prefix):
    store = open_store(master_addr)
    k = prefix + "closed"
    assert store.batch_put_session_start([k], [PAGE]) == [OK]
    store.close()
    assert store.batch_put_session_start([k], [PAGE]) == [INVALID_PARAMS]
    assert store.batch_put_session_end([k]) == [INVALID_PARAMS]
    assert store.batch_get_session_start([k]) == [INVALID_PARAMS]
    # A new setup: the old client's session is gone.
    assert store.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master_addr) == OK
    try:
        assert store.batch_put_session_revoke([k]) == [INVALID_PARAMS]
    finally:
        store.close()


def test_put_from_with_metadata(store, prefix):
    with Buffers(store, 1 << 16) as b:
        meta, data = b.src.ctypes.data, b.src.ctypes.data + 4096
        assert store.put_from_with_metadata(prefix + "m", data, meta, 1000, 24) == OK
        assert store.get(prefix + "m") == b.src[:24].tobytes() + b.src[4096:5096].tobytes()
        assert store.put_from_with_metadata(prefix + "n", data, 0, 10, 0) == OK
        assert store.get(prefix + "n") == b.src[4096:4106].tobytes()
        assert store.put_from_with_metadata(prefix + "zero", data, meta, 0, 24) == OK
        assert store.is_exist(prefix + "zero") == 0  # size 0 stores nothing, as in Mooncake
        config = ReplicateConfig()
        config.prefer_alloc_in_same_node = True
        assert store.put_from_with_metadata(prefix + "same", data, meta, 10, 4, config) == -1
        other = np.zeros(64, dtype=np.uint8)
        assert store.put_from_with_metadata(prefix + "unreg", data, other.ctypes.data, 10,
                                            64) == INVALID_PARAMS
