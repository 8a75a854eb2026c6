"""shelfmark-replay: replays a Mooncake-format request trace (shelfmark.trace)
through a running cluster as a serving engine would, and sets the prefix hit
rate the cluster gave against offline LRU and Belady caches of the same
capacity (shelfmark.trace_sim). An operator uses it to size a cluster:
replay a trace of the workload at the DRAM (and SSD) a cluster would have and
see the hit rate it buys.

    shelfmark-replay TRACE --master=HOST:PORT --block_size=32KiB \\
        (--capacity_blocks=N | --segment_size=BYTES) [--ssd_capacity_blocks=M] \\
        [--concurrency=C] [--timestamps=ignore|honour] [--speedup=F] \\
        [--node_metrics=HOST:PORT,...] [--json]

Per request, through mooncake.store.MooncakeDistributedStore (one client
shared by C threads, each with its own registered buffer):
  1. batch_is_exist of the request's block keys (key prefix + hash id);
  2. batch_get_into of the longest prefix that exists; the hit is the number
     of leading blocks read whole (a failed read ends the prefix);
  3. batch_put_from of the blocks that did not exist or failed to read.
A block's bytes follow from its hash id and the block size (BlockPattern),
so every byte read is checked: wrong bytes must be 0.

Figures: prefix hit rate (leading blocks read / all block references) next
to offline LRU, Belady and an unbounded cache at the capacity (and, with
--ssd_capacity_blocks, at capacity + SSD); blocks read per tier; reads and
puts that failed, by error code; request latency p50/p99 (the request's
three store calls, not the tool's own byte work); requests/s.

Per tier: mooncake.store does not say which replica served a read. With
--node_metrics (the nodes' metrics ports) the tool reads each node's
shelfmark_node_disk_served_bytes_total before and after the replay: the
LOCAL_DISK blocks are its growth / block size, MEMORY the rest of the
reads that reached a replica: those read OK and those refused after their
transfer (a read that ends after its lease, LEASE_EXPIRED, was still served
by a disk or DRAM; reads by other clients meanwhile would count too).
Without it the split is reported as unknown.

Capacity: --capacity_blocks, or --segment_size (the DRAM of all nodes'
segments) / the block size rounded up to the master's 64-byte allocation
unit: the blocks the DRAM an operator gives could hold. The offline caches
get exactly that; the master keeps less (it evicts above
--eviction_high_watermark_ratio of the segment), which is its cost to pay.

Pace: --timestamps=ignore (default) sends requests as fast as the threads
take them; honour sends each at its timestamp / --speedup after the start.
A replay faster than the trace shortens the time between uses while the
master's read lease (--default_kv_lease_ttl, 10 s) stays in wall time:
leased blocks cannot be evicted, so start the master with the lease divided
by the speed-up the report prints, or puts are refused (NO_AVAILABLE_HANDLE)
that a real-time run would not see.

Exit status: 0; 1 when the trace cannot be read or the store cannot be set
up; 2 for bad flags; 3 when any byte read was wrong.
"""

import argparse
import json
import os
import queue
import random
import struct
import sys
import threading
import time
import urllib.request
import uuid
from collections import Counter

import _shelfmark as _native
from mooncake.store import _TO_MOONCAKE, MooncakeDistributedStore
from shelfmark import ErrorCode
from shelfmark._util import address_of, parse_size
from shelfmark.trace import TraceError, read_trace
from shelfmark.trace_sim import distinct_blocks, simulate

__all__ = ["BlockPattern", "count_wrong_bytes", "capacity_from_segment", "main"]

ALLOCATION_UNIT = 64  # the master's OffsetAllocator alignment (docs/directory.md)
DISK_SERVED_METRIC = "shelfmark_node_disk_served_bytes_total"
_FROM_MOONCAKE = {m: s for s, m in _TO_MOONCAKE.items()}


def code_name(code):
    """The name of a code mooncake.store answered (Mooncake's numbering)."""
    code = _FROM_MOONCAKE.get(code, code)
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class BlockPattern:
    """The bytes of block `hash_id`: a 16-byte header (hash id, block size)
    and then a window of a fixed random stream that starts at an offset the
    hash id picks, so two blocks differ in their header and (nearly always)
    everywhere else, and a read shifted within a block is caught."""

    HEADER = struct.Struct("<QQ")
    SPAN = 1 << 16  # offsets of the window into the stream

    def __init__(self, block_size, seed=0x5e1f):
        if block_size < self.HEADER.size:
            raise ValueError("block size must be >= %d bytes" % self.HEADER.size)
        self.block_size = block_size
        self._stream = random.Random(seed).randbytes(block_size + self.SPAN)

    def block(self, hash_id):
        start = (hash_id * 4099) % self.SPAN
        body = self._stream[start:start + self.block_size - self.HEADER.size]
        return self.HEADER.pack(hash_id, self.block_size) + body


def count_wrong_bytes(got, want):
    """How many positions of `got` differ from `want` (equal lengths)."""
    if got == want:
        return 0
    diff = int.from_bytes(got, "little") ^ int.from_bytes(want, "little")
    return len(want) - diff.to_bytes(len(want), "little").count(0)


def aligned(size):
    return -(-size // ALLOCATION_UNIT) * ALLOCATION_UNIT


def capacity_from_segment(segment_bytes, block_size):
    """Blocks `segment_bytes` of segments could hold."""
    return segment_bytes // aligned(block_size)


def percentile(sorted_values, q):
    """Nearest-rank percentile of an ascending list (0.0 for none)."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


def scrape_disk_served(endpoints):
    """Sum of DISK_SERVED_METRIC over the nodes' metrics pages
    (host:port each); OSError when a page cannot be read."""
    total = 0.0
    for endpoint in endpoints:
        with urllib.request.urlopen("http://%s/metrics" % endpoint, timeout=10) as page:
            for line in page.read().decode("utf-8", "replace").splitlines():
                fields = line.split()
                if len(fields) == 2 and fields[0] == DISK_SERVED_METRIC:
                    total += float(fields[1])
    return total


class Stats:
    """What one worker saw; merged with + at the end."""

    def __init__(self):
        self.hits = self.references = self.blocks_read = 0
        self.wrong_bytes = self.wrong_sizes = self.unusable_cached = 0
        self.blocks_put = self.puts_accepted = 0
        self.read_failures = Counter()
        self.puts_refused = Counter()
        self.lookup_errors = Counter()
        self.latencies_s = []
        self.lags_s = []

    def __add__(self, other):
        s = Stats()
        for k, v in vars(self).items():
            setattr(s, k, v + getattr(other, k))
        return s


class Worker:
    """One replay thread: a registered buffer of the longest request's
    blocks; slot i holds block i of the request being replayed."""

    def __init__(self, store, pattern, key_prefix, max_blocks):
        self.store, self.pattern, self.key_prefix = store, pattern, key_prefix
        self.bs = pattern.block_size
        self.area = bytearray(max(1, max_blocks) * self.bs)
        self.base, n = address_of(self.area, writable=True)
        code = store.register_buffer(self.base, n)
        if code != 0:
            raise RuntimeError("register_buffer of %d bytes: %s" % (n, code_name(code)))
        self.stats = Stats()

    def close(self):
        self.store.unregister_buffer(self.base)

    def _slot(self, i):
        return self.area[i * self.bs:(i + 1) * self.bs]

    def replay(self, request):
        ids = request.hash_ids
        keys = ["%s%d" % (self.key_prefix, h) for h in ids]
        ptrs = [self.base + i * self.bs for i in range(len(ids))]
        s = self.stats
        s.references += len(ids)
        t0 = time.perf_counter()
        exist = self.store.batch_is_exist(keys) if keys else []
        spent = time.perf_counter() - t0
        for c in exist:
            if c < 0:
                s.lookup_errors[code_name(c)] += 1
        prefix = next((i for i, c in enumerate(exist) if c != 1), len(exist))
        s.unusable_cached += sum(1 for c in exist[prefix:] if c == 1)
        read_ok = [False] * len(ids)
        if prefix:
            t0 = time.perf_counter()
            got = self.store.batch_get_into(keys[:prefix], ptrs[:prefix], [self.bs] * prefix)
            spent += time.perf_counter() - t0
            read_ok[:prefix] = self._check_reads(ids, got)
        s.hits += next((i for i, ok in enumerate(read_ok) if not ok), len(ids))
        spent += self._put_missing(ids, keys, ptrs, prefix, exist, read_ok)
        s.latencies_s.append(spent)

    def _check_reads(self, ids, got):
        """Per block read: True when it read whole and right."""
        s = self.stats
        ok = []
        for i, c in enumerate(got):
            if c < 0:
                s.read_failures[code_name(c)] += 1
                ok.append(False)
                continue
            s.blocks_read += 1
            if c != self.bs:
                s.wrong_sizes += 1
            wrong = count_wrong_bytes(self._slot(i), self.pattern.block(ids[i]))
            s.wrong_bytes += wrong
            ok.append(c == self.bs and wrong == 0)
        return ok

    def _put_missing(self, ids, keys, ptrs, prefix, exist, read_ok):
        """Puts, once per key, every block of the prefix that failed to read
        and every later block that did not exist (a block cached after a gap
        is left alone); returns the seconds the put call took."""
        todo, seen = [], set()
        for i, key in enumerate(keys):
            missing = not read_ok[i] if i < prefix else exist[i] != 1
            if missing and key not in seen:
                seen.add(key)
                todo.append(i)
        if not todo:
            return 0.0
        for i in todo:
            self.area[i * self.bs:(i + 1) * self.bs] = self.pattern.block(ids[i])
        t0 = time.perf_counter()
        # The native store's answers (Shelfmark's numbering): mooncake.store
        # answers 0 for a key that already exists, as Mooncake does, and the
        # report tells a refused duplicate from a write.
        codes = self.store._store.batch_put_from([keys[i] for i in todo],
                                                 [ptrs[i] for i in todo],
                                                 [self.bs] * len(todo), _native.PutConfig())
        codes = [_TO_MOONCAKE.get(c, c) for c in codes]
        spent = time.perf_counter() - t0
        s = self.stats
        s.blocks_put += len(todo)
        for c in codes:
            if c == 0:
                s.puts_accepted += 1
            else:
                s.puts_refused[code_name(c)] += 1
        return spent


def replay(store, requests, pattern, key_prefix, concurrency, speedup=None):
    """Replays `requests` on `concurrency` threads sharing `store`; each
    request is handed out in trace order (speedup: at its timestamp /
    speedup after the start; None: at once). Returns (Stats, seconds)."""
    max_blocks = max((len(r.hash_ids) for r in requests), default=1)
    workers = [Worker(store, pattern, key_prefix, max_blocks) for _ in range(concurrency)]
    todo = queue.Queue(maxsize=concurrency)
    errors = []

    def work(w):
        try:
            while True:
                item = todo.get()
                if item is None:
                    return
                due, request = item
                if due is not None:
                    w.stats.lags_s.append(max(0.0, time.perf_counter() - due))
                w.replay(request)
        except Exception as e:  # reported by the caller; keep the queue moving
            errors.append(e)
            while todo.get() is not None:
                pass

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in workers]
    start = time.perf_counter()
    for t in threads:
        t.start()
    first = requests[0].timestamp_ms if requests else 0
    for r in requests:
        due = None
        if speedup:
            due = start + (r.timestamp_ms - first) / 1000.0 / speedup
            time.sleep(max(0.0, due - time.perf_counter()))
        todo.put((due, r))
    for _ in threads:
        todo.put(None)
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    for w in workers:
        w.close()
    if errors:
        raise errors[0]
    total = Stats()
    for w in workers:
        total = total + w.stats
    return total, seconds


def bounds(requests, capacity):
    """Offline hit rates at `capacity`: {"lru": .., "belady": ..}."""
    return {p: simulate(requests, capacity, p).hit_rate for p in ("lru", "belady")}


def _ratio(a, b):
    return round(a / b, 4) if b else None


def report(args, requests, capacity, stats, seconds, disk_bytes):
    """The figures of a replay as one flat dict (the --json line)."""
    hit_rate = stats.hits / stats.references if stats.references else 0.0
    at = bounds(requests, capacity)
    lat = sorted(stats.latencies_s)
    span_s = (requests[-1].timestamp_ms - requests[0].timestamp_ms) / 1000.0 if requests else 0.0
    r = {
        "tool": "trace_replay", "trace": os.path.basename(args.trace),
        "requests": len(requests), "block_references": stats.references,
        "distinct_blocks": distinct_blocks(requests), "block_size": args.block_size,
        "capacity_blocks": capacity, "concurrency": args.concurrency,
        "timestamps": args.timestamps,
        "speedup": args.speedup if args.timestamps == "honour" else None,
        "hits": stats.hits, "hit_rate": round(hit_rate, 4),
        "lru_hit_rate": round(at["lru"], 4), "belady_hit_rate": round(at["belady"], 4),
        "unbounded_hit_rate": round(simulate(requests, None).hit_rate, 4),
        "hit_over_lru": _ratio(hit_rate, at["lru"]),
        "hit_over_belady": _ratio(hit_rate, at["belady"]),
    }
    if args.ssd_capacity_blocks:
        tiers = capacity + args.ssd_capacity_blocks
        both = bounds(requests, tiers)
        r.update({"ssd_capacity_blocks": args.ssd_capacity_blocks, "tiers_capacity_blocks": tiers,
                  "lru_hit_rate_tiers": round(both["lru"], 4),
                  "belady_hit_rate_tiers": round(both["belady"], 4),
                  "hit_over_lru_tiers": _ratio(hit_rate, both["lru"]),
                  "hit_over_belady_tiers": _ratio(hit_rate, both["belady"])})
    disk_blocks = None if disk_bytes is None else int(round(disk_bytes / args.block_size))
    r.update({
        "blocks_read": stats.blocks_read,
        # Every read a replica served: OK, or refused after its transfer.
        "memory_blocks": None if disk_blocks is None else
        stats.blocks_read + stats.read_failures["LEASE_EXPIRED"] - disk_blocks,
        "local_disk_blocks": disk_blocks,
        "read_failures": dict(stats.read_failures), "wrong_bytes": stats.wrong_bytes,
        "wrong_sizes": stats.wrong_sizes, "unusable_cached_blocks": stats.unusable_cached,
        "lookup_errors": dict(stats.lookup_errors),
        "blocks_put": stats.blocks_put, "puts_accepted": stats.puts_accepted,
        "puts_refused": dict(stats.puts_refused),
        "p50_ms": round(percentile(lat, 50) * 1e3, 3),
        "p99_ms": round(percentile(lat, 99) * 1e3, 3),
        "requests_per_s": round(len(requests) / seconds, 1) if seconds else None,
        "wall_s": round(seconds, 2), "trace_span_s": round(span_s, 1),
        "speed_vs_trace": _ratio(span_s, seconds),
    })
    if stats.lags_s:
        r["lag_p99_ms"] = round(percentile(sorted(stats.lags_s), 99) * 1e3, 3)
    return r


def _codes(counter):
    return ", ".join("%s %d" % kv for kv in sorted(counter.items())) or "none"


def format_report(r):
    """The report as text, one figure a line."""
    lines = [
        "trace       %s: %d requests, %d block references, %d distinct blocks"
        % (r["trace"], r["requests"], r["block_references"], r["distinct_blocks"]),
        "replay      %d-byte blocks, capacity %d blocks, %d thread(s), timestamps %s"
        % (r["block_size"], r["capacity_blocks"], r["concurrency"],
           "ignored" if r["timestamps"] == "ignore" else "honoured / %g" % r["speedup"]),
        "hit rate    %.4f   offline at %d blocks: LRU %.4f (%.2fx), Belady %.4f (%.2fx); "
        "unbounded %.4f" % (r["hit_rate"], r["capacity_blocks"], r["lru_hit_rate"],
                            r["hit_over_lru"] or 0, r["belady_hit_rate"],
                            r["hit_over_belady"] or 0, r["unbounded_hit_rate"]),
    ]
    if "tiers_capacity_blocks" in r:
        lines.append("with SSD    offline at %d blocks (DRAM + SSD): LRU %.4f (%.2fx), Belady %.4f "
                     "(%.2fx)" % (r["tiers_capacity_blocks"], r["lru_hit_rate_tiers"],
                                  r["hit_over_lru_tiers"] or 0, r["belady_hit_rate_tiers"],
                                  r["hit_over_belady_tiers"] or 0))
    if r["local_disk_blocks"] is None:
        tiers = "per tier unknown (mooncake.store does not say; --node_metrics tells)"
    else:
        tiers = "MEMORY %d, LOCAL_DISK %d" % (r["memory_blocks"], r["local_disk_blocks"])
    lines += [
        "reads       %d blocks: %s; failed: %s; cached after a gap (unusable): %d"
        % (r["blocks_read"], tiers, _codes(r["read_failures"]), r["unusable_cached_blocks"]),
        "wrong bytes %d (reads of the wrong size: %d)" % (r["wrong_bytes"], r["wrong_sizes"]),
        "puts        %d blocks: %d accepted; refused: %s"
        % (r["blocks_put"], r["puts_accepted"], _codes(r["puts_refused"])),
    ]
    if r["lookup_errors"]:
        lines.append("lookups     failed: %s" % _codes(r["lookup_errors"]))
    lines += [
        "latency     p50 %.3f ms, p99 %.3f ms (a request's lookup, read and put calls)%s"
        % (r["p50_ms"], r["p99_ms"],
           "; start lag p99 %.3f ms" % r["lag_p99_ms"] if "lag_p99_ms" in r else ""),
        "throughput  %.1f requests/s (%.2f s; the trace spans %.1f s: %.2fx its speed)"
        % (r["requests_per_s"] or 0, r["wall_s"], r["trace_span_s"], r["speed_vs_trace"] or 0),
    ]
    return "\n".join(lines)


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number" % text) from None
        if value <= 0:
            raise argparse.ArgumentTypeError("%r must be > 0" % text)
        return value
    return parse


def _size(text):
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="shelfmark-replay",
        description="Replay a Mooncake-format trace through a Shelfmark cluster and compare its "
                    "prefix hit rate with offline LRU and Belady caches of the same capacity.")
    p.add_argument("trace", help="JSON lines: timestamp (ms), hash_ids (Mooncake FAST'25 format)")
    p.add_argument("--master", default=os.environ.get("SHELFMARK_MASTER", "127.0.0.1:50051"),
                   help="host:port of shelfmark-master, or etcd://... ($SHELFMARK_MASTER)")
    p.add_argument("--block_size", type=_size, default=32 << 10,
                   help="bytes per block, e.g. 32KiB (default)")
    cap = p.add_mutually_exclusive_group(required=True)
    cap.add_argument("--capacity_blocks", type=_positive(int),
                     help="the cluster's DRAM in blocks, for the offline bounds")
    cap.add_argument("--segment_size", type=_size,
                     help="bytes of all nodes' segments: capacity = this / block")
    p.add_argument("--ssd_capacity_blocks", type=int, default=0,
                   help="the SSD tier's blocks: also compare with caches of DRAM + SSD")
    p.add_argument("--concurrency", type=_positive(int), default=1,
                   help="threads replaying requests, sharing one store client")
    p.add_argument("--timestamps", choices=("ignore", "honour"), default="ignore",
                   help="ignore: as fast as the threads go; honour: at timestamp / --speedup")
    p.add_argument("--speedup", type=_positive(float), default=1.0,
                   help="with --timestamps=honour: compress the trace's time by this factor")
    p.add_argument("--requests", type=_positive(int), help="replay only the first N requests")
    p.add_argument("--key_prefix", help="prefix of the block keys (default: replay-RANDOM-)")
    p.add_argument("--tenant", default="default", help="the keys' tenant")
    p.add_argument("--protocol", default="tcp", help="mooncake.store protocol (tcp: UCX)")
    p.add_argument("--device", default="", help="RDMA device with --protocol=rdma")
    p.add_argument("--local_hostname", default="localhost")
    p.add_argument("--node_metrics", default="",
                   help="host:port of every node's metrics page, comma-separated: blocks per tier")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    args = p.parse_args(argv)
    if args.ssd_capacity_blocks < 0:
        p.error("--ssd_capacity_blocks must be >= 0")
    if args.block_size < BlockPattern.HEADER.size:
        p.error("--block_size must be >= %d" % BlockPattern.HEADER.size)
    return args


def _setup(args):
    store = MooncakeDistributedStore()
    code = store.setup(args.local_hostname, "P2PHANDSHAKE", 0, 16 << 20, args.protocol,
                       args.device, args.master, tenant_id=args.tenant)
    if code != 0:
        raise RuntimeError("cannot set up a store of master %s: %s"
                           % (args.master, code_name(code)))
    return store


def main(argv=None):
    args = parse_args(argv)
    try:
        requests = read_trace(args.trace)[:args.requests]
    except (OSError, TraceError) as e:
        print("shelfmark-replay: %s" % e, file=sys.stderr)
        return 1
    capacity = args.capacity_blocks or capacity_from_segment(args.segment_size, args.block_size)
    endpoints = [e.strip() for e in args.node_metrics.split(",") if e.strip()]
    key_prefix = args.key_prefix
    if key_prefix is None:
        key_prefix = "replay-%s-" % uuid.uuid4().hex[:8]
    try:
        store = _setup(args)
        try:
            disk_before = scrape_disk_served(endpoints) if endpoints else None
            stats, seconds = replay(store, requests, BlockPattern(args.block_size), key_prefix,
                                    args.concurrency,
                                    args.speedup if args.timestamps == "honour" else None)
            disk_bytes = scrape_disk_served(endpoints) - disk_before if endpoints else None
        finally:
            store.close()
    except (OSError, RuntimeError) as e:
        print("shelfmark-replay: %s" % e, file=sys.stderr)
        return 1
    r = report(args, requests, capacity, stats, seconds, disk_bytes)
    print(json.dumps(r) if args.json else format_report(r))
    return 3 if r["wrong_bytes"] else 0


if __name__ == "__main__":
    sys.exit(main())
