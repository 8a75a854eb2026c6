"""scripts/bench_store_service.sh's measurement: batch_put_from and
batch_get_into of --objects x --size bytes through the host's store service
(setup_dummy, buffers in MooncakeHostMemAllocator memory, every object
placed in the service's segment), on an embedded store's own segment
(setup with a segment, every object placed there), and
numpy's copy of the same bytes, in one process, interleaved round by round.

  python3 python/bench/service_batch.py --master=HOST:PORT --service=SOCKET
      --service_segment=HOST:PORT      [--objects=256] [--size=65536] [--rounds=8] [--segment_size=BYTES] [--json]

Each round puts --objects fresh keys per path (timed), reads them back
(timed), checks the bytes, then removes them (untimed). Also times one
get_into of a --size object per path (p50 over --single calls). GB/s are
1e9 bytes/s, medians over rounds; ratios are against numpy's copy of the
same --objects x --size bytes between two buffers. Exit 1 when a call fails
or a byte is wrong. The service's token: $SHELFMARK_CLUSTER_TOKEN.
"""

import argparse
import json
import statistics
import sys
import time
import uuid

import numpy as np

from mooncake.store import MooncakeDistributedStore, MooncakeHostMemAllocator, ReplicateConfig


def fail(what, code):
    print("service_batch.py: %s: %s" % (what, code), file=sys.stderr)
    sys.exit(1)


class Path:
    """One store with a source and a destination buffer of its own."""

    def __init__(self, name, store, src, dst, config):
        self.name, self.store, self.src, self.dst, self.config = name, store, src, dst, config
        self.put_s, self.get_s, self.single_ns = [], [], []

    def round(self, objects, size, pattern):
        self.src[:] = pattern
        keys = ["bench-%s-%s-%d" % (self.name, uuid.uuid4().hex[:8], i) for i in range(objects)]
        src = [self.src.ctypes.data + i * size for i in range(objects)]
        dst = [self.dst.ctypes.data + i * size for i in range(objects)]
        sizes = [size] * objects
        t0 = time.perf_counter()
        codes = self.store.batch_put_from(keys, src, sizes, self.config)
        self.put_s.append(time.perf_counter() - t0)
        if codes != [0] * objects:
            fail(self.name + " batch_put_from", codes)
        t0 = time.perf_counter()
        got = self.store.batch_get_into(keys, dst, sizes)
        self.get_s.append(time.perf_counter() - t0)
        if got != sizes or not np.array_equal(self.src, self.dst):
            fail(self.name + " batch_get_into", got)
        for _ in range(10):
            t0 = time.perf_counter_ns()
            n = self.store.get_into(keys[0], dst[0], size)
            self.single_ns.append(time.perf_counter_ns() - t0)
            if n != size:
                fail(self.name + " get_into", n)
        for k in keys:
            self.store.remove(k, True)


def buffers_numpy(n):
    return np.zeros(n, dtype=np.uint8), np.zeros(n, dtype=np.uint8)


def buffers_shm(alloc, n):
    arrays = []
    for _ in range(2):
        ptr = alloc.alloc(n)
        if ptr == 0:
            fail("MooncakeHostMemAllocator.alloc", 0)
        import ctypes
        arrays.append(np.frombuffer((ctypes.c_char * n).from_address(ptr), dtype=np.uint8))
    return arrays


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--service", required=True)
    ap.add_argument("--service_segment", required=True,
                    help="the service's segment name (HOST:PORT), where its puts are placed")
    ap.add_argument("--objects", type=int, default=256)
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--segment_size", type=int, default=256 << 20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    total = a.objects * a.size

    dummy = MooncakeDistributedStore()
    rc = dummy.setup_dummy(0, 0, a.service)
    if rc != 0:
        fail("setup_dummy", rc)
    alloc = MooncakeHostMemAllocator()
    s_src, s_dst = buffers_shm(alloc, total)
    for b in (s_src, s_dst):
        if dummy.register_buffer(b.ctypes.data, total) != 0:
            fail("register_buffer (service)", -1)

    embedded = MooncakeDistributedStore()
    rc = embedded.setup("127.0.0.1", "P2PHANDSHAKE", a.segment_size, 16 << 20, "tcp", "",
                        a.master)
    if rc != 0:
        fail("setup", rc)
    own = ReplicateConfig()
    own.preferred_segment = embedded.get_hostname()
    e_src, e_dst = buffers_numpy(total)
    for b in (e_src, e_dst):
        if embedded.register_buffer(b.ctypes.data, total) != 0:
            fail("register_buffer (embedded)", -1)

    to_service = ReplicateConfig()
    to_service.preferred_segment = a.service_segment
    paths = [Path("service", dummy, s_src, s_dst, to_service),
             Path("embedded", embedded, e_src, e_dst, own)]
    m_src, m_dst = buffers_numpy(total)
    memcpy_s = []
    rng = np.random.default_rng(7)
    for _ in range(a.rounds):
        pattern = rng.integers(0, 256, total, dtype=np.uint8)
        for p in paths:
            p.round(a.objects, a.size, pattern)
        m_src[:] = pattern
        t0 = time.perf_counter()
        np.copyto(m_dst, m_src)
        memcpy_s.append(time.perf_counter() - t0)

    gbps = lambda seconds: total / statistics.median(seconds) / 1e9  # noqa: E731
    memcpy = gbps(memcpy_s)
    out = {"objects": a.objects, "size": a.size, "rounds": a.rounds,
           "memcpy_gbps": round(memcpy, 3)}
    for p in paths:
        out[p.name + "_put_gbps"] = round(gbps(p.put_s), 3)
        out[p.name + "_get_gbps"] = round(gbps(p.get_s), 3)
        out[p.name + "_put_vs_memcpy"] = round(gbps(p.put_s) / memcpy, 3)
        out[p.name + "_get_vs_memcpy"] = round(gbps(p.get_s) / memcpy, 3)
        out[p.name + "_single_get_p50_us"] = round(statistics.median(p.single_ns) / 1e3, 1)
    out["single_get_service_vs_embedded"] = round(
        out["service_single_get_p50_us"] / out["embedded_single_get_p50_us"], 3)
    dummy.close()
    embedded.close()
    if a.json:
        print(json.dumps(out))
        return
    print("%d x %d B, %d rounds, medians; numpy copy %.2f GB/s" %
          (a.objects, a.size, a.rounds, memcpy))
    print("%-10s %10s %10s %10s %10s %14s" % ("path", "put GB/s", "put/cpy", "get GB/s",
                                             "get/cpy", "1-get p50 us"))
    for p in paths:
        print("%-10s %10.2f %10.3f %10.2f %10.3f %14.1f" % (
            p.name, out[p.name + "_put_gbps"], out[p.name + "_put_vs_memcpy"],
            out[p.name + "_get_gbps"], out[p.name + "_get_vs_memcpy"],
            out[p.name + "_single_get_p50_us"]))
    print("1-object get through the service / embedded: %.2f" %
          out["single_get_service_vs_embedded"])


if __name__ == "__main__":
    main()
