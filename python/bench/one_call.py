"""scripts/bench_python.sh's per-call overhead measurement: one-object
put_from, get_into and is_exist of mooncake.store from Python against the
same C++ call made by the same store in the same process.

  python3 python/bench/one_call.py --master=HOST:PORT [--size=4096]
      [--iters=2000] [--warmup=20] [--block=50] [--json]

A MooncakeDistributedStore hosting a segment (so its objects lie in its own
segment: every call is the master round trip plus a memcpy, the case where
Python's share is largest) times each call --iters times from Python, in
blocks of --block alternating with the native store's own loop of the same
call (time_put_from, time_get_into, time_is_exist: no Python between calls)
on the same client, key and registered buffers. put_from puts a fresh
object each time: the key is removed after each put, untimed, in both
languages. get_into reads one --size object; is_exist asks for it. Per call:
python_p50_us, cpp_p50_us and their ratio (goal <= 1.2). One JSON line per
call, or a short table. Exit 1 when a call fails.
"""

import argparse
import json
import uuid

import numpy as np

import _shelfmark
from batch_get import alternate, fail, percentile
from mooncake.store import MooncakeDistributedStore


def calls(store, key, src, dst, size):
    """{name: (Python call, check of its answer, native loop of n calls)}."""
    native = store._store
    config = _shelfmark.PutConfig()  # what put_from without a config sends

    def put_check(got):
        if got != 0:
            fail("put_from", got)
        store.remove(key + "-put", True)

    def expect(name, want):
        def check(got):
            if got != want:
                fail(name, got)
        return check
    return {
        "put_from": (lambda: store.put_from(key + "-put", src, size), put_check,
                     lambda n: native.time_put_from(key + "-put", src, size, config, n)),
        "get_into": (lambda: store.get_into(key, dst, size), expect("get_into", size),
                     lambda n: native.time_get_into(key, dst, size, n)),
        "is_exist": (lambda: store.is_exist(key), expect("is_exist", 1),
                     lambda n: native.time_is_exist(key, n)),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--master", default="127.0.0.1:50051")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--block", type=int, default=50, help="calls per alternating block")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    store = MooncakeDistributedStore()
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", 64 << 20, 16 << 20, "tcp", "", a.master)
    if rc != 0:
        fail("setup", rc)
    key = "pyone-%s" % uuid.uuid4().hex[:8]
    src = np.random.default_rng(3).integers(0, 256, a.size, dtype=np.uint8)
    dst = np.zeros_like(src)
    for arr in (src, dst):
        if store.register_buffer(arr.ctypes.data, arr.nbytes) != 0:
            fail("register_buffer", -1)
    if store.put_from(key, src.ctypes.data, a.size) != 0:
        fail("put_from " + key, -1)
    copies_before = store._store.local_copies()[0]
    results = []
    for name, (call, check, native) in calls(store, key, src.ctypes.data, dst.ctypes.data,
                                             a.size).items():
        python, cpp = alternate(call, check, native, a.iters, a.warmup, a.block)
        p50, cpp_p50 = percentile(python, 0.5), percentile(cpp, 0.5)
        results.append({"bench": "python_one_call", "call": name, "size": a.size,
                        "iters": a.iters, "python_p50_us": round(p50 / 1e3, 2),
                        "cpp_p50_us": round(cpp_p50 / 1e3, 2),
                        "python_vs_cpp": round(p50 / cpp_p50, 3)})
    if not np.array_equal(src, dst):
        fail("get_into: wrong bytes", -1)
    if store._store.local_copies()[0] == copies_before:
        fail("the objects were not in the store's own segment", 0)
    store.remove(key, True)
    for arr in (src, dst):
        store.unregister_buffer(arr.ctypes.data)
    store.close()
    for r in results:
        if a.json:
            print(json.dumps(r))
        else:
            print("%-9s python %8.2f us  C++ %8.2f us  ratio %.3f" % (
                r["call"], r["python_p50_us"], r["cpp_p50_us"], r["python_vs_cpp"]))


if __name__ == "__main__":
    main()
