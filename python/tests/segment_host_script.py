"""Child of test_hostile_ucx.py: a mooncake.store process hosting its own
segment (global_segment_size > 0) that an attacker then aims bare UCX at.

    segment_host_script.py MASTER_ADDR OBJECTS OBJECT_BYTES

Puts OBJECTS objects ("hosted-<i>", pattern(i)) and prints one JSON line:
{"ready": true, "replicas": [{"key", "endpoint", "buffer_address", "size"}]}.
Then, for each line "check" on stdin, reads every object back (get) and
prints {"intact": [i, ...]} with the indexes that came back byte-exact.
Exits 0 at the end of stdin.
"""

import json
import sys

from mooncake.store import MooncakeDistributedStore

MiB = 1 << 20


def pattern(n, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(n))


def main():
    master, objects, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = MooncakeDistributedStore()
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 32 * MiB, 16 * MiB, "tcp", "", master) == 0
    replicas = []
    for i in range(objects):
        key = "hosted-%d" % i
        assert store.put(key, pattern(size, i)) == 0
        desc = store.get_replica_desc(key)[0].get_memory_descriptor().buffer_descriptor
        replicas.append({"key": key, "endpoint": desc.transport_endpoint,
                         "buffer_address": desc.buffer_address, "size": desc.size})
    print(json.dumps({"ready": True, "replicas": replicas}), flush=True)
    for line in sys.stdin:
        if line.strip() == "check":
            intact = [i for i in range(objects)
                      if store.get("hosted-%d" % i) == pattern(size, i)]
            print(json.dumps({"intact": intact}), flush=True)
    store.close()


if __name__ == "__main__":
    main()
