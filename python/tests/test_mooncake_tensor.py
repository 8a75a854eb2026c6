"""mooncake.store's tensor calls against a real master and node: Mooncake's
object layout byte for byte, every call's round trip and refusals, the TP
split, and tensors crossing between two processes."""

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tensor_peer_script as peer  # noqa: E402
from mooncake.store import MooncakeDistributedStore, ReplicateConfig  # noqa: E402

OK, INVALID_PARAMS = 0, -600
HEADER = 304
MAGIC = 0x4D4F4F4E
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensor_peer_script.py")

DTYPES = [torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16, torch.int32,
          torch.int64, torch.bool, torch.float16, torch.bfloat16]


@pytest.fixture
def store(master_addr):
    s = MooncakeDistributedStore()
    assert s.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master_addr) == OK
    yield s
    s.close()


class Registered:
    """A zeroed numpy buffer registered with a store for a with-block."""

    def __init__(self, store, nbytes):
        self.store, self.array = store, np.zeros(nbytes, dtype=np.uint8)

    def __enter__(self):
        assert self.store.register_buffer(self.array.ctypes.data, self.array.nbytes) == OK
        return self.array

    def __exit__(self, *exc):
        assert self.store.unregister_buffer(self.array.ctypes.data) == OK


def sample(dtype, shape=(3, 4, 5)):
    values = torch.arange(int(np.prod(shape)), dtype=torch.float64).reshape(shape) - 7
    return (values % 2).to(dtype) if dtype == torch.bool else values.to(dtype)


def same(a, b):
    return a is not None and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def object_bytes(tensor, kind=0, local=None, axes=()):
    """Mooncake's tensor object, packed here field by field from the layout
    its integration header defines (independent of mooncake/_tensor_format)."""
    codes = {torch.float32: 0, torch.float64: 1, torch.int8: 2, torch.uint8: 3, torch.int16: 4,
             torch.int32: 6, torch.int64: 8, torch.bool: 10, torch.float16: 11,
             torch.bfloat16: 12}
    local = tuple(tensor.shape) if local is None else local
    data = tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    nd = tensor.dim()

    def dims(d):
        return struct.pack("<8q", *(list(d) + [-1] * (8 - nd)))

    head = struct.pack("<IHHiiIIQQ", MAGIC, 1, HEADER, codes[tensor.dtype], nd, kind, 0, HEADER,
                       len(data))
    axis_bytes = b"".join(struct.pack("<6iq", k, i, r, c, d, 0, local[d])
                          for i, (k, r, c, d) in enumerate(axes))
    layout = (dims(tensor.shape) + dims(local) + struct.pack("<II", len(axes), 0) + axis_bytes
              + bytes(32 * (4 - len(axes))))
    return head + layout + data


def test_put_get_every_dtype_in_mooncakes_layout(store, prefix):
    for i, dtype in enumerate(DTYPES):
        t = sample(dtype)
        key = "%s%d" % (prefix, i)
        assert store.put_tensor(key, t) == OK
        # The stored object is exactly Mooncake's layout.
        assert store.get(key) == object_bytes(t)
        assert same(store.get_tensor(key), t), dtype
    # A scalar, an 8-d tensor, a non-contiguous view (stored contiguous).
    for j, t in enumerate([torch.tensor(-3.25, dtype=torch.float64),
                           torch.ones([2] * 8, dtype=torch.int16),
                           torch.arange(30, dtype=torch.int32).reshape(5, 6).t()]):
        assert store.put_tensor("%sshape%d" % (prefix, j), t) == OK
        assert same(store.get_tensor("%sshape%d" % (prefix, j)), t)


def test_reads_an_object_mooncake_wrote(store, prefix):
    t = sample(torch.bfloat16, (4, 6))
    assert store.put(prefix + "current", object_bytes(t)) == OK
    assert same(store.get_tensor(prefix + "current"), t)
    # Mooncake's earlier layout: i32 dtype, i32 ndim, i64 shape[4], the bytes.
    old = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    legacy = struct.pack("<ii4q", 6, 2, 2, 3, -1, -1) + old.numpy().tobytes()
    assert store.put(prefix + "legacy", legacy) == OK
    assert same(store.get_tensor(prefix + "legacy"), old)


def test_refusals(store, prefix):
    assert store.put_tensor(prefix + "a", b"not a tensor") == INVALID_PARAMS
    assert store.put_tensor(prefix + "b", torch.empty(3, 0)) == INVALID_PARAMS
    assert store.put_tensor(prefix + "c", torch.zeros([1] * 9)) == INVALID_PARAMS
    assert store.put_tensor(prefix + "d", torch.zeros(2, dtype=torch.complex64)) == INVALID_PARAMS
    assert store.is_exist(prefix + "a") == 0 and store.is_exist(prefix + "b") == 0
    assert store.get_tensor(prefix + "missing") is None
    for name, raw in [("bytes", b"plain bytes, no tensor here"),
                      ("short", object_bytes(torch.ones(4))[:-1]),
                      ("dtype", b"\x4e\x4f\x4f\x4d" + bytes(300) + bytes(8))]:
        assert store.put(prefix + name, raw) == OK
        assert store.get_tensor(prefix + name) is None, name
    assert store.batch_put_tensor([prefix + "x", prefix + "y"], [torch.ones(1)]) == \
        [INVALID_PARAMS, INVALID_PARAMS]


def test_batch_put_get(store, prefix):
    ts = [sample(torch.float32, (2, 2)), sample(torch.int64, (7,)), "nope"]
    keys = [prefix + k for k in "abc"]
    assert store.batch_put_tensor(keys, ts) == [OK, OK, INVALID_PARAMS]
    got = store.batch_get_tensor(keys + [prefix + "missing"])
    assert same(got[0], ts[0]) and same(got[1], ts[1]) and got[2] is None and got[3] is None


def test_pub_checks_config(store, prefix):
    t = sample(torch.float16, (8,))
    config = ReplicateConfig()
    config.with_soft_pin = True
    assert store.pub_tensor(prefix + "p", t, config) == OK
    assert same(store.get_tensor(prefix + "p"), t)
    assert store.batch_pub_tensor([prefix + "q"], [t], config) == [OK]
    # Mooncake refuses preferred_segments that do not name one per replica.
    config.preferred_segments = ["py-node", "other"]
    assert store.pub_tensor(prefix + "r", t, config) == INVALID_PARAMS
    assert store.batch_pub_tensor([prefix + "s"], [t], config) == [INVALID_PARAMS]
    assert store.is_exist(prefix + "r") == 0


def test_upserts_replace(store, prefix):
    old, new = sample(torch.float32, (4, 4)), sample(torch.int8, (2, 9))
    k = prefix + "u"
    assert store.upsert_tensor(k, old) == OK
    assert same(store.get_tensor(k), old)
    assert store.upsert_tensor(k, new) == OK
    assert same(store.get_tensor(k), new)
    config = ReplicateConfig()
    assert store.upsert_pub_tensor(k, old, config) == OK
    assert same(store.get_tensor(k), old)
    keys = [prefix + "v", k]
    assert store.batch_upsert_tensor(keys, [new, new]) == [OK, OK]
    assert all(same(t, new) for t in store.batch_get_tensor(keys))
    assert store.batch_upsert_pub_tensor(keys, [old, old], config) == [OK, OK]
    assert all(same(t, old) for t in store.batch_get_tensor(keys))


def test_get_into_views_the_buffer(store, prefix):
    a, b = sample(torch.float64, (5, 3)), sample(torch.int32, (11,))
    assert store.batch_put_tensor([prefix + "a", prefix + "b"], [a, b]) == [OK, OK]
    with Registered(store, 1 << 16) as buf:
        base = buf.ctypes.data
        t = store.get_tensor_into(prefix + "a", base, 4096)
        assert same(t, a)
        assert t.data_ptr() == base + HEADER  # a view of the caller's memory, no copy
        buf[HEADER:HEADER + 8] = 0
        assert t[0, 0].item() == 0.0
        assert store.get_tensor_into(prefix + "a", base, 100) is None  # too small
        assert store.get_tensor_into(prefix + "missing", base, 4096) is None
        got = store.batch_get_tensor_into([prefix + "b", prefix + "missing", prefix + "a"],
                                          [base, base + 8192, base + 16384], [4096] * 3)
        assert same(got[0], b) and got[1] is None and same(got[2], a)
        assert store.batch_get_tensor_into([prefix + "a"], [base, base], [4096]) == \
            [INVALID_PARAMS]


def test_put_from_a_buffer_holding_a_tensor_object(store, prefix):
    t, u = sample(torch.bfloat16, (6, 2)), sample(torch.int16, (3, 3, 3))
    with Registered(store, 1 << 16) as buf:
        base = buf.ctypes.data
        for offset, x in [(0, t), (8192, u)]:
            raw = object_bytes(x)
            buf[offset:offset + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        nt, nu = len(object_bytes(t)), len(object_bytes(u))
        assert store.put_tensor_from(prefix + "t", base, nt) == OK
        assert same(store.get_tensor(prefix + "t"), t)
        assert store.batch_put_tensor_from([prefix + "u", prefix + "bad"],
                                           [base + 8192, base + 4000], [nu, 64]) == \
            [OK, INVALID_PARAMS]
        assert same(store.get_tensor(prefix + "u"), u)
        assert store.upsert_tensor_from(prefix + "t", base + 8192, nu) == OK
        assert same(store.get_tensor(prefix + "t"), u)
        assert store.batch_upsert_tensor_from([prefix + "t"], [base], [nt]) == [OK]
        assert same(store.get_tensor(prefix + "t"), t)
        # A size that cuts the object, and memory never registered.
        assert store.put_tensor_from(prefix + "cut", base, nt - 2) == INVALID_PARAMS
        other = np.frombuffer(object_bytes(t), dtype=np.uint8).copy()
        assert store.put_tensor_from(prefix + "unreg", other.ctypes.data, nt) == INVALID_PARAMS
        assert store.is_exist(prefix + "cut") == 0 and store.is_exist(prefix + "unreg") == 0


def test_tp_split_and_read_by_rank(store, prefix):
    t = torch.arange(4 * 5 * 3, dtype=torch.float32).reshape(4, 5, 3)
    k = prefix + "w"
    assert store.put_tensor_with_tp(k, t, tp_rank=1, tp_size=3, split_dim=1) == OK
    # Mooncake's ranges: rank r holds [5r/3, 5(r+1)/3): 1, 2 and 2 columns.
    for r, (start, length) in enumerate([(0, 1), (1, 2), (3, 2)]):
        key = "%s_tp_%d" % (k, r)
        shard = t.narrow(1, start, length)
        assert store.get(key) == _shard_object(t, shard, r, 3, 1)
        assert same(store.get_tensor_with_tp(k, r, 3, 1), shard.contiguous())
    assert store.get_tensor(k) is None  # only the shards are stored
    assert store.get_tensor_with_tp(prefix + "missing", 0, 3) is None
    assert store.put_tensor_with_tp(k + "bad", t, tp_size=2, split_dim=3) == INVALID_PARAMS
    assert store.put_tensor_with_tp(k + "one", t) == OK  # tp_size 1: the plain put
    assert same(store.get_tensor_with_tp(k + "one"), t)


def _shard_object(full, shard, rank, count, split_dim):
    """A TP shard's object: SHARD, the full tensor's global shape, one TP axis."""
    obj = bytearray(object_bytes(shard.contiguous(), kind=1, local=tuple(shard.shape),
                                 axes=[(1, rank, count, split_dim)]))
    struct.pack_into("<8q", obj, 40, *(list(full.shape) + [-1] * (8 - full.dim())))
    return bytes(obj)


def test_tp_batch_pub_into_and_from(store, prefix):
    ts = [torch.arange(8 * 6, dtype=torch.int32).reshape(8, 6),
          torch.randn(10, 4, generator=torch.Generator().manual_seed(1))]
    keys = [prefix + "a", prefix + "b"]
    assert store.batch_put_tensor_with_tp(keys, ts, tp_size=2) == [OK, OK]
    for r in range(2):
        got = store.batch_get_tensor_with_tp(keys, tp_rank=r, tp_size=2)
        assert all(same(g, t.chunk(2, 0)[r].contiguous()) for g, t in zip(got, ts))
    config = ReplicateConfig()
    assert store.pub_tensor_with_tp(prefix + "p", ts[1], config, tp_size=4, split_dim=1) == OK
    assert same(torch.cat([store.get_tensor_with_tp(prefix + "p", r, 4, 1) for r in range(4)],
                          1), ts[1])
    assert store.batch_pub_tensor_with_tp([prefix + "q"], [ts[0]], config, tp_size=3,
                                          split_dim=0) == [OK]
    with Registered(store, 1 << 16) as buf:
        base = buf.ctypes.data
        shard = store.get_tensor_with_tp_into(prefix + "q", base, 4096, tp_rank=2, tp_size=3)
        assert same(shard, ts[0][5:8]) and shard.data_ptr() == base + HEADER
        got = store.batch_get_tensor_with_tp_into([prefix + "a", prefix + "b"],
                                                  [base, base + 8192], [4096, 4096], 1, 2)
        assert same(got[0], ts[0][4:]) and same(got[1], ts[1][5:])
        # A full tensor object in registered memory, split on the way in.
        raw = object_bytes(ts[1])
        buf[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        assert store.put_tensor_with_tp_from(prefix + "f", base, len(raw), tp_size=2,
                                             split_dim=1) == OK
        assert same(store.get_tensor_with_tp(prefix + "f", 1, 2), ts[1][:, 2:].contiguous())
        assert store.batch_put_tensor_with_tp_from([prefix + "g", prefix + "h"],
                                                   [base, base + 9000], [len(raw), 500],
                                                   tp_size=2) == [OK, INVALID_PARAMS]
        assert same(store.get_tensor_with_tp(prefix + "g", 0, 2), ts[1][:5])
        assert store.put_tensor_with_tp_from(prefix + "one", base, len(raw)) == OK
        assert same(store.get_tensor(prefix + "one"), ts[1])


def _peer(mode, master_addr, prefix):
    return subprocess.run([sys.executable, PEER, mode, master_addr, prefix], capture_output=True,
                          text=True, timeout=120)


def test_two_processes_other_puts_this_gets(store, master_addr, prefix):
    r = _peer("put", master_addr, prefix)
    assert r.returncode == 0, r.stdout + r.stderr
    for name, want in peer.expected().items():
        assert same(store.get_tensor(prefix + name), want), name
    shards = [store.get_tensor_with_tp(prefix + "tp", rank, peer.TP_SIZE, peer.SPLIT_DIM)
              for rank in range(peer.TP_SIZE)]
    assert same(torch.cat(shards, peer.SPLIT_DIM), peer.tp_tensor())


def test_two_processes_this_puts_other_gets(store, master_addr, prefix):
    assert peer.put(store, prefix) == 0
    r = _peer("get", master_addr, prefix)
    assert r.returncode == 0, r.stdout + r.stderr
    # And a wrong tensor is noticed by the other process.
    assert store.upsert_tensor(prefix + "f32", torch.zeros(3, 5, 7)) == OK
    r = _peer("get", master_addr, prefix)
    assert r.returncode == 1 and "f32" in r.stdout
