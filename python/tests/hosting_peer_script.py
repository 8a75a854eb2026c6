"""Child of test_mooncake_conformance.py: another process hosting a segment,
as a second engine worker on the cluster does.

    hosting_peer_script.py MASTER_ADDR LOCAL_HOSTNAME

Sets up a mooncake.store hosting 64 MiB at LOCAL_HOSTNAME, puts one object
into its own segment (preferred_segment = get_hostname()) and prints one
JSON line {"hostname": ..., "endpoint": ...}: its segment's name and where
other clients reach it. Then waits for the end of stdin, closes the store
(its segment leaves the cluster) and prints {"closed": 0}.
"""

import json
import os
import sys

from mooncake.store import MooncakeDistributedStore, ReplicateConfig

MiB = 1 << 20


def main():
    master, hostname = sys.argv[1], sys.argv[2]
    store = MooncakeDistributedStore()
    assert store.setup(hostname, "P2PHANDSHAKE", 64 * MiB, 8 * MiB, "tcp", "", master) == 0
    config = ReplicateConfig()
    config.preferred_segment = store.get_hostname()
    key = "peer-%d" % os.getpid()
    assert store.put(key, b"peer", config) == 0
    desc = store.get_replica_desc(key)[0].get_memory_descriptor().buffer_descriptor
    print(json.dumps({"hostname": store.get_hostname(), "endpoint": desc.transport_endpoint}),
          flush=True)
    sys.stdin.read()
    print(json.dumps({"closed": store.close()}), flush=True)


if __name__ == "__main__":
    main()
