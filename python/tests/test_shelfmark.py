"""The Pythonic `shelfmark` API against a real master and node."""

import numpy as np
import pytest

import shelfmark
from conftest import dead_master_addr

MiB = 1 << 20


@pytest.fixture
def store(master_addr):
    with shelfmark.Store(master_addr, local_buffer_size="16MB") as s:
        yield s


def test_put_get_and_errors(store, prefix):
    k = prefix + "k"
    store.put(k, b"value")
    assert store.get(k) == b"value"
    assert k in store and store.exists(k)
    assert store.size(k) == 5
    with pytest.raises(shelfmark.ObjectExists) as e:
        store.put(k, b"again")
    assert e.value.code == -705 and e.value.name == "OBJECT_ALREADY_EXISTS"
    with pytest.raises(shelfmark.ObjectNotFound) as e:
        store.get(prefix + "missing")
    assert isinstance(e.value, KeyError) and e.value.code == shelfmark.ErrorCode.OBJECT_NOT_FOUND
    assert "OBJECT_NOT_FOUND" in str(e.value) and "-704" in str(e.value)
    with pytest.raises(shelfmark.ShelfmarkError) as e:
        store.remove(k)  # the get's lease
    assert e.value.name == "OBJECT_HAS_LEASE"
    store.remove(k, force=True)
    assert prefix + "k" not in store


def test_buffers_numpy_torch(store, prefix):
    arr = np.arange(100_000, dtype=np.int32)
    store.put(prefix + "np", arr)
    out = np.zeros_like(arr)
    assert store.get_into(prefix + "np", out) == arr.nbytes  # registered for the call
    assert np.array_equal(arr, out)
    with pytest.raises(shelfmark.BufferOverflow):
        store.get_into(prefix + "np", np.zeros(10, dtype=np.int32))
    h = store.get_buffer(prefix + "np")
    assert np.array_equal(np.frombuffer(h, dtype=np.int32), arr)
    with pytest.raises(ValueError):
        store.get_into(prefix + "np", b"read-only bytes" * 100_000)
    torch = pytest.importorskip("torch")
    t = torch.randn(128, 256)
    store.put(prefix + "t", t)
    got = torch.empty_like(t)
    store.register(got)
    try:
        assert store.get_into(prefix + "t", got) == t.numel() * 4
    finally:
        store.unregister(got)
    assert torch.equal(t, got)
    store.put_from(prefix + "t2", t)
    assert store.get(prefix + "t2") == t.numpy().tobytes()
    with pytest.raises(ValueError):
        store.put(prefix + "nc", t.t())  # not contiguous


def test_many_and_parts(store, prefix):
    items = {prefix + "m%d" % i: bytes([i]) * 100 for i in range(10)}
    store.put_many(items)
    keys = list(items) + [prefix + "missing"]
    assert store.get_many(keys) == list(items.values()) + [None]
    store.put_parts(prefix + "p", b"ab", bytearray(b"cd"), np.frombuffer(b"ef", dtype=np.uint8))
    assert store.get(prefix + "p") == b"abcdef"
    store.remove_many(keys, force=True)
    assert store.get_many(keys) == [None] * len(keys)


def test_sizes():
    assert shelfmark.parse_size("16MB") == shelfmark.parse_size("16 MB") == 16 * MiB
    assert shelfmark.parse_size(4096) == shelfmark.parse_size("4096") == 4096
    assert shelfmark.parse_size("1.5 GiB") == 3 * (1 << 29)
    assert shelfmark.parse_size("512k") == 512 * 1024
    for bad in ("50%", "", "MB", "-5", "1 PB", None, True):
        with pytest.raises(ValueError):
            shelfmark.parse_size(bad)


def test_unreachable_master_raises_rpc_error():
    with pytest.raises(shelfmark.RpcError) as e:
        shelfmark.Store(dead_master_addr(), rpc_timeout_ms=2000)
    assert e.value.code == -900


def test_closed_store(master_addr, prefix):
    s = shelfmark.Store(master_addr, local_buffer_size="1MB")
    s.close()
    assert s.closed
    with pytest.raises(shelfmark.InvalidParams):
        s.put(prefix + "x", b"x")
