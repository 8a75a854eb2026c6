#!/usr/bin/env python3
"""Offloads paged KV-cache blocks to Shelfmark and loads them back, the way an
inference engine's connector does: the cache is one CPU tensor per model,
[layers, blocks, block_bytes]; a block's key holds its slice of every layer
(one buffer per layer, written and read in place, no staging copy on the
Python side) through Mooncake's batch_put_from_multi_buffers /
batch_get_into_multi_buffers. Checks every byte and prints throughput.

    PYTHONPATH=build/relwithdebinfo/python examples/kv_offload.py --master 127.0.0.1:50051

Needs a running shelfmark-master and at least one shelfmark-node with room
for the blocks (layers x blocks x block_bytes).
"""

import argparse
import sys
import time
import uuid

import torch

from mooncake.store import MooncakeDistributedStore


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--master", default="127.0.0.1:50051")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--block-bytes", type=int, default=64 * 1024,
                    help="bytes of one block in one layer")
    ap.add_argument("--batch", type=int, default=8, help="blocks per call")
    ap.add_argument("--protocol", default="tcp")
    args = ap.parse_args()

    store = MooncakeDistributedStore()
    rc = store.setup("localhost", "P2PHANDSHAKE", 0, 64 << 20, args.protocol, "", args.master)
    if rc != 0:
        print("setup failed: %d" % rc, file=sys.stderr)
        return 1

    shape = (args.layers, args.blocks, args.block_bytes)
    gen = torch.Generator().manual_seed(1)
    saved = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
    loaded = torch.zeros(shape, dtype=torch.uint8)
    nbytes = saved.numel()
    for t in (saved, loaded):
        rc = store.register_buffer(t.data_ptr(), nbytes)
        if rc != 0:
            print("register_buffer failed: %d" % rc, file=sys.stderr)
            return 1

    run = uuid.uuid4().hex[:8]
    keys = ["kv-%s-%d" % (run, b) for b in range(args.blocks)]

    def parts(t, b):
        # Block b of every layer: [layer][block] is contiguous in the tensor.
        return [t[layer, b].data_ptr() for layer in range(args.layers)]

    sizes = [args.block_bytes] * args.layers
    failures = 0
    t0 = time.perf_counter()
    for i in range(0, args.blocks, args.batch):
        blocks = range(i, min(i + args.batch, args.blocks))
        codes = store.batch_put_from_multi_buffers(
            [keys[b] for b in blocks], [parts(saved, b) for b in blocks],
            [sizes for _ in blocks])
        failures += sum(1 for c in codes if c != 0)
    t1 = time.perf_counter()
    for i in range(0, args.blocks, args.batch):
        blocks = range(i, min(i + args.batch, args.blocks))
        got = store.batch_get_into_multi_buffers(
            [keys[b] for b in blocks], [parts(loaded, b) for b in blocks],
            [sizes for _ in blocks])
        failures += sum(1 for n in got if n != args.layers * args.block_bytes)
    t2 = time.perf_counter()

    same = torch.equal(saved, loaded)
    gib = nbytes / (1 << 30)
    print("blocks %d x layers %d x %d bytes = %.1f MiB" %
          (args.blocks, args.layers, args.block_bytes, nbytes / (1 << 20)))
    print("save: %.3f s, %.2f GiB/s" % (t1 - t0, gib / (t1 - t0)))
    print("load: %.3f s, %.2f GiB/s" % (t2 - t1, gib / (t2 - t1)))
    print("bytes identical: %s, failed items: %d" % (same, failures))

    store.batch_remove(keys, force=True)
    for t in (saved, loaded):
        store.unregister_buffer(t.data_ptr())
    store.close()
    return 0 if same and failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
