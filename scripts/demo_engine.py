"""An engine-like process of the standalone-store demo (scripts/demo.sh
--standalone): a light client of one host's shelfmark-store-service
(mooncake.store's setup_dummy), its buffers in MooncakeHostMemAllocator
shared memory, the cluster token read from a mode-600 file and proven to the
service. With $MOONCAKE_CONFIG_PATH it connects as vLLM's connector does
(setup with its "standalone-store" configuration). Values are
value_of(key, size), so any process can check any key.

    demo_engine.py put  TOKEN_FILE SOCKET SEGMENT PREFIX COUNT SIZE
        batch_put_from of PREFIX0..PREFIX{COUNT-1} into SEGMENT (the
        preferred segment); prints how many were acknowledged, how fast;
        exits 0 when every put answered 0.
    demo_engine.py loop TOKEN_FILE SOCKET SEGMENT PREFIX SIZE
        put_from one key at a time, printing "acked I" after each, until it
        is killed.
    demo_engine.py get  TOKEN_FILE SOCKET SEGMENT SEGMENTS_JSON PREFIX COUNT SIZE WRITER READER
        looks up where each replica lies (SEGMENT: the service's own;
        SEGMENTS_JSON: files of the master's /get_segments_detail, the
        current one last, naming the segments by transport endpoint),
        batch_get_into of every key, compares the bytes, and checks key
        PREFIX{COUNT} (a put in flight when its writer died: absent, or
        present and whole); prints one JSON line (WRITER and READER label
        it); exit 1 on any mismatch or error.
    demo_engine.py table FILE
        the demo's table from the JSON lines of FILE.
"""

import ctypes
import json
import os
import random
import sys
import time

from mooncake.store import MooncakeDistributedStore, MooncakeHostMemAllocator, ReplicateConfig


def value_of(key, size):
    return random.Random(key).randbytes(size)


def connect(token_file, socket):
    """SGLang's way, setup_dummy; or, with $MOONCAKE_CONFIG_PATH, vLLM's: its
    mooncake_config.json ("mode": "standalone-store", client_server_address)
    read by setup, given the file's master and a global_segment_size of 0."""
    with open(token_file, encoding="ascii") as f:
        token = f.read().strip()
    store = MooncakeDistributedStore()
    config = os.environ.get("MOONCAKE_CONFIG_PATH")
    if config:
        with open(config, encoding="utf-8") as f:
            master = json.load(f)["master_server_address"]
        rc = store.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master,
                         cluster_token=token)
    else:
        rc = store.setup_dummy(0, 0, socket, cluster_token=token)
    if rc != 0:
        sys.exit("demo_engine: connecting to %s answered %d" % (socket, rc))
    if store.get_hostname() != socket:  # a service store answers its socket
        sys.exit("demo_engine: not a client of %s: %s" % (socket, store.get_hostname()))
    return store


def shm(store, size):
    """size bytes of MooncakeHostMemAllocator memory registered with store."""
    ptr = MooncakeHostMemAllocator().alloc(size)
    if ptr == 0 or store.register_buffer(ptr, size) != 0:
        sys.exit("demo_engine: no %d bytes of shared memory" % size)
    return ptr


def put(store, segment, prefix, count, size):
    ptr = shm(store, count * size)
    keys = ["%s%d" % (prefix, i) for i in range(count)]
    for i, key in enumerate(keys):
        ctypes.memmove(ptr + i * size, value_of(key, size), size)
    config = ReplicateConfig()
    config.preferred_segment = segment
    start = time.monotonic()
    codes = store.batch_put_from(keys, [ptr + i * size for i in range(count)], [size] * count,
                                 config)
    ms = (time.monotonic() - start) * 1e3
    ok = sum(1 for c in codes if c == 0)
    print("batch_put_from: %d/%d acknowledged in %.1f ms (%.2f GB/s)"
          % (ok, count, ms, count * size / ms / 1e6), flush=True)
    return 0 if ok == count else 1


def loop(store, segment, prefix, size):
    ptr = shm(store, size)
    config = ReplicateConfig()
    config.preferred_segment = segment
    i = 0
    while True:
        key = "%s%d" % (prefix, i)
        ctypes.memmove(ptr, value_of(key, size), size)
        rc = store.put_from(key, ptr, size, config)
        if rc != 0:
            sys.exit("demo_engine: put_from(%s) answered %d" % (key, rc))
        print("acked", i, flush=True)
        i += 1


def where(store, keys, segments, own):
    """{place: objects}: where each key's replica the service reads lies (a
    MEMORY replica before a LOCAL_DISK one), named by segment."""
    places = {}
    for key, replicas in store.batch_get_replica_desc(keys).items():
        memory = [r for r in replicas if r.is_memory_replica()]
        if memory:
            endpoint = memory[0].get_memory_descriptor().buffer_descriptor.transport_endpoint
            seg = segments.get(endpoint, "endpoint " + endpoint)
            place = ("DRAM %s: memcpy in the service" % seg if seg == own else
                     "DRAM %s: UCX read by the service" % seg)
        elif replicas:
            endpoint = replicas[0].get_disk_descriptor().endpoint
            seg = segments.get(endpoint, "endpoint " + endpoint)
            place = "SSD of %s (LOCAL_DISK)" % seg
        else:
            place = "no replica"
        places[place] = places.get(place, 0) + 1
    return places


def get(store, own, segments_json, prefix, count, size):
    segments = {}
    files = segments_json.split(",")
    for n, path in enumerate(files):
        with open(path, encoding="utf-8") as f:
            for s in json.load(f)["segments"]:
                old = "" if n == len(files) - 1 else " (its endpoint before the restart)"
                segments[s["te_endpoint"]] = s["segment_name"] + old
    keys = ["%s%d" % (prefix, i) for i in range(count)]
    places = where(store, keys, segments, own)
    ptr = shm(store, count * size)
    start = time.monotonic()
    got = store.batch_get_into(keys, [ptr + i * size for i in range(count)], [size] * count)
    seconds = time.monotonic() - start
    exact = sum(1 for i, key in enumerate(keys)
                if got[i] == size and ctypes.string_at(ptr + i * size, size) == value_of(key, size))
    after = "%s%d" % (prefix, count)
    whole_after = (store.is_exist(after) != 1 or
                   (store.get_into(after, ptr, size) == size and
                    ctypes.string_at(ptr, size) == value_of(after, size)))
    return exact == count and whole_after, {
        "count": count, "size": size, "exact": exact, "ms": round(seconds * 1e3, 2),
        "gbps": round(count * size / seconds / 1e9, 2), "where": places,
        "next_key": store.is_exist(after) == 1, "next_key_whole": whole_after}


def table(path):
    """One row a read: the JSON lines the shell wrote, each a get's line plus
    who wrote the objects and who read them."""
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    head = ("objects", "written by", "read by", "byte-exact", "get ms", "GB/s",
            "where the bytes were (objects)")
    cells = [head]
    for r in rows:
        cells.append(("%d x %d KiB" % (r["count"], r["size"] >> 10), r["writer"], r["reader"],
                      "%d/%d" % (r["exact"], r["count"]), "%.1f" % r["ms"], "%.2f" % r["gbps"],
                      "; ".join("%s (%d)" % kv for kv in sorted(r["where"].items()))))
    widths = [max(len(c[i]) for c in cells) for i in range(len(head) - 1)]
    for c in cells:
        print("   " + "  ".join(c[i].ljust(widths[i]) for i in range(len(widths))) + "  " + c[-1])
    return 0


def main(argv):
    mode = argv[1]
    if mode == "table":
        return table(argv[2])
    store = connect(argv[2], argv[3])
    if mode == "put":
        return put(store, argv[4], argv[5], int(argv[6]), int(argv[7]))
    if mode == "loop":
        return loop(store, argv[4], argv[5], int(argv[6]))
    ok, row = get(store, argv[4], argv[5], argv[6], int(argv[7]), int(argv[8]))
    row.update(writer=argv[9], reader=argv[10])
    print(json.dumps(row), flush=True)
    store.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
