"""An engine-like process in the standalone-store shape (test_store_service):
a dummy client of the store service whose buffers are
MooncakeHostMemAllocator memory.

    dummy_client_script.py put  SOCKET PREFIX COUNT SIZE   # batch_put_from, "put ok"
    dummy_client_script.py get  SOCKET PREFIX COUNT SIZE   # batch_get_into, checks, "get ok"
    dummy_client_script.py loop SOCKET PREFIX SIZE         # put_from one key at a time,
                                                           # "done I" after each, until killed
The token comes from $SHELFMARK_CLUSTER_TOKEN. Values are value_of(key, size).
"""

import ctypes
import random
import sys

from mooncake.store import MooncakeDistributedStore, MooncakeHostMemAllocator


def value_of(key, size):
    return random.Random(key).randbytes(size)


def main():
    mode, socket, prefix = sys.argv[1:4]
    store = MooncakeDistributedStore()
    rc = store.setup_dummy(0, 0, socket)
    if rc != 0:
        print("setup_dummy", rc, flush=True)
        return 1
    alloc = MooncakeHostMemAllocator()
    if mode == "loop":
        size = int(sys.argv[4])
        ptr = alloc.alloc(size)
        assert store.register_buffer(ptr, size) == 0
        i = 0
        while True:
            key = "%s%d" % (prefix, i)
            write(ptr, value_of(key, size))
            assert store.put_from(key, ptr, size) == 0
            print("done", i, flush=True)
            i += 1
    count, size = int(sys.argv[4]), int(sys.argv[5])
    ptr = alloc.alloc(count * size)
    assert store.register_buffer(ptr, count * size) == 0
    keys = ["%s%d" % (prefix, i) for i in range(count)]
    ptrs = [ptr + i * size for i in range(count)]
    if mode == "put":
        for i, key in enumerate(keys):
            write(ptr + i * size, value_of(key, size))
        codes = store.batch_put_from(keys, ptrs, [size] * count)
        print("put ok" if codes == [0] * count else "put codes %s" % codes, flush=True)
    else:
        got = store.batch_get_into(keys, ptrs, [size] * count)
        exact = all(read(ptr + i * size, size) == value_of(k, size)
                    for i, k in enumerate(keys))
        print("get ok" if got == [size] * count and exact else "get wrong %s" % got, flush=True)
    store.unregister_buffer(ptr)
    store.close()
    return 0


def write(ptr, data):
    ctypes.memmove(ptr, data, len(data))


def read(ptr, size):
    return ctypes.string_at(ptr, size)


if __name__ == "__main__":
    sys.exit(main())
