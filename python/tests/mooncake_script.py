"""A script written for Mooncake's store, run unchanged against Shelfmark
(test_mooncake_store.py): nothing in it knows about Shelfmark."""

import os

import numpy as np
from mooncake.store import MooncakeDistributedStore

store = MooncakeDistributedStore()
rc = store.setup(
    "localhost",                       # local_hostname
    "P2PHANDSHAKE",                    # metadata_server
    512 * 1024 * 1024,                 # global_segment_size
    128 * 1024 * 1024,                 # local_buffer_size
    "tcp",                             # protocol
    "",                                # rdma_devices
    os.environ.get("MOONCAKE_MASTER", "localhost:50051"),
)
assert rc == 0, "setup failed: %d" % rc

# put / get
store.put("hello_key", b"Hello, Mooncake Store!")
assert store.get("hello_key").decode() == "Hello, Mooncake Store!"
assert store.is_exist("hello_key") == 1
assert store.get("no_such_key") == b""

# zero-copy: register, put_from, get_into
original = np.random.randn(256, 256).astype(np.float32)
assert store.register_buffer(original.ctypes.data, original.nbytes) == 0
assert store.put_from("large_tensor", original.ctypes.data, original.nbytes) == 0
retrieved = np.empty((256, 256), dtype=np.float32)
assert store.register_buffer(retrieved.ctypes.data, retrieved.nbytes) == 0
n = store.get_into("large_tensor", retrieved.ctypes.data, retrieved.nbytes)
assert n == original.nbytes, n
assert np.array_equal(original, retrieved)

# batches: batch_put_from / batch_get_into over 1 MB buffers
keys = ["tensor1", "tensor2", "tensor3"]
buffer_size = 1024 * 1024
sources, targets = [], []
for i in range(len(keys)):
    src = np.full(buffer_size, i + 1, dtype=np.uint8)
    dst = np.empty(buffer_size, dtype=np.uint8)
    store.register_buffer(src.ctypes.data, buffer_size)
    store.register_buffer(dst.ctypes.data, buffer_size)
    sources.append(src)
    targets.append(dst)
results = store.batch_put_from(keys, [b.ctypes.data for b in sources], [buffer_size] * 3)
assert results == [0, 0, 0], results
results = store.batch_get_into(keys, [b.ctypes.data for b in targets], [buffer_size] * 3)
assert results == [buffer_size] * 3, results
for src, dst in zip(sources, targets):
    assert np.array_equal(src, dst)

# remove (an object nobody read, so no read lease holds it)
store.put("temp_key", b"temporary")
assert store.remove("temp_key") == 0
assert store.is_exist("temp_key") == 0

for b in sources + targets + [original, retrieved]:
    store.unregister_buffer(b.ctypes.data)
store.close()
print("all checks passed")
