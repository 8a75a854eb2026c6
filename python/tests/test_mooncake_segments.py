"""mooncake.store's segment management (allocate_and_mount_segment,
unmount_and_free_segment, mount_segment, unmount_segment) against a real
master: segments added after setup (allocated, or a caller's file), placed
into with preferred_segment, read by another process, unmounted (the master
drops their objects), and the refusals."""

import mmap
import os
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from mooncake.store import MooncakeDistributedStore, ReplicateConfig

MiB = 1 << 20
PAGE = mmap.PAGESIZE
OK, INVALID_PARAMS = 0, -600

# Another process's view: reads each key and prints "ok" when every one
# holds the bytes value(key), else "bad" and those that did not, each with
# the native get's code. Generous timeouts: a loaded machine must not turn a
# slow first connection into a missing object.
READER = r"""
import sys
from mooncake.store import MooncakeDistributedStore
master, keys = sys.argv[1], sys.argv[2:]
s = MooncakeDistributedStore()
assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 4 << 20, "tcp", "", master,
               rpc_timeout_ms=60000, transfer_timeout_ms=60000) == 0
bad = ["%s:%d" % (k, s._store.get(k)[0]) for k in keys if s.get(k) != (k * 50).encode()]
print("ok" if not bad else "bad " + " ".join(bad))
s.close()
"""


def value(key):
    return (key * 50).encode()


def open_store(master_addr, segment=0):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", segment, 4 * MiB, "tcp", "", master_addr) == OK
    return s


def segment_ids(store, key):
    """The ids of the segments holding the key's MEMORY replicas, as the
    master answers a lookup (ReplicaInfo.segment_id of the native store)."""
    rc, replicas = store._store.get_replicas(key)
    assert rc == OK, rc
    return {r.segment_id for r in replicas if r.memory}


def put_into(store, keys, segment_id):
    config = ReplicateConfig()
    config.preferred_segment = segment_id
    for k in keys:
        assert store.put(k, value(k), config) == OK, k


def read_elsewhere(master_addr, keys):
    r = subprocess.run([sys.executable, "-c", READER, master_addr, *keys],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip()


@pytest.fixture
def lone_master(tmp_cluster):
    """A master with no node: the stores' own segments are all the DRAM."""
    _, addr = tmp_cluster.start_master("--default_kv_lease_ttl=500")
    return addr


def test_allocate_put_there_read_elsewhere_unmount(master_addr, prefix):
    # A store without a setup segment (global_segment_size 0) adds one.
    store = open_store(master_addr)
    try:
        r = store.allocate_and_mount_segment(16 * MiB)
        assert r["ret"] == OK and r["allocated_size"] == 16 * MiB, r
        assert len(r["segment_ids"]) == 1
        sid = r["segment_ids"][0]
        assert uuid.UUID(sid)  # Mooncake's ids are UUID strings too
        keys = [prefix + str(i) for i in range(8)]
        put_into(store, keys, sid)
        for k in keys:
            assert segment_ids(store, k) == {sid}, k
            assert store.get(k) == value(k)
        # Another process reaches the segment over the store's engine.
        assert read_elsewhere(master_addr, keys) == "ok"
        assert store.unmount_and_free_segment(r["segment_ids"]) == OK
        # The master dropped every replica in it: the objects are gone, for
        # this store and for others.
        for k in keys:
            assert store.is_exist(k) == 0, k
            assert store.get(k) == b""
        assert read_elsewhere(master_addr, keys[:1]) == "bad %s:-704" % keys[0]  # OBJECT_NOT_FOUND
        # Unmounting it again: no such segment any more.
        assert store.unmount_and_free_segment(r["segment_ids"]) == INVALID_PARAMS
    finally:
        store.close()


def test_sibling_segments_never_drop_each_other(lone_master, prefix):
    # Setup's segment and two added ones share the store's endpoint and
    # client id; each mount must leave the others (and their objects) alone.
    store = open_store(lone_master, segment=8 * MiB)
    try:
        first = store.allocate_and_mount_segment(8 * MiB)
        second = store.allocate_and_mount_segment(8 * MiB, "tcp", "cpu")
        assert first["ret"] == OK and second["ret"] == OK, (first, second)
        a, b = first["segment_ids"][0], second["segment_ids"][0]
        assert a != b
        in_a, in_b = [prefix + "a%d" % i for i in range(4)], [prefix + "b%d" % i for i in range(4)]
        put_into(store, in_a, a)
        put_into(store, in_b, b)
        assert all(segment_ids(store, k) == {a} for k in in_a)
        assert all(segment_ids(store, k) == {b} for k in in_b)
        # Objects of setup's segment: the master places them round-robin;
        # keep those that landed there.
        others = [prefix + "s%d" % i for i in range(9)]
        for k in others:
            assert store.put(k, value(k)) == OK
        in_setup = [k for k in others if segment_ids(store, k) - {a, b}]
        assert in_setup, "nothing landed on setup's segment"
        # Unmounting one drops its objects only.
        assert store.unmount_and_free_segment([a]) == OK
        assert [store.is_exist(k) for k in in_a] == [0] * len(in_a)
        for k in in_b + in_setup:
            assert store.get(k) == value(k), k
        assert read_elsewhere(lone_master, in_b + in_setup) == "ok"
        assert store.unmount_and_free_segment([b]) == OK
        assert [store.is_exist(k) for k in in_b] == [0] * len(in_b)
        assert all(store.get(k) == value(k) for k in in_setup)
    finally:
        store.close()


def test_close_unmounts_added_segments(lone_master, prefix):
    store, other = open_store(lone_master), open_store(lone_master)
    try:
        r = store.allocate_and_mount_segment(8 * MiB)
        assert r["ret"] == OK
        keys = [prefix + str(i) for i in range(3)]
        put_into(store, keys, r["segment_ids"][0])
        assert [other.is_exist(k) for k in keys] == [1] * 3
        assert store.close() == OK
        assert [other.is_exist(k) for k in keys] == [0] * 3
        # After close the calls answer -600, as every other call does.
        assert store.allocate_and_mount_segment(MiB)["ret"] == INVALID_PARAMS
        assert store.unmount_and_free_segment(r["segment_ids"]) == INVALID_PARAMS
    finally:
        store.close()
        other.close()


def wait_until(condition, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting: " + what
        time.sleep(0.05)


def two_segments_objects_in_one(store, prefix):
    """Two segments added to the store, a and b, and the keys of four
    objects put into a: (a, b, keys)."""
    a, b = (store.allocate_and_mount_segment(8 * MiB)["segment_ids"][0] for _ in range(2))
    in_a = [prefix + "a%d" % i for i in range(4)]
    put_into(store, in_a, a)
    return a, b, in_a


def test_graceful_unmount_drains_until_close(lone_master, prefix):
    # Mooncake's grace period: the call returns at once; the segment takes no
    # new objects (even those whose hint names it) but its own are still
    # read, here and by another client, until it is unmounted: at the grace
    # period's end or, as here, at close.
    store, other = open_store(lone_master), open_store(lone_master)
    try:
        a, b, in_a = two_segments_objects_in_one(store, prefix)
        assert all(segment_ids(store, k) == {a} for k in in_a)

        assert store.unmount_and_free_segment([a], grace_period_seconds=3600) == OK
        during = [prefix + "new%d" % i for i in range(4)]
        put_into(store, during, a)
        assert all(segment_ids(store, k) == {b} for k in during)
        for k in in_a:
            assert store.get(k) == value(k), k
            assert other.get(k) == value(k), k
        # No longer one of the store's segments: a second unmount is refused.
        assert store.unmount_and_free_segment([a]) == INVALID_PARAMS
        assert store.close() == OK  # unmounts it now, not in an hour
        assert [other.is_exist(k) for k in in_a + during] == [0] * 8
    finally:
        store.close()
        other.close()


def test_graceful_unmount_ends_after_the_grace_period(lone_master, prefix):
    store, other = open_store(lone_master), open_store(lone_master)
    try:
        a, b, in_a = two_segments_objects_in_one(store, prefix)
        assert store.unmount_and_free_segment([a], 2) == OK
        during = [prefix + "new%d" % i for i in range(4)]
        put_into(store, during, a)  # during the grace, or after: never in a
        assert all(segment_ids(store, k) == {b} for k in during)
        wait_until(lambda: [other.is_exist(k) for k in in_a] == [0] * len(in_a),
                   "the drained segment's objects to go")
        for k in during:
            assert other.get(k) == value(k), k
        assert store.unmount_and_free_segment([b]) == OK
    finally:
        store.close()
        other.close()


def test_graceful_unmount_of_a_file_segment(master_addr, prefix, shm_file):
    store, other = open_store(master_addr), open_store(master_addr)
    try:
        r = store.mount_segment(shm_file, 4 * MiB)
        assert r["ret"] == OK, r
        keys = [prefix + str(i) for i in range(3)]
        put_into(store, keys, r["segment_ids"][0])
        assert store.unmount_segment(r["segment_ids"], -1) == INVALID_PARAMS
        assert store.unmount_segment(r["segment_ids"], 1) == OK
        wait_until(lambda: [other.is_exist(k) for k in keys] == [0] * 3,
                   "the file segment's objects to go")
    finally:
        store.close()
        other.close()


def test_refusals(master_addr, prefix):
    before = MooncakeDistributedStore()
    assert before.allocate_and_mount_segment(MiB) == \
        {"ret": INVALID_PARAMS, "segment_ids": [], "allocated_size": 0}
    assert before.unmount_and_free_segment([str(uuid.uuid4())]) == INVALID_PARAMS
    store = open_store(master_addr)
    try:
        for size, protocol in ((0, "tcp"), (-1, "tcp"), (MiB, "carrier-pigeon")):
            assert store.allocate_and_mount_segment(size, protocol) == \
                {"ret": INVALID_PARAMS, "segment_ids": [], "allocated_size": 0}, (size, protocol)
        r = store.allocate_and_mount_segment(4 * MiB)
        assert r["ret"] == OK
        sid = r["segment_ids"][0]
        # Refused, and nothing unmounted: unknown ids, a non-id, the same id
        # twice, an empty list, a negative or non-numeric grace period, a
        # bare string.
        for ids, grace in (([str(uuid.uuid4())], 0), ([sid, str(uuid.uuid4())], 0),
                           (["not-a-segment"], 0), ([sid, sid], 0), ([], 0), ([sid], -1),
                           ([sid], "1"), ([sid], float("nan")), (sid, 0)):
            assert store.unmount_and_free_segment(ids, grace) == INVALID_PARAMS, (ids, grace)
        put_into(store, [prefix + "still"], sid)
        assert segment_ids(store, prefix + "still") == {sid}
        assert store.unmount_and_free_segment([sid], grace_period_seconds=0) == OK
        assert store.unmount_and_free_segment([sid]) == INVALID_PARAMS
    finally:
        store.close()


@pytest.fixture
def shm_file():
    """A file of the caller's (in /dev/shm where there is one), 8 MiB + a page."""
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    f = tempfile.NamedTemporaryFile(prefix="shelfmark-seg-", dir=directory)
    f.truncate(8 * MiB + PAGE)
    yield f.name
    f.close()


def test_mount_a_callers_file(master_addr, prefix, shm_file):
    store = open_store(master_addr)
    try:
        r = store.mount_segment(shm_file, 4 * MiB, offset=PAGE, protocol="tcp", location="")
        assert r["ret"] == OK and len(r["segment_ids"]) == 1, r
        sid = r["segment_ids"][0]
        keys = [prefix + "f%d" % i for i in range(4)]
        put_into(store, keys, sid)
        assert all(segment_ids(store, k) == {sid} for k in keys)
        # The bytes live in the caller's file, past the offset.
        with open(shm_file, "rb") as f:
            head, body = f.read(PAGE), f.read()
        assert head == bytes(PAGE)
        assert all(value(k) in body for k in keys)
        assert read_elsewhere(master_addr, keys) == "ok"
        # Each kind of segment is unmounted by its own call.
        assert store.unmount_and_free_segment([sid]) == INVALID_PARAMS
        assert store.unmount_segment([sid], -1) == INVALID_PARAMS  # a negative grace
        assert all(store.is_exist(k) == 1 for k in keys)
        assert store.unmount_segment([sid]) == OK
        assert [store.is_exist(k) for k in keys] == [0] * len(keys)
        assert store.unmount_segment([sid]) == INVALID_PARAMS
        with open(shm_file, "rb") as f:
            body = f.read()
        assert all(value(k) in body for k in keys), "the file stays the caller's"
    finally:
        store.close()


def test_mount_refusals(master_addr, shm_file, tmp_path):
    store = open_store(master_addr)
    try:
        refused = {"ret": INVALID_PARAMS, "segment_ids": []}
        for args in ((str(tmp_path / "missing"), MiB), (str(tmp_path), MiB),  # no file, a dir
                     (shm_file, 8 * MiB + 2 * PAGE),  # longer than the file
                     (shm_file, 4 * MiB, 8 * MiB),    # past its end from the offset
                     (shm_file, MiB, 100),            # offset not page-aligned
                     (shm_file, 0), (shm_file, MiB, 0, "carrier-pigeon")):
            assert store.mount_segment(*args) == refused, args
        r = store.allocate_and_mount_segment(MiB)
        assert r["ret"] == OK
        assert store.unmount_segment(r["segment_ids"]) == INVALID_PARAMS  # not a mounted file
        assert store.unmount_and_free_segment(r["segment_ids"]) == OK
    finally:
        store.close()
    assert store.mount_segment(shm_file, MiB) == {"ret": INVALID_PARAMS, "segment_ids": []}
