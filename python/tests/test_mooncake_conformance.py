"""mooncake.store behaves as Mooncake's own Python tests expect (issue 30).

Every behaviour Mooncake's test_distributed_object_store.py,
test_replicated_distributed_object_store.py and the store client e2e
script check, written here from what those behaviours are, against a
shelfmark-master started as Mooncake's CI starts its master
(--default_kv_lease_ttl=500, on 127.0.0.1; a free port instead of 50051 so
that runs never collide) with no node: the stores host their own segments,
as Mooncake's clients do. Where Mooncake's tests sleep out the read lease
before a remove, these wait for the remove to succeed, with a deadline.

Also the placement hints: an LMCache-style client (preferred_segment =
get_hostname()) keeps every chunk in its own segment while another process
hosts one too, and prefer_alloc_in_same_node keeps them on its host.
"""

import ctypes
import json
import os
import subprocess
import sys
import threading
import uuid

import pytest

from conftest import Cluster, wait_for
from mooncake.store import MooncakeDistributedStore, ReplicateConfig, SoftPinAction

MiB = 1 << 20
OK, INVALID_PARAMS, NO_AVAILABLE_HANDLE = 0, -600, -200
LEASE_TTL_MS = 500
DEADLINE_S = 20
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def ci_master(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("conformance")))
    try:
        _, addr = c.start_master("--default_kv_lease_ttl=%d" % LEASE_TTL_MS)
        yield addr
    finally:
        c.stop()


def open_store(master, hostname="localhost", segment=64 * MiB, local_buffer=32 * MiB):
    s = MooncakeDistributedStore()
    rc = s.setup(hostname, "http://127.0.0.1:8080/metadata", segment, local_buffer, "tcp", "",
                 master)
    assert rc == OK, rc
    return s


@pytest.fixture(scope="module")
def store(ci_master):
    s = open_store(ci_master)
    yield s
    s.close()


@pytest.fixture
def k():
    """A key maker of this test's own."""
    tag = uuid.uuid4().hex[:8]
    return lambda name: "conf-%s-%s" % (tag, name)


def removed_after_lease(store, key):
    """remove() answers 0 once the read lease is over (Mooncake's tests
    sleep the lease out first)."""
    wait_for(lambda: store.remove(key) == OK, DEADLINE_S, "remove of %s" % key)


def c_buffer(size, fill=0):
    buf = (ctypes.c_ubyte * size)()
    ctypes.memset(buf, fill, size)
    return buf, ctypes.addressof(buf)


# --- setup -------------------------------------------------------------------

def config_dict(master, segment, local_buffer):
    return {"local_hostname": "localhost", "metadata_server": "http://127.0.0.1:8080/metadata",
            "global_segment_size": segment, "local_buffer_size": local_buffer,
            "protocol": "tcp", "rdma_devices": "", "master_server_addr": master}


def test_setup_dict_takes_human_readable_sizes(ci_master, k):
    s = MooncakeDistributedStore()
    try:
        assert s.setup(config_dict(ci_master, "16MB", "16 MB")) == OK
        assert s.put(k("dict"), b"human readable") == OK
        assert s.get(k("dict")) == b"human readable"
    finally:
        s.close()


def test_setup_answers_a_code_for_a_percentage_size(ci_master):
    s = MooncakeDistributedStore()
    assert s.setup(config_dict(ci_master, "50%", "16MB")) == INVALID_PARAMS
    assert s.setup("localhost", "m", 16 * MiB, "50%", "tcp", "", ci_master) == INVALID_PARAMS
    assert s.close() == OK


def test_setup_takes_mooncakes_optional_keywords(ci_master, tmp_path, k):
    s = MooncakeDistributedStore()
    try:
        assert s.setup("localhost", "P2PHANDSHAKE", 16 * MiB, 16 * MiB, "tcp", "", ci_master,
                       enable_ssd_offload=True, ssd_offload_path=str(tmp_path),
                       enable_client_http_server=False, client_http_port=0) == OK
        assert s.put(k("kw"), b"v") == OK and s.get(k("kw")) == b"v"
    finally:
        s.close()


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_get(port, path):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
        return r.status, r.read().decode()


def test_client_http_server_serves_health_and_metrics(ci_master, k):
    import urllib.error
    port = free_port()
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 16 * MiB, 16 * MiB, "tcp", "", ci_master,
                   enable_client_http_server=True, client_http_port=port) == OK
    try:
        assert http_get(port, "/health") == (200, "ok\n")
        own = ReplicateConfig()
        own.preferred_segment = s.get_hostname()  # in its own segment: copied, not sent
        assert s.put(k("http"), b"x" * 1000, own) == OK and s.get(k("http")) == b"x" * 1000
        _, metrics = http_get(port, "/metrics")
        assert "shelfmark_store_segment_bytes %d" % (16 * MiB) in metrics
        copies = [line for line in metrics.splitlines()
                  if line.startswith("shelfmark_store_local_copy_bytes_total ")]
        assert copies and float(copies[0].split()[1]) >= 2000, metrics  # the put and the get
        _, summary = http_get(port, "/metrics/summary")
        assert summary.startswith("segment %s %d bytes\n" % (s.get_hostname(), 16 * MiB))
    finally:
        s.close()
    with pytest.raises(urllib.error.URLError):
        http_get(port, "/health")


def test_a_second_store_without_local_buffer_sets_up_and_refuses_staged_puts(store, ci_master,
                                                                          k):
    zero = open_store(ci_master, local_buffer=0)
    try:
        assert zero.put(k("zero"), b"no staging") == NO_AVAILABLE_HANDLE
        assert zero.is_exist(k("zero")) == 0
        assert store.is_exist(k("zero")) == 0
    finally:
        zero.close()


def test_get_hostname_is_host_and_a_port_in_mooncakes_range(store):
    host, port = store.get_hostname().split(":")
    assert host == "localhost" and 12300 <= int(port) <= 14300


def test_get_hostname_keeps_a_given_port_and_distinct_stores_get_distinct_names(ci_master):
    given = open_store(ci_master, hostname="127.0.0.1:50071", segment=8 * MiB)
    drawn = [open_store(ci_master, segment=8 * MiB) for _ in range(3)]
    try:
        assert given.get_hostname() == "127.0.0.1:50071"
        names = {s.get_hostname() for s in drawn}
        assert len(names) == 3, names
    finally:
        for s in [given] + drawn:
            s.close()


def test_close_then_setup_again_drops_the_objects_of_the_closed_segment(ci_master, k):
    s = open_store(ci_master)
    here = ReplicateConfig()
    here.preferred_segment = s.get_hostname()  # the module's store has a segment too
    assert s.put(k("gone"), b"Hello, World!", here) == OK
    assert s.close() == OK
    assert s.setup("localhost", "P2PHANDSHAKE", 64 * MiB, 32 * MiB, "tcp", "", ci_master) == OK
    try:
        assert s.get(k("gone")) == b""
        assert s.put(k("gone"), b"Hello, World!") == OK
        assert s.get(k("gone")) == b"Hello, World!"
    finally:
        s.close()


# --- objects ---------------------------------------------------------------

def test_put_get_size_put_again_and_remove(store, k):
    key = k("basic")
    assert store.put(key, b"Hello, World!") == OK
    assert store.get_size(key) == 13
    assert store.get(key) == b"Hello, World!"
    assert store.put(key, b"Other bytes!!") == OK, "a key that exists: success, as Mooncake"
    assert store.get(key) == b"Hello, World!", "and the object stays as it was"
    removed_after_lease(store, key)
    assert store.is_exist(key) == 0


def test_batch_is_exist(store, k):
    keys = [k("exist-%d" % i) for i in range(20)]
    for key in keys[:10]:
        assert store.put(key, b"Hello, Batch World!") == OK
    assert store.batch_is_exist(keys) == [1] * 10 + [0] * 10
    assert store.batch_is_exist([]) == []
    assert store.batch_is_exist(keys[:1]) == [1]
    assert store.batch_is_exist([k("never")]) == [0]
    for key in keys[:10]:
        removed_after_lease(store, key)


def test_put_from_get_into_and_a_buffer_too_small(store, k):
    data = b"Hello, Zero-Copy World! " * 1000
    buf, ptr = c_buffer(len(data) + 1024)
    small, small_ptr = c_buffer(len(data) // 2)
    key = k("zc")
    assert store.register_buffer(ptr, len(data) + 1024) == OK
    assert store.register_buffer(small_ptr, len(data) // 2) == OK
    ctypes.memmove(buf, data, len(data))
    assert store.put_from(key, ptr, len(data)) == OK
    assert store.get(key) == data
    ctypes.memset(buf, 0, len(data) + 1024)
    assert store.get_into(key, ptr, len(data) + 1024) == len(data)
    assert bytes(buf[:len(data)]) == data
    assert store.get_into(key, small_ptr, len(data) // 2) < 0
    assert store.unregister_buffer(small_ptr) == OK
    release(store, ptr, [key])


def test_get_into_ranges(store, k):
    key1, key2 = k("r1"), k("r2")
    data1 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    data2 = b"abcdefghijklmnopqrstuvwxyz0123456789"
    assert store.put(key1, data1) == OK and store.put(key2, data2) == OK
    b0, p0 = c_buffer(32, ord("_"))
    b1, p1 = c_buffer(32, ord("_"))
    assert store.register_buffer(p0, 32) == OK and store.register_buffer(p1, 32) == OK
    # Buffer-major: buffer i, key j of buffer i, fragment k of that key.
    got = store.get_into_ranges([p0, p1], [[key1, key2], [key2, key1]],
                                [[[0, 20], [8]], [[4], [16]]],   # destination offsets
                                [[[1, 30], [2]], [[0], [10]]],   # source offsets
                                [[[4, 3], [5]], [[6], [4]]])     # sizes
    assert got == [[[4, 3], [5]], [[6], [4]]]
    assert bytes(b0[0:4]) == data1[1:5] and bytes(b0[20:23]) == data1[30:33]
    assert bytes(b0[8:13]) == data2[2:7]
    assert bytes(b1[4:10]) == data2[0:6] and bytes(b1[16:20]) == data1[10:14]
    assert bytes(b0[4:8]) == b"____", "bytes no fragment names are left alone"
    # A key whose lists disagree fails; a key with no fragments answers none.
    mismatch = store.get_into_ranges([p0], [[key1, key2]], [[[0], []]], [[[0, 1], []]],
                                     [[[4, 4], []]])
    assert len(mismatch) == 1 and len(mismatch[0]) == 2
    assert mismatch[0][0][0] < 0 and mismatch[0][1] == []
    # Past the object's end, past the buffer's end, a missing key beside a present one.
    assert store.get_into_ranges([p0], [[key1]], [[[0]]], [[[len(data1) - 1]]],
                                 [[[4]]])[0][0][0] < 0
    assert store.get_into_ranges([p0], [[key1]], [[[31]]], [[[0]]], [[[4]]])[0][0][0] < 0
    missing = store.get_into_ranges([p0], [[k("missing"), key1]], [[[0], [8]]],
                                    [[[0], [0]]], [[[4], [4]]])
    assert missing[0][0][0] < 0 and missing[0][1] == [4]
    assert store.unregister_buffer(p0) == OK and store.unregister_buffer(p1) == OK
    removed_after_lease(store, key1)
    removed_after_lease(store, key2)


def spaced(buffer_ptr, n, spacing=MiB):
    return [buffer_ptr + i * spacing for i in range(n)]


def filled_buffer(values):
    """A buffer of 1 MiB per value, each value at the start of its MiB (the
    caller keeps the returned buffer object alive while it uses the memory)."""
    buf, ptr = c_buffer(len(values) * MiB)
    ptrs = spaced(ptr, len(values))
    for p, value in zip(ptrs, values):
        ctypes.memmove(ctypes.c_void_p(p), value, len(value))
    return buf, ptr, ptrs


def check_list_refusals(call, keys, ptrs, sizes):
    """A batch call with more buffers than keys fails every key; an empty
    one answers nothing."""
    mismatched = call(keys[:2], ptrs, sizes)
    assert len(mismatched) == 2 and all(c < 0 for c in mismatched)
    assert call([], [], []) == []


def release(store, ptr, keys):
    assert store.unregister_buffer(ptr) == OK
    for key in keys:
        removed_after_lease(store, key)


def test_batch_get_into(store, k):
    values = [b"Hello, Batch World %d! " % (i + 1) * n for i, n in enumerate((100, 200, 150))]
    keys = [k("bgi-%d" % i) for i in range(3)]
    for key, value in zip(keys, values):
        assert store.put(key, value) == OK
    buf, ptr = c_buffer(3 * MiB)
    assert store.register_buffer(ptr, 3 * MiB) == OK
    ptrs = spaced(ptr, 3)
    got = store.batch_get_into(keys, ptrs, [MiB] * 3)
    assert got == [len(v) for v in values]
    for i, value in enumerate(values):
        assert bytes(buf[i * MiB:i * MiB + len(value)]) == value
    check_list_refusals(store.batch_get_into, keys, ptrs, [MiB] * 3)
    release(store, ptr, keys)


def test_batch_put_from(store, k):
    values = [b"Batch Put Data %d! " % (i + 1) * n for i, n in enumerate((100, 200, 150))]
    keys = [k("bpf-%d" % i) for i in range(3)]
    buf, ptr, ptrs = filled_buffer(values)
    assert store.register_buffer(ptr, 3 * MiB) == OK
    assert store.batch_put_from(keys, ptrs, [len(v) for v in values]) == [OK] * 3
    assert [store.get(key) for key in keys] == values
    check_list_refusals(store.batch_put_from, keys, ptrs, [len(v) for v in values])
    release(store, ptr, keys)


def test_batch_get_buffer(store, k):
    values = [b"Batch Buffer Data 1! " * 100, b"Batch Buffer Data 2! " * 200]
    keys = [k("bgb-1"), k("bgb-2")]
    for key, value in zip(keys, values):
        assert store.put(key, value) == OK
    handles = store.batch_get_buffer(keys)
    assert [h.size() for h in handles] == [len(v) for v in values]
    assert [bytes(h) for h in handles] == values
    mixed = store.batch_get_buffer([keys[0], k("none")])
    assert bytes(mixed[0]) == values[0] and mixed[1] is None
    assert store.batch_get_buffer([]) == []
    assert bytes(store.batch_get_buffer(keys[:1])[0]) == values[0]
    assert store.batch_get_buffer([k("never")]) == [None]
    del handles, mixed
    for key in keys:
        removed_after_lease(store, key)


def test_threads_put_get_and_remove_concurrently(store, k):
    threads_n, per_thread, size = 8, 24, 128 * 1024  # 24 MiB: no eviction in 64 MiB
    start, puts_done, gets_done = (threading.Barrier(threads_n + 1) for _ in range(3))
    failures = []

    def worker(t):
        try:
            value = os.urandom(size)
            keys = [k("stress-%d-%d" % (t, i)) for i in range(per_thread)]
            start.wait()
            for key in keys:
                assert store.put(key, value) == OK, key
            puts_done.wait()
            for key in keys:
                assert store.get(key) == value, key
            gets_done.wait()
            for key in keys:
                removed_after_lease(store, key)
        except Exception as e:  # reported below, with the thread
            failures.append("thread %d: %r" % (t, e))
            for barrier in (start, puts_done, gets_done):
                barrier.abort()

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for w in workers:
        w.start()
    try:
        for barrier in (start, puts_done, gets_done):
            barrier.wait()
    except threading.BrokenBarrierError:
        pass
    for w in workers:
        w.join()
    assert failures == []


def test_replicate_config_defaults_and_fields():
    c = ReplicateConfig()
    assert (c.replica_num, c.with_soft_pin, c.with_hard_pin) == (1, False, False)
    assert (c.preferred_segment, c.preferred_segments) == ("", [])
    assert c.soft_pin_ttl_ms is None and c.group_ids is None
    assert c.soft_pin_action == SoftPinAction.PRESERVE and not c.prefer_alloc_in_same_node
    c.replica_num, c.with_soft_pin, c.preferred_segment = 3, True, "node1:12345"
    assert (c.replica_num, c.with_soft_pin, c.preferred_segment) == (3, True, "node1:12345")
    assert isinstance(str(c), str) and "3" in str(c)


def test_upsert_with_a_ttl_and_no_soft_pin_is_refused(store, k):
    ttl_only = ReplicateConfig()
    ttl_only.soft_pin_ttl_ms = 60_000
    assert store.upsert(k("u"), b"v", ttl_only) == INVALID_PARAMS
    assert store.batch_upsert_from([k("u")], [0], [1], ttl_only) == [INVALID_PARAMS]
    assert store.is_exist(k("u")) == 0
    pinned = ReplicateConfig()
    pinned.soft_pin_ttl_ms = 60_000
    pinned.soft_pin_action = SoftPinAction.ENABLE
    assert store.upsert(k("u"), b"v", pinned) == OK and store.get(k("u")) == b"v"


def test_group_ids_one_per_key(store, k):
    one = ReplicateConfig()
    one.group_ids = ["session-a"]
    assert store.put(k("g1"), b"a", one) == OK and store.get(k("g1")) == b"a"
    two = ReplicateConfig()
    two.group_ids = ["session-a", "session-b"]
    assert store.put(k("g2"), b"b", two) == INVALID_PARAMS, "a single put takes one group id"
    three = ReplicateConfig()
    three.group_ids = ["session-a", "", "session-b"]
    keys = [k("g3-%d" % i) for i in range(3)]
    values = [b"x", b"yy", b"zzz"]
    assert store.put_batch(keys, values, three) == OK
    assert store.get_batch(keys) == values
    assert store.put_batch(keys[:2], values[:2], three) == INVALID_PARAMS
    assert store.is_exist(k("g2")) == 0


# --- two stores (Mooncake's replicated file) ---------------------------------

@pytest.fixture(scope="module")
def pair(ci_master):
    # Given ports, as Mooncake's test gives them; outside 12300-14300, so no
    # drawn name of another store here can equal them.
    base = 14400 + os.getpid() % 500 * 2
    stores = [open_store(ci_master, hostname="localhost:%d" % (base + i), segment=32 * MiB)
              for i in range(2)]
    yield stores
    for s in stores:
        s.close()


def test_keyword_arguments_and_replica_num_two(pair, k):
    main = pair[0]
    two = ReplicateConfig()
    two.replica_num = 2
    assert main.put(key=k("kw1"), value=b"Hello, Config World!") == OK
    assert main.put(key=k("kw2"), value=b"Hello, Config World!", config=two) == OK
    assert main.get(k("kw2")) == b"Hello, Config World!"
    assert len(main.get_replica_desc(k("kw2"))) == 2
    for bad in ({"key_arg_name_error": k("x"), "value": b"v", "config": two},
                {"key": k("x"), "value_arg_name_error": b"v", "config": two},
                {"key": k("x"), "value": b"v", "config_arg_name_error": two}):
        with pytest.raises(TypeError):
            main.put(**bad)
    keys = [k("kwb-%d" % i) for i in range(3)]
    values = [b"Batch Data %d" % i for i in range(3)]
    assert main.put_batch(keys=keys, values=values, config=two) == OK
    assert main.get_batch(keys) == values
    buf, ptr, ptrs = filled_buffer(values)
    assert main.register_buffer(ptr, 3 * MiB) == OK
    two.with_soft_pin, two.with_hard_pin = False, False
    assert main.put_from(key=k("kwf"), buffer_ptr=ptr, size=len(values[0]), config=two) == OK
    assert main.get(k("kwf")) == values[0]
    keys2 = [k("kwbf-%d" % i) for i in range(3)]
    assert main.batch_put_from(keys=keys2, buffer_ptrs=ptrs, sizes=[len(v) for v in values],
                               config=two) == [OK] * 3
    assert main.get_batch(keys2) == values
    assert main.unregister_buffer(ptr) == OK


def test_two_replicas_outlive_the_writer_closing(ci_master, pair, k):
    writer = open_store(ci_master, segment=32 * MiB)
    two = ReplicateConfig()
    two.replica_num = 2
    two.preferred_segment = writer.get_hostname()  # one replica goes with the writer
    key = k("tolerant")
    assert writer.put(key, b"Replicated failure tolerance", two) == OK
    assert len(pair[0].get_replica_desc(key)) == 2
    assert writer.close() == OK
    assert len(pair[0].get_replica_desc(key)) == 1, "the writer's replica left with it"
    assert pair[0].get(key) == b"Replicated failure tolerance"
    assert writer.setup("localhost", "P2PHANDSHAKE", 32 * MiB, 32 * MiB, "tcp", "",
                        ci_master) == OK
    try:
        assert writer.get(key) == b"Replicated failure tolerance"
    finally:
        writer.close()


# --- the e2e client script ----------------------------------------------------

def test_e2e_workload_with_host_port_and_nof_replica_num(ci_master, k):
    s = open_store(ci_master, hostname="127.0.0.1:50071", segment=64 * MiB)
    try:
        config = ReplicateConfig()
        config.replica_num = 1
        config.nof_replica_num = 1  # Mooncake's NoF tier: set by the script, no such tier here
        for seq in range(1, 21):
            payload = (b"value%d" % seq * 1000)[:4096]
            assert s.put(k("e2e-%d" % seq), payload, config) == OK
            assert s.get(k("e2e-%d" % seq)) == payload
    finally:
        s.close()


def test_the_store_module_imports_as_a_top_level_module():
    """Mooncake's e2e script runs `import store` with the module's folder on
    the path."""
    import mooncake
    folder = os.path.dirname(mooncake.__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c",
                          "import store; s = store.MooncakeDistributedStore(); "
                          "c = store.ReplicateConfig(); c.nof_replica_num = 1; "
                          "print(s.get_hostname() == '', c.replica_num)"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "1"]


# --- placement hints ------------------------------------------------------------

class Peer:
    """Another process hosting a segment (hosting_peer_script.py)."""

    def __init__(self, master, hostname):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "hosting_peer_script.py"), master, hostname],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, "the peer exited before it was ready"
        self.info = json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            closed = json.loads(self.proc.stdout.readline())
            assert self.proc.wait(timeout=DEADLINE_S) == 0 and closed == {"closed": 0}


def chunk_endpoints(store, keys):
    return {key: store.get_replica_desc(key)[0].get_memory_descriptor().buffer_descriptor
            .transport_endpoint for key in keys}


def test_preferred_segment_get_hostname_keeps_every_chunk_in_the_own_segment(ci_master, k):
    """LMCache's Mooncake backend sets preferred_segment = get_hostname():
    its chunks stay in its own segment, so another process closing takes
    none of them along."""
    engine = open_store(ci_master, hostname="127.0.0.1", segment=32 * MiB)
    peer = Peer(ci_master, "127.0.0.1")
    try:
        chunk = os.urandom(64 * 1024)
        plain = [k("plain-%d" % i) for i in range(8)]
        for key in plain:
            assert engine.put(key, chunk) == OK
        spread = set(chunk_endpoints(engine, plain).values())
        assert peer.info["endpoint"] in spread, "without the hint chunks reach the peer too"
        config = ReplicateConfig()
        config.preferred_segment = engine.get_hostname()
        keys = [k("lmc-%d" % i) for i in range(16)]
        for key in keys[:8]:
            assert engine.put(key, chunk, config) == OK
        buf, ptr = c_buffer(8 * len(chunk))
        ctypes.memmove(buf, chunk * 8, 8 * len(chunk))
        assert engine.register_buffer(ptr, 8 * len(chunk)) == OK
        assert engine.batch_put_from(keys[8:], [ptr + i * len(chunk) for i in range(8)],
                                     [len(chunk)] * 8, config) == [OK] * 8
        where = set(chunk_endpoints(engine, keys).values())
        assert len(where) == 1 and peer.info["endpoint"] not in where, where
        peer.close()
        assert [engine.get(key) == chunk for key in keys] == [True] * 16
        assert any(engine.is_exist(key) == 0 for key in plain), \
            "the peer's closing took its chunks along"
        assert engine.unregister_buffer(ptr) == OK
    finally:
        peer.close()
        engine.close()


# Reads KEYS from another process with same-host copies off (UCX: the
# segment's owner copies the bytes out of its own memory) and prints, per
# key, whether it holds the bytes of the file named by the key's index.
SAME_HOST_OFF_READER = r"""
import os, sys
from mooncake.store import MooncakeDistributedStore
master, expected, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
s = MooncakeDistributedStore()
assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 4 << 20, "tcp", "", master) == 0
data = open(expected, "rb").read()
n = len(data) // len(keys)
print(" ".join("ok" if s.get(k) == data[i * n:(i + 1) * n] else "bad" for i, k in enumerate(keys)))
s.close()
"""


def test_segment_less_puts_into_a_same_host_peer_read_back_byte_exact(ci_master, k, tmp_path):
    """A client without a segment puts (put and batch_put_from) into another
    process's segment on this host: the bytes are copied into the peer's
    segment mapped here (docs/transport.md), and read back exact, by the
    writer and by a process that reads over UCX (the peer serves its own
    memory)."""
    peer = Peer(ci_master, "127.0.0.1")
    writer = open_store(ci_master, hostname="127.0.0.1", segment=0)
    try:
        config = ReplicateConfig()
        config.preferred_segment = peer.info["hostname"]
        chunk = 64 * 1024
        keys = [k("same-host-%d" % i) for i in range(16)]
        data = os.urandom(16 * chunk)
        for i, key in enumerate(keys[:8]):
            assert writer.put(key, data[i * chunk:(i + 1) * chunk], config) == OK
        buf, ptr = c_buffer(8 * chunk)
        ctypes.memmove(buf, data[8 * chunk:], 8 * chunk)
        assert writer.register_buffer(ptr, 8 * chunk) == OK
        assert writer.batch_put_from(keys[8:], [ptr + i * chunk for i in range(8)],
                                     [chunk] * 8, config) == [OK] * 8
        assert set(chunk_endpoints(writer, keys).values()) == {peer.info["endpoint"]}
        assert [writer.get(key) == data[i * chunk:(i + 1) * chunk]
                for i, key in enumerate(keys)] == [True] * 16
        expected = tmp_path / "expected"
        expected.write_bytes(data)
        r = subprocess.run([sys.executable, "-c", SAME_HOST_OFF_READER, ci_master,
                            str(expected), *keys], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, SHELFMARK_UCX_SAME_HOST="0"))
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.split() == ["ok"] * 16, r.stdout
        assert writer.unregister_buffer(ptr) == OK
    finally:
        writer.close()
        peer.close()


def test_prefer_alloc_in_same_node_keeps_chunks_on_the_writers_host(ci_master, k):
    """The peer stands for another host (127.0.0.2: its segment's endpoint
    is there); the writer's chunks stay on 127.0.0.1."""
    engine = open_store(ci_master, hostname="127.0.0.1", segment=32 * MiB)
    peer = Peer(ci_master, "127.0.0.2")
    try:
        assert peer.info["endpoint"].startswith("127.0.0.2:")
        plain = [k("any-%d" % i) for i in range(8)]
        for key in plain:
            assert engine.put(key, b"c" * 4096) == OK
        assert peer.info["endpoint"] in set(chunk_endpoints(engine, plain).values())
        config = ReplicateConfig()
        config.prefer_alloc_in_same_node = True
        keys = [k("near-%d" % i) for i in range(8)]
        for key in keys:
            assert engine.put(key, b"n" * 4096, config) == OK
        where = set(chunk_endpoints(engine, keys).values())
        assert all(e.startswith("127.0.0.1:") for e in where), where
    finally:
        peer.close()
        engine.close()
