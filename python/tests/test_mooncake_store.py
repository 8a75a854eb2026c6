"""mooncake.store against a real master and node: Mooncake's signatures,
return codes and edge cases."""

import ctypes
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import _shelfmark

from conftest import dead_master_addr
from mooncake.store import (BufferHandle, MooncakeDistributedStore, ReplicaStatus,
                            ReplicateConfig, SoftPinAction)

MiB = 1 << 20
OK, BUFFER_OVERFLOW, NO_AVAILABLE_HANDLE, INVALID_PARAMS = 0, -10, -200, -600
OBJECT_NOT_FOUND, OBJECT_HAS_LEASE, RPC_FAIL = -704, -706, -900


def open_store(master_addr, local_buffer_size=16 * MiB, **kwargs):
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", 0, local_buffer_size, "tcp", "", master_addr,
                 **kwargs)
    assert rc == OK
    return s


@pytest.fixture
def store(master_addr):
    s = open_store(master_addr)
    yield s
    s.close()


class Registered:
    """numpy buffers registered with a store for a with-block."""

    def __init__(self, store, *arrays):
        self.store, self.arrays = store, arrays

    def __enter__(self):
        for a in self.arrays:
            assert self.store.register_buffer(a.ctypes.data, a.nbytes) == OK
        return self.arrays

    def __exit__(self, *exc):
        for a in self.arrays:
            assert self.store.unregister_buffer(a.ctypes.data) == OK


def pattern(n, seed):
    return (np.arange(n, dtype=np.uint64) * 2654435761 + seed).astype(np.uint8)


def test_put_get_exist_size_remove(store, prefix):
    k = prefix + "a"
    assert store.is_exist(k) == 0
    assert store.get(k) == b""
    assert store.get_size(k) == OBJECT_NOT_FOUND
    assert store.remove(k) == OBJECT_NOT_FOUND
    assert store.put(k, b"hello mooncake") == OK
    # A key that exists: 0, and the object stays as it was (Mooncake's client).
    assert store.put(k, b"again") == OK
    assert store.is_exist(k) == 1
    assert store.get_size(k) == 14
    assert store.get(k) == b"hello mooncake"
    # The read holds a lease (5 s on the test master): a plain remove waits for it.
    assert store.remove(k) == OBJECT_HAS_LEASE
    assert store.remove(k, force=True) == OK
    assert store.is_exist(k) == 0


def test_put_accepts_buffers_and_config(store, prefix):
    arr = pattern(1000, 3)
    cfg = ReplicateConfig()
    cfg.replica_num = 1
    cfg.with_soft_pin = True
    assert store.put(prefix + "np", arr, cfg) == OK
    assert store.put(prefix + "mv", memoryview(bytearray(b"xyz")), config=cfg) == OK
    hard = ReplicateConfig()
    hard.with_hard_pin = True
    hard.soft_pin_action = SoftPinAction.DISABLE
    assert store.put(prefix + "hard", b"pinned", hard) == OK
    assert store.get(prefix + "np") == arr.tobytes()
    assert store.get(prefix + "mv") == b"xyz"
    assert store.get(prefix + "hard") == b"pinned"
    too_many = ReplicateConfig()
    too_many.replica_num = 5  # one node: no placement
    assert store.put(prefix + "r5", b"x", too_many) < 0


def test_put_parts_batch_get_batch(store, prefix):
    assert store.put_parts(prefix + "parts", b"Hello, ", bytearray(b"World"), memoryview(b"!")) == OK
    assert store.get(prefix + "parts") == b"Hello, World!"
    keys = [prefix + "b%d" % i for i in range(5)]
    values = [bytes([i]) * (i * 1000 + 1) for i in range(5)]
    assert store.put_batch(keys, values) == OK
    assert store.put_batch(keys[:1], [b"other"]) == OK  # exists: kept as it was
    assert store.put_batch(keys, values[:2]) == INVALID_PARAMS
    assert store.get_batch(keys + [prefix + "missing"]) == values + [b""]
    assert store.batch_is_exist(keys[:2] + [prefix + "missing"]) == [1, 1, 0]


def test_get_buffer(store, prefix):
    data = pattern(100_000, 7)
    assert store.put(prefix + "buf", data) == OK
    h = store.get_buffer(prefix + "buf")
    assert isinstance(h, BufferHandle)
    assert h.size() == len(h) == data.nbytes and h.ptr() != 0
    view = np.frombuffer(h, dtype=np.uint8)  # no copy
    assert np.array_equal(view, data)
    assert store.get_buffer(prefix + "missing") is None
    hs = store.batch_get_buffer([prefix + "buf", prefix + "missing"])
    assert bytes(hs[0]) == data.tobytes() and hs[1] is None


def test_zero_copy_numpy(store, prefix):
    src = pattern(3 * MiB, 11)
    dst = np.zeros(4 * MiB, dtype=np.uint8)
    small = np.zeros(1024, dtype=np.uint8)
    with Registered(store, src, dst, small):
        assert store.put_from(prefix + "z", src.ctypes.data, src.nbytes) == OK
        assert store.get_into(prefix + "z", dst.ctypes.data, dst.nbytes) == src.nbytes
        assert np.array_equal(dst[:src.nbytes], src)
        assert store.get_into(prefix + "z", small.ctypes.data, small.nbytes) == BUFFER_OVERFLOW
        assert store.get_into(prefix + "none", dst.ctypes.data, dst.nbytes) == OBJECT_NOT_FOUND
        # A range that leaves the registered buffer is refused, never touched.
        assert store.get_into(prefix + "z", dst.ctypes.data + 1, dst.nbytes) == INVALID_PARAMS


def test_unregistered_pointers_answer_codes(store, prefix):
    assert store.put(prefix + "u", b"abc") == OK
    arr = np.zeros(4096, dtype=np.uint8)
    assert store.get_into(prefix + "u", arr.ctypes.data, arr.nbytes) == INVALID_PARAMS
    assert store.put_from(prefix + "u2", arr.ctypes.data, arr.nbytes) == INVALID_PARAMS
    assert store.get_into(prefix + "u", 8, 4096) == INVALID_PARAMS  # a wild pointer
    assert store.batch_get_into([prefix + "u"], [16], [64]) == [INVALID_PARAMS]
    assert store.batch_put_from([prefix + "u3"], [16], [64]) == [INVALID_PARAMS]
    assert store.unregister_buffer(arr.ctypes.data) == INVALID_PARAMS
    assert store.register_buffer(0, 10) == INVALID_PARAMS
    with Registered(store, arr):
        assert store.register_buffer(arr.ctypes.data + 8, 8) == INVALID_PARAMS  # overlaps


def test_batch_put_from_get_into(store, prefix):
    n, size = 6, 64 * 1024
    src = pattern(n * size, 5)
    dst = np.zeros(n * size, dtype=np.uint8)
    keys = [prefix + "bf%d" % i for i in range(n)]
    ptrs_src = [src.ctypes.data + i * size for i in range(n)]
    ptrs_dst = [dst.ctypes.data + i * size for i in range(n)]
    with Registered(store, src, dst):
        assert store.batch_put_from(keys, ptrs_src, [size] * n) == [OK] * n
        assert store.batch_put_from(keys[:1], ptrs_src[1:2], [size]) == [OK]  # exists: kept
        got = store.batch_get_into(keys + [prefix + "none"], ptrs_dst + [dst.ctypes.data],
                                   [size] * (n + 1))
        assert got == [size] * n + [OBJECT_NOT_FOUND]
        assert np.array_equal(src, dst)
    assert store.batch_remove(keys + [prefix + "none"], force=True) == [OK] * n + [OBJECT_NOT_FOUND]


def test_native_timing_loops(store, prefix):
    """The benchmarks' C++ loops (python/bench): one figure (ns) per call,
    none when a call fails; time_put_from leaves no object behind."""
    size, native = 4096, store._store
    src, dst = pattern(size, 9), np.zeros(size, dtype=np.uint8)
    key, missing = prefix + "timed", prefix + "timed-none"
    with Registered(store, src, dst):
        put = native.time_put_from(key, src.ctypes.data, size, _shelfmark.PutConfig(), 3)
        assert len(put) == 3 and all(ns > 0 for ns in put)
        assert store.is_exist(key) == 0
        assert store.put_from(key, src.ctypes.data, size) == OK
        assert len(native.time_get_into(key, dst.ctypes.data, size, 4)) == 4
        assert np.array_equal(src, dst)
        assert len(native.time_is_exist(key, 5)) == 5
        assert len(native.time_batch_get_into([key], [dst.ctypes.data], [size], 2)) == 2
        assert native.time_get_into(missing, dst.ctypes.data, size, 2) == []
        assert native.time_batch_get_into([missing], [dst.ctypes.data], [size], 2) == []
    assert store.remove(key, True) == OK


def test_multi_buffers(store, prefix):
    layers, block = 4, 8192
    src = pattern(2 * layers * block, 9).reshape(2, layers, block)
    dst = np.zeros_like(src)
    keys = [prefix + "mb0", prefix + "mb1"]
    src_ptrs = [[src[b, l].ctypes.data for l in range(layers)] for b in range(2)]
    dst_ptrs = [[dst[b, l].ctypes.data for l in range(layers)] for b in range(2)]
    sizes = [[block] * layers for _ in range(2)]
    with Registered(store, src, dst):
        assert store.batch_put_from_multi_buffers(keys, src_ptrs, sizes) == [OK, OK]
        assert store.get_size(keys[0]) == layers * block
        assert store.batch_get_into_multi_buffers(keys, dst_ptrs, sizes) == [layers * block] * 2
        assert np.array_equal(src, dst)
        short = [[block] * (layers - 1) for _ in range(2)]
        assert store.batch_get_into_multi_buffers(
            keys, [p[:-1] for p in dst_ptrs], short) == [BUFFER_OVERFLOW] * 2
        # The same call with Mooncake's fourth argument.
        assert store.batch_get_into_multi_buffers(keys, dst_ptrs, sizes, True) == [layers * block] * 2


def test_get_into_ranges(store, prefix):
    k1, k2 = prefix + "key1", prefix + "key2"
    v1 = bytes(range(40))
    v2 = bytes(range(100, 140))
    assert store.put(k1, v1) == OK and store.put(k2, v2) == OK
    # Two registrations side by side, so a fragment past the first buffer's
    # end lands in registered memory: it must still be refused.
    both = (ctypes.c_ubyte * 64)()
    p0 = ctypes.addressof(both)
    p1 = p0 + 32
    assert store.register_buffer(p0, 32) == OK and store.register_buffer(p1, 32) == OK
    try:
        results = store.get_into_ranges(
            [p0, p1], [[k1, k2], [k2, k1]],
            [[[0, 20], [8]], [[4], [16]]],
            [[[1, 30], [2]], [[0], [10]]],
            [[[4, 3], [5]], [[6], [4]]])
        assert results == [[[4, 3], [5]], [[6], [4]]]
        b0, b1 = bytes(both)[:32], bytes(both)[32:]
        assert b0[0:4] == v1[1:5] and b0[20:23] == v1[30:33]
        assert b0[8:13] == v2[2:7]
        assert b1[4:10] == v2[0:6] and b1[16:20] == v1[10:14]
        bad = store.get_into_ranges([p0], [[prefix + "none", k1]], [[[0], [0, 28]]],
                                    [[[0], [0, 38]]], [[[4], [4, 4]]])
        # a missing key; a fragment past the object's end; then one past the buffer's end
        assert bad == [[[OBJECT_NOT_FOUND], [4, BUFFER_OVERFLOW]]]
        before = bytes(both)[32:]
        assert store.get_into_ranges([p0], [[k1]], [[[40]]], [[[0]]], [[[4]]]) == [[[INVALID_PARAMS]]]
        assert bytes(both)[32:] == before
    finally:
        store.unregister_buffer(p0)
        store.unregister_buffer(p1)


def test_torch_tensors_zero_copy(store, prefix):
    torch = pytest.importorskip("torch")
    src = torch.arange(0, 64 * 1024, dtype=torch.float32).reshape(64, 1024)
    dst = torch.zeros_like(src)
    nbytes = src.numel() * src.element_size()
    for t in (src, dst):
        assert store.register_buffer(t.data_ptr(), nbytes) == OK
    try:
        half = nbytes // 2
        keys = [prefix + "t0", prefix + "t1"]
        assert store.batch_put_from(keys, [src.data_ptr(), src.data_ptr() + half],
                                    [half, half]) == [OK, OK]
        assert store.batch_get_into(keys, [dst.data_ptr(), dst.data_ptr() + half],
                                    [half, half]) == [half, half]
        assert torch.equal(src, dst)
        assert store.put(prefix + "whole", src) == OK  # a CPU tensor as the value
        assert store.get(prefix + "whole") == src.numpy().tobytes()
    finally:
        for t in (src, dst):
            store.unregister_buffer(t.data_ptr())


def test_replica_desc_hostname_health(store, prefix):
    assert store.put(prefix + "r", b"x" * 100) == OK
    descs = store.get_replica_desc(prefix + "r")
    assert len(descs) == 1 and descs[0].is_memory_replica()
    assert descs[0].status == ReplicaStatus.COMPLETE
    assert descs[0].get_memory_descriptor().buffer_descriptor.size == 100
    assert store.batch_get_replica_desc([prefix + "r", prefix + "none"])[prefix + "none"] == []
    # The segment's name: local_hostname with the port drawn for it.
    host, port = store.get_hostname().split(":")
    assert host == "localhost" and 12300 <= int(port) <= 14300
    assert store.health_check() == OK


def test_remove_all_of_a_tenant(master_addr, prefix):
    s = MooncakeDistributedStore()
    assert s.setup({"local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE",
                    "master_server_address": master_addr, "local_buffer_size": "4MB",
                    "global_segment_size": 0, "tenant_id": "remove-all"}) == OK
    other = open_store(master_addr)
    try:
        assert other.put(prefix + "keep", b"k") == OK
        for i in range(3):
            assert s.put(prefix + "x%d" % i, b"v") == OK
        assert s.remove_all() == 3
        assert s.is_exist(prefix + "x0") == 0
        assert other.is_exist(prefix + "keep") == 1
    finally:
        s.close()
        other.close()


def test_setup_dict_sizes_and_refusals(master_addr, prefix):
    for size in ("16MB", "16 MB", 16 * MiB, "16mb", "0.5 GB"):
        s = MooncakeDistributedStore()
        assert s.setup({"local_hostname": "localhost", "metadata_server": "unused",
                        "master_server_address": master_addr, "local_buffer_size": size,
                        "global_segment_size": "16 MB", "protocol": "tcp"}) == OK
        assert s.put(prefix + str(size), b"v") == OK
        s.close()
    # Sizes that are not sizes: setup answers INVALID_PARAMS, as Mooncake's does.
    for bad in ("50%", "abc", "-1", "1 PB"):
        assert MooncakeDistributedStore().setup({"local_hostname": "h",
                                                 "master_server_address": master_addr,
                                                 "global_segment_size": bad}) == INVALID_PARAMS
    assert MooncakeDistributedStore().setup("h", "m", "50%", 16 * MiB, "tcp", "",
                                            master_addr) == INVALID_PARAMS
    assert MooncakeDistributedStore().setup("h", "m", 0, MiB, "carrier-pigeon", "",
                                            master_addr) == INVALID_PARAMS
    # A hosted segment must be reachable: local_hostname names no address.
    assert MooncakeDistributedStore().setup("no-such-host.invalid", "m", 16 * MiB, MiB, "tcp",
                                            "", master_addr) == INVALID_PARAMS
    # Keyword form, as connectors call it.
    s = MooncakeDistributedStore()
    assert s.setup(local_hostname="h", metadata_server="m", global_segment_size=0,
                   local_buffer_size=MiB, protocol="tcp", rdma_devices="",
                   master_server_addr=master_addr) == OK
    s.close()


def test_env_and_json_config(master_addr, prefix, monkeypatch, tmp_path):
    monkeypatch.delenv("MOONCAKE_CONFIG_PATH", raising=False)
    monkeypatch.delenv("MOONCAKE_MASTER", raising=False)
    with pytest.raises(ValueError):
        MooncakeDistributedStore().setup_with_env()
    monkeypatch.setenv("MOONCAKE_MASTER", master_addr)
    monkeypatch.setenv("MOONCAKE_LOCAL_BUFFER_SIZE", "8 MB")
    monkeypatch.setenv("MOONCAKE_PROTOCOL", "tcp")
    # No segment of its own (Mooncake's default is 3.125 GiB): the object
    # lands on the node and outlives this store.
    monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "0")
    s = MooncakeDistributedStore()
    assert s.setup_with_env() == OK
    assert s.put(prefix + "env", b"e") == OK and s.get(prefix + "env") == b"e"
    s.close()
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                                "master_server_address": master_addr,
                                "global_segment_size": "64MB", "local_buffer_size": "4MB",
                                "protocol": "tcp", "device_name": ""}))
    monkeypatch.setenv("MOONCAKE_CONFIG_PATH", str(path))
    s = MooncakeDistributedStore()
    assert s.setup_with_env() == OK
    assert s.get_hostname().startswith("127.0.0.1:")
    assert s.get(prefix + "env") == b"e"
    s.close()


def test_local_buffer_size_zero(master_addr, prefix):
    s = open_store(master_addr, local_buffer_size=0)
    try:
        assert s.put(prefix + "staged", b"v") == NO_AVAILABLE_HANDLE
        assert s.put_batch([prefix + "sb"], [b"v"]) == NO_AVAILABLE_HANDLE
        src = pattern(MiB, 1)
        dst = np.zeros(MiB, dtype=np.uint8)
        with Registered(s, src, dst):
            assert s.put_from(prefix + "zc", src.ctypes.data, src.nbytes) == OK
            assert s.get_into(prefix + "zc", dst.ctypes.data, dst.nbytes) == src.nbytes
            assert np.array_equal(src, dst)
        assert s.get(prefix + "zc") == b""  # get copies through the local buffer
    finally:
        s.close()


def test_close_then_setup_again(master_addr, prefix):
    s = open_store(master_addr)
    assert s.put(prefix + "c", b"1") == OK
    assert s.close() == OK
    assert s.close() == OK
    assert s.put(prefix + "c2", b"2") == INVALID_PARAMS
    assert s.get(prefix + "c") == b""
    assert s.is_exist(prefix + "c") == INVALID_PARAMS
    assert s.setup("localhost", "", 0, MiB, "tcp", "", master_addr) == OK
    assert s.get(prefix + "c") == b"1"
    s.close()
    fresh = MooncakeDistributedStore()
    assert fresh.put(prefix + "never", b"x") == INVALID_PARAMS  # before setup


def test_several_stores_in_one_process(master_addr, prefix):
    a, b = open_store(master_addr), open_store(master_addr)
    try:
        assert a.put(prefix + "shared", b"from a") == OK
        assert b.get(prefix + "shared") == b"from a"
        a.close()
        assert b.is_exist(prefix + "shared") == 1
    finally:
        a.close()
        b.close()


def test_threads_put_get(store, prefix):
    """8 threads x 100 x 1 MiB put / get / remove on one store."""
    errors = []

    def work(t):
        try:
            for i in range(100):
                k = "%sth%d-%d" % (prefix, t, i)
                value = bytes([t, i % 256]) * (MiB // 2)
                rc = store.put(k, value)
                if rc != OK:
                    errors.append((k, "put", rc))
                    continue
                if store.get(k) != value:
                    errors.append((k, "get", None))
                rc = store.remove(k, force=True)
                if rc != OK:
                    errors.append((k, "remove", rc))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(("thread %d" % t, repr(e), None))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads)
    assert errors == []


def test_close_while_other_threads_call(master_addr, prefix):
    """close() while threads are in calls: each call finishes on the old
    client or answers INVALID_PARAMS; nothing crashes."""
    s = open_store(master_addr)
    assert s.put(prefix + "c", b"x" * 65536) == OK
    answers, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            answers.append(len(s.get(prefix + "c")) or s.is_exist(prefix + "c"))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for th in threads:
        th.start()
    wait_until = time.monotonic() + 10
    while len(answers) < 20 and time.monotonic() < wait_until:
        time.sleep(0.001)
    assert s.close() == OK
    n = len(answers)
    while len(answers) < n + 20 and time.monotonic() < wait_until:
        time.sleep(0.001)
    stop.set()
    for th in threads:
        th.join(30)
    assert set(answers) <= {65536, INVALID_PARAMS}
    assert answers.count(INVALID_PARAMS) >= 20


def test_gil_released_while_waiting():
    """A thread blocked in a store call (setup against a master that accepts
    connections and never answers) lets the other threads run Python, and
    the call gives up with RPC_FAIL after its rpc_timeout_ms."""
    import socket
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # connections complete; nothing ever answers
    addr = "127.0.0.1:%d" % silent.getsockname()[1]
    entered, result = threading.Event(), []

    def blocked():
        s = MooncakeDistributedStore()
        entered.set()
        result.append(s.setup("localhost", "", 0, MiB, "tcp", "", addr, rpc_timeout_ms=1500))

    start = time.monotonic()
    th = threading.Thread(target=blocked)
    th.start()
    entered.wait(10)
    ticks, until = 0, time.monotonic() + 0.5
    while time.monotonic() < until:
        ticks += 1
    ran_while_blocked = th.is_alive()
    th.join(30)
    silent.close()
    assert ran_while_blocked and ticks > 1000
    assert result == [RPC_FAIL]
    assert time.monotonic() - start < 10


def test_master_not_running_answers_rpc_fail(tmp_cluster):
    s = MooncakeDistributedStore()
    start = time.monotonic()
    rc = s.setup("localhost", "", 0, MiB, "tcp", "", dead_master_addr(), rpc_timeout_ms=2000)
    assert rc == RPC_FAIL
    assert time.monotonic() - start < 5
    # A master that goes away after setup: calls answer RPC_FAIL too.
    master, addr = tmp_cluster.start_master()
    s = open_store(addr, rpc_timeout_ms=2000)
    assert s.is_exist("k") == 0
    master.stop()
    start = time.monotonic()
    assert s.is_exist("k") == RPC_FAIL
    assert s.put("k", b"v") == RPC_FAIL
    assert s.health_check() == RPC_FAIL
    assert time.monotonic() - start < 10
    s.close()


def test_script_written_for_mooncake_runs_unchanged(master_addr):
    script = os.path.join(os.path.dirname(__file__), "mooncake_script.py")
    env = dict(os.environ, MOONCAKE_MASTER=master_addr)
    r = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout


def test_kv_offload_example(master_addr):
    pytest.importorskip("torch")
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "kv_offload.py")
    r = subprocess.run([sys.executable, example, "--master", master_addr, "--layers", "4",
                        "--blocks", "16", "--block-bytes", "32768", "--batch", "4"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bytes identical: True, failed items: 0" in r.stdout
