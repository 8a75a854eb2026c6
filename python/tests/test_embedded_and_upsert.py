"""A store that hosts its own segment (global_segment_size), upserts and
remove_by_regex, against a real master."""

import numpy as np
import pytest

import shelfmark
from mooncake.store import MooncakeDistributedStore, ReplicateConfig

MiB = 1 << 20
OK, INVALID_PARAMS, OBJECT_NOT_FOUND = 0, -600, -704


def hosting_store(master_addr, segment=16 * MiB):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", segment, 4 * MiB, "tcp", "", master_addr) == OK
    return s


def endpoints(store, key):
    return {r.get_memory_descriptor().buffer_descriptor.transport_endpoint
            for r in store.get_replica_desc(key) if r.is_memory_replica()}


@pytest.fixture
def lone_master(tmp_cluster):
    """A master with no node: the stores' own segments are all the DRAM."""
    _, addr = tmp_cluster.start_master("--default_kv_lease_ttl=500")
    return addr


def test_two_hosting_stores_replicate_and_survive_one_closing(lone_master):
    a, b = hosting_store(lone_master), hosting_store(lone_master)
    try:
        config = ReplicateConfig()
        config.replica_num = 2
        assert a.put("both", b"x" * 1000, config) == OK
        assert len(endpoints(a, "both")) == 2, "one replica on each store's segment"
        # Objects b writes alone land on either segment (round-robin).
        singles = ["single-%d" % i for i in range(6)]
        for k in singles:
            assert b.put(k, k.encode()) == OK
        where = {k: endpoints(b, k) for k in singles}
        b.close()
        # b's segment left with b: "both" keeps a's replica and reads back;
        # a single is still there exactly when it lived on a's segment.
        assert a.get("both") == b"x" * 1000
        a_endpoint = endpoints(a, "both")
        assert len(a_endpoint) == 1
        for k in singles:
            on_a = where[k] == a_endpoint
            assert a.is_exist(k) == (1 if on_a else 0), (k, where[k], a_endpoint)
            assert a.get(k) == (k.encode() if on_a else b"")
        assert {frozenset(e) for e in where.values()} != {frozenset(a_endpoint)}, \
            "every single landed on a: the test proved nothing about b's"
    finally:
        a.close()
        b.close()


def test_own_segment_reads_are_copies(lone_master):
    with shelfmark.Store(lone_master, global_segment_size="16MB", hostname="127.0.0.1") as s:
        value = np.arange(1 << 16, dtype=np.uint8).tobytes()
        before = s.local_copies()
        s.put("mine", value)           # the only segment is this process's own
        assert s.get("mine") == value
        after = s.local_copies()
        assert after[0] - before[0] == 2, "the put and the get were memcpy"
        assert after[1] - before[1] == 2 * len(value)


def test_closed_store_objects_are_gone(lone_master):
    s = hosting_store(lone_master)
    assert s.put("ephemeral", b"e") == OK
    s.close()
    other = MooncakeDistributedStore()
    assert other.setup("localhost", "", 0, MiB, "tcp", "", lone_master) == OK
    try:
        assert other.is_exist("ephemeral") == 0
        assert other.get("ephemeral") == b""
    finally:
        other.close()


def test_upsert_family(lone_master):
    s = hosting_store(lone_master)
    try:
        assert s.put("k", b"old value") == OK
        assert s.put("k", b"again") == OK  # exists: kept, as Mooncake's put answers
        assert s.upsert("k", b"a new, longer value") == OK
        assert s.get("k") == b"a new, longer value"
        assert s.get_size("k") == len(b"a new, longer value")
        assert s.upsert("fresh", b"f") == OK, "a missing key is simply put"
        assert s.get("fresh") == b"f"
        src = np.frombuffer(b"0123456789abcdef" * 64, dtype=np.uint8).copy()
        assert s.register_buffer(src.ctypes.data, src.nbytes) == OK
        try:
            assert s.upsert_from("k", src.ctypes.data, 512) == OK
            assert s.get("k") == src.tobytes()[:512]
            assert s.batch_upsert_from(["k", "fresh"], [src.ctypes.data, src.ctypes.data + 512],
                                       [100, 200]) == [OK, OK]
            assert s.get("k") == src.tobytes()[:100]
            assert s.get("fresh") == src.tobytes()[512:712]
        finally:
            assert s.unregister_buffer(src.ctypes.data) == OK
    finally:
        s.close()


def test_remove_by_regex(lone_master):
    s = hosting_store(lone_master)
    try:
        for k in ("layer-1", "layer-22", "layer-x", "other-1"):
            assert s.put(k, b"v") == OK
        assert s.remove_by_regex("^layer-[0-9]+$", force=True) == 2
        assert [s.is_exist(k) for k in ("layer-1", "layer-22", "layer-x", "other-1")] == \
            [0, 0, 1, 1]
        assert s.remove_by_regex("(", force=True) == INVALID_PARAMS
        assert s.remove_by_regex("a{1000}", force=True) == INVALID_PARAMS
        with shelfmark.Store(lone_master) as store:
            assert store.remove_matching("^other", force=True) == 1
            with pytest.raises(shelfmark.InvalidParams):
                store.remove_matching("\\1")
    finally:
        s.close()
