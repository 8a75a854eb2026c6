"""scripts/bench_python.sh's measurement: mooncake.store's batch_get_into
from Python against the same C++ call made by the same store in the same
process.

  python3 python/bench/batch_get.py --master=HOST:PORT [--objects=64]
      [--size=262144] [--iters=200] [--warmup=5] [--segment_size=BYTES]
      [--local_size=BYTES] [--json]

A MooncakeDistributedStore (hosting a segment of --segment_size bytes when
> 0, so its puts land there; 0: the cluster's nodes hold them) puts
--objects objects of --size bytes with batch_put_from from one registered
numpy buffer, then times --iters batch_get_into calls of all of them into
another (after --warmup untimed ones; the bytes are checked after the run):
p50 / p99 per batch and GB/s (1e9 bytes/s). The C++ baseline is the
native store's own loop over the same call (time_batch_get_into: no Python
between calls), on the same client, keys and buffers; the two alternate in
blocks of --block batches, so drift of this noisy machine hits both alike:
cpp_p50_us, python_p50_us and their ratio. With a segment it also times
get_into of one object of --local_size bytes in its own segment (a memcpy
by the client) against numpy's copy of the same size, interleaved: GB/s of
each and the ratio. Every get includes its master lookup, as in Mooncake.
One JSON line, or a short table. Exit 1 when a call fails.
"""

import argparse
import json
import sys
import time
import uuid

import numpy as np

from mooncake.store import MooncakeDistributedStore


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))]


def fail(what, code):
    print("batch_get.py: %s: %s" % (what, code), file=sys.stderr)
    sys.exit(1)


def alternate(call, check, native, iters, warmup, block):
    """(Python ns per call, C++ ns per call): --iters timed call()s, each
    answer given to check() after its timing (it fails the run, or resets
    what the call changed), alternating in blocks of `block` with
    native(n), the native store's loop of n timed calls of the same."""
    python, cpp = [], []
    for _ in range(warmup):
        check(call())
    while len(python) < iters:
        n = min(block, iters - len(python))
        for _ in range(n):
            t0 = time.perf_counter_ns()
            got = call()
            python.append(time.perf_counter_ns() - t0)
            check(got)
        got = native(n)
        if len(got) != n:
            fail("the native loop", got)
        cpp.extend(got)
    return python, cpp


def timed_batches(store, keys, dst, size, iters, warmup, block):
    """(Python ns per batch, C++ ns per batch), alternating blocks."""
    ptrs = [dst.ctypes.data + i * size for i in range(len(keys))]
    sizes = [size] * len(keys)

    def check(got):
        if any(g != size for g in got):
            fail("batch_get_into", got)
    return alternate(lambda: store.batch_get_into(keys, ptrs, sizes), check,
                     lambda n: store._store.time_batch_get_into(keys, ptrs, sizes, n),
                     iters, warmup, block)


def local_vs_memcpy(store, key, size, iters):
    """GB/s of get_into of an object in the own segment, and of np.copyto."""
    src = np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8)
    dst = np.zeros(size, dtype=np.uint8)
    for a in (src, dst):
        if store.register_buffer(a.ctypes.data, a.nbytes) != 0:
            fail("register_buffer", -1)
    try:
        if store.put_from(key, src.ctypes.data, size) != 0:
            fail("put_from " + key, -1)
        get_ns, copy_ns = 0, 0
        for _ in range(iters):
            t0 = time.perf_counter_ns()
            got = store.get_into(key, dst.ctypes.data, size)
            get_ns += time.perf_counter_ns() - t0
            if got != size:
                fail("get_into " + key, got)
            t0 = time.perf_counter_ns()
            np.copyto(dst, src)
            copy_ns += time.perf_counter_ns() - t0
        if not np.array_equal(src, dst):
            fail("local get: wrong bytes", -1)
        store.remove(key, True)
        return size * iters / get_ns, size * iters / copy_ns  # bytes/ns = GB/s
    finally:
        for a in (src, dst):
            store.unregister_buffer(a.ctypes.data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--master", default="127.0.0.1:50051")
    ap.add_argument("--objects", type=int, default=64)
    ap.add_argument("--size", type=int, default=256 << 10)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--block", type=int, default=20, help="batches per alternating block")
    ap.add_argument("--segment_size", type=int, default=-1,
                    help="bytes of this process's segment (-1: objects * size + 64 MiB)")
    ap.add_argument("--local_size", type=int, default=0, help="0: --size")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    segment = a.objects * a.size + (64 << 20) if a.segment_size < 0 else a.segment_size
    local_size = a.local_size or a.size
    store = MooncakeDistributedStore()
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", segment, 16 << 20, "tcp", "", a.master)
    if rc != 0:
        fail("setup", rc)
    run = uuid.uuid4().hex[:8]
    keys = ["pybench-%s-%d" % (run, i) for i in range(a.objects)]
    src = np.random.default_rng(1).integers(0, 256, a.objects * a.size, dtype=np.uint8)
    dst = np.zeros_like(src)
    for arr in (src, dst):
        if store.register_buffer(arr.ctypes.data, arr.nbytes) != 0:
            fail("register_buffer", -1)
    ptrs = [src.ctypes.data + i * a.size for i in range(a.objects)]
    codes = store.batch_put_from(keys, ptrs, [a.size] * a.objects)
    if any(c != 0 for c in codes):
        fail("batch_put_from", codes)
    times, cpp = timed_batches(store, keys, dst, a.size, a.iters, a.warmup, a.block)
    if not np.array_equal(src, dst):
        fail("batch_get_into: wrong bytes", -1)
    p50, cpp_p50 = percentile(times, 0.5), percentile(cpp, 0.5)
    result = {"bench": "python_batchget", "objects": a.objects, "size": a.size,
              "iters": a.iters, "batch_p50_us": round(p50 / 1e3, 2),
              "batch_p99_us": round(percentile(times, 0.99) / 1e3, 2),
              "batch_gbps": round(a.objects * a.size * len(times) / sum(times), 3),
              "cpp_p50_us": round(cpp_p50 / 1e3, 2), "python_vs_cpp": round(p50 / cpp_p50, 3),
              "local_size": None, "local_get_gbps": None, "memcpy_gbps": None,
              "local_vs_memcpy": None}
    if segment > 0:
        get_gbps, copy_gbps = local_vs_memcpy(store, "pybench-%s-local" % run, local_size,
                                              max(20, a.iters))
        result.update(local_size=local_size, local_get_gbps=round(get_gbps, 3),
                      memcpy_gbps=round(copy_gbps, 3),
                      local_vs_memcpy=round(get_gbps / copy_gbps, 3))
    store.batch_remove(keys, True)
    for arr in (src, dst):
        store.unregister_buffer(arr.ctypes.data)
    store.close()
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print("%-16s %s" % (k, v))


if __name__ == "__main__":
    main()
