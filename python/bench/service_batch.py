"""scripts/bench_store_service.sh's measurement: batch_put_from and
batch_get_into of --objects x --size bytes through the host's store service
(setup_dummy, buffers in MooncakeHostMemAllocator memory, every object
placed in the service's segment), on an embedded store's own segment
(setup with a segment, every object placed there), for a segment-less
client on this host (an embedded store with global_segment_size=0, every
object placed in the service's segment, which it maps: same-host copies,
transport/local_share.h), and numpy's copy of the same bytes, in one
process, interleaved round by round.

  python3 python/bench/service_batch.py --master=HOST:PORT --service=SOCKET
      --service_segment=HOST:PORT [--service_pid=PID] [--objects=256]
      [--size=65536] [--rounds=8] [--segment_size=BYTES] [--json]

Each round puts --objects fresh keys per path (timed), reads them back
(timed), checks the bytes, then removes them (untimed). Also times one
get_into of a --size object per path (p50 over --single calls). GB/s are 1e9
bytes/s, medians over rounds; ratios are against numpy's copy of the same
--objects x --size bytes between two buffers. "flt" columns: minor page
faults during a path's calls, all rounds, of this process and of the service
(--service_pid): where first touches of shared memory happen (the kernel
counts a page a populate call faults in as one too, so they show where page
tables are filled, not how cheaply); the benchmark's own buffers are written
before the first round, so theirs are not counted. Exit 1 when a call fails
or a byte is wrong. The service's token: $SHELFMARK_CLUSTER_TOKEN.
"""

import argparse
import json
import resource
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
        self.put_faults = self.get_faults = 0

    def round(self, objects, size, pattern):
        self.src[:] = pattern
        keys = ["bench-%s-%s-%d" % (self.name, uuid.uuid4().hex[:8], i) for i in range(objects)]
        src = [self.src.ctypes.data + i * size for i in range(objects)]
        dst = [self.dst.ctypes.data + i * size for i in range(objects)]
        sizes = [size] * objects
        f0, t0 = minor_faults(), time.perf_counter()
        codes = self.store.batch_put_from(keys, src, sizes, self.config)
        self.put_s.append(time.perf_counter() - t0)
        f1 = minor_faults()
        self.put_faults += f1 - f0
        if codes != [0] * objects:
            fail(self.name + " batch_put_from", codes)
        t0 = time.perf_counter()
        got = self.store.batch_get_into(keys, dst, sizes)
        self.get_s.append(time.perf_counter() - t0)
        self.get_faults += minor_faults() - f1
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


SERVICE_PID = 0  # --service_pid


def minor_faults():
    """Minor page faults so far of this process and the service's."""
    n = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    if SERVICE_PID:
        with open("/proc/%d/stat" % SERVICE_PID) as f:
            n += int(f.read().rsplit(")", 1)[1].split()[7])  # field 10, minflt
    return n


def touched(array):
    """The array, every page written (np.zeros' pages are not yet)."""
    array.fill(1)
    return array


def buffers_numpy(n):
    return touched(np.zeros(n, dtype=np.uint8)), touched(np.zeros(n, dtype=np.uint8))


def buffers_shm(alloc, n):
    arrays = []
    for _ in range(2):
        ptr = alloc.alloc(n)
        if ptr == 0:
            fail("MooncakeHostMemAllocator.alloc", 0)
        import ctypes
        arrays.append(touched(np.frombuffer((ctypes.c_char * n).from_address(ptr),
                                            dtype=np.uint8)))
    return arrays


def embedded_store(master, segment_size, what):
    """An embedded store with a segment of segment_size bytes (0: none)."""
    store = MooncakeDistributedStore()
    rc = store.setup("127.0.0.1", "P2PHANDSHAKE", segment_size, 16 << 20, "tcp", "", master)
    if rc != 0:
        fail("setup (%s)" % what, rc)
    return store


def registered(store, buffers, what):
    for b in buffers:
        if store.register_buffer(b.ctypes.data, b.nbytes) != 0:
            fail("register_buffer (%s)" % what, -1)
    return buffers


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
    ap.add_argument("--service_pid", type=int, default=0,
                    help="the service's process id, whose page faults are counted too")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    global SERVICE_PID
    SERVICE_PID = a.service_pid
    total = a.objects * a.size

    dummy = MooncakeDistributedStore()
    rc = dummy.setup_dummy(0, 0, a.service)
    if rc != 0:
        fail("setup_dummy", rc)
    s_src, s_dst = registered(dummy, buffers_shm(MooncakeHostMemAllocator(), total), "service")

    embedded = embedded_store(a.master, a.segment_size, "embedded")
    own = ReplicateConfig()
    own.preferred_segment = embedded.get_hostname()
    e_src, e_dst = registered(embedded, buffers_numpy(total), "embedded")

    segmentless = embedded_store(a.master, 0, "segment-less")
    z_src, z_dst = registered(segmentless, buffers_numpy(total), "segment-less")

    to_service = ReplicateConfig()
    to_service.preferred_segment = a.service_segment
    paths = [Path("service", dummy, s_src, s_dst, to_service),
             Path("embedded", embedded, e_src, e_dst, own),
             Path("nosegment", segmentless, z_src, z_dst, to_service)]
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
        out[p.name + "_put_faults"] = p.put_faults
        out[p.name + "_get_faults"] = p.get_faults
    out["single_get_service_vs_embedded"] = round(
        out["service_single_get_p50_us"] / out["embedded_single_get_p50_us"], 3)
    dummy.close()
    embedded.close()
    segmentless.close()
    if a.json:
        print(json.dumps(out))
        return
    print("%d x %d B, %d rounds, medians; numpy copy %.2f GB/s" %
          (a.objects, a.size, a.rounds, memcpy))
    print("%-10s %10s %10s %10s %10s %14s %10s %10s" % (
        "path", "put GB/s", "put/cpy", "get GB/s", "get/cpy", "1-get p50 us", "put flt", "get flt"))
    for p in paths:
        print("%-10s %10.2f %10.3f %10.2f %10.3f %14.1f %10d %10d" % (
            p.name, out[p.name + "_put_gbps"], out[p.name + "_put_vs_memcpy"],
            out[p.name + "_get_gbps"], out[p.name + "_get_vs_memcpy"],
            out[p.name + "_single_get_p50_us"], p.put_faults, p.get_faults))
    print("1-object get through the service / embedded: %.2f" %
          out["single_get_service_vs_embedded"])


if __name__ == "__main__":
    main()
