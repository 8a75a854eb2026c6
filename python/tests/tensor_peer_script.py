"""The other process of test_mooncake_tensor.py's two-process round trips:
`put MASTER PREFIX` stores the tensors of `expected()` (plain, batch, TP)
and exits 0; `get MASTER PREFIX` reads them back, exits 0 when every one
is equal in dtype, shape and value, else prints what differs and exits 1.
"""

import sys

import torch

from mooncake.store import MooncakeDistributedStore

TP_SIZE, SPLIT_DIM = 4, 1


def expected():
    """{key suffix: tensor}: several dtypes and shapes, values fixed."""
    g = torch.Generator().manual_seed(30)
    return {
        "f32": torch.randn(3, 5, 7, generator=g),
        "bf16": torch.randn(16, 9, generator=g).to(torch.bfloat16),
        "i64": torch.randint(-1000, 1000, (2, 3, 4, 5), generator=g),
        "bool": torch.randint(0, 2, (33,), generator=g).bool(),
        "u8": torch.randint(0, 255, (5, 5), generator=g).to(torch.uint8),
        "scalar": torch.tensor(2.5, dtype=torch.float64),
    }


def tp_tensor():
    return torch.arange(6 * 10, dtype=torch.float32).reshape(6, 10)


def put(store, prefix):
    t = expected()
    names = list(t)
    assert store.put_tensor(prefix + names[0], t[names[0]]) == 0
    codes = store.batch_put_tensor([prefix + n for n in names[1:]], [t[n] for n in names[1:]])
    assert codes == [0] * (len(names) - 1), codes
    assert store.put_tensor_with_tp(prefix + "tp", tp_tensor(), tp_size=TP_SIZE,
                                    split_dim=SPLIT_DIM) == 0
    return 0


def get(store, prefix):
    bad = []
    t = expected()
    got = dict(zip(t, store.batch_get_tensor([prefix + n for n in t])))
    got[list(t)[0]] = store.get_tensor(prefix + list(t)[0])
    for name, want in t.items():
        have = got[name]
        if have is None or have.dtype != want.dtype or have.shape != want.shape \
                or not torch.equal(have, want):
            bad.append("%s: want %s %s, got %r" % (name, want.dtype, tuple(want.shape), have))
    shards = [store.get_tensor_with_tp(prefix + "tp", r, TP_SIZE, SPLIT_DIM)
              for r in range(TP_SIZE)]
    if any(s is None for s in shards) or not torch.equal(torch.cat(shards, SPLIT_DIM),
                                                         tp_tensor()):
        bad.append("tp shards %r" % shards)
    for line in bad:
        print(line)
    return 1 if bad else 0


def main():
    mode, master, prefix = sys.argv[1:4]
    store = MooncakeDistributedStore()
    assert store.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master) == 0
    try:
        return put(store, prefix) if mode == "put" else get(store, prefix)
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
