"""Child of test_faulting_memory.py: hands mooncake.store memory a get would
fault on (unmapped, PROT_READ, PROT_NONE) and pointers outside any
registered buffer, one call at a time, printing each call's answer as a
JSON line (flushed) so that, should a call kill this interpreter, the
parent sees how far it got and the signal.

    faulting_memory_script.py MASTER_ADDR GLOBAL_SEGMENT_BYTES
"""

import ctypes
import json
import mmap
import sys

from mooncake.store import MooncakeDistributedStore

MiB = 1 << 20
PAGE = mmap.PAGESIZE
PROT_NONE = 0  # not in the mmap module

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def map_pages(prot, n=2):
    addr = libc.mmap(None, n * PAGE, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert addr not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
    return addr


def say(step, answer):
    print(json.dumps({"step": step, "answer": answer}), flush=True)


def main():
    master, segment = sys.argv[1], int(sys.argv[2])
    store = MooncakeDistributedStore()
    assert store.setup("localhost", "P2PHANDSHAKE", segment, 16 * MiB, "tcp", "", master) == 0
    key = "faulting-memory-%d" % segment
    value = bytes(range(256)) * (PAGE // 256)
    store.remove(key, force=True)
    say("put", store.put(key, value))

    unmapped = map_pages(mmap.PROT_READ | mmap.PROT_WRITE)
    assert libc.munmap(unmapped, 2 * PAGE) == 0
    bad = {"unmapped": unmapped, "read_only": map_pages(mmap.PROT_READ),
           "none": map_pages(PROT_NONE)}
    for name, addr in bad.items():
        say(name + ":register_buffer", store.register_buffer(addr, 2 * PAGE))
        say(name + ":get_into", store.get_into(key, addr, 2 * PAGE))
        say(name + ":batch_get_into", store.batch_get_into([key], [addr], [2 * PAGE]))
        say(name + ":batch_get_into_multi_buffers",
            store.batch_get_into_multi_buffers([key], [[addr]], [[2 * PAGE]]))

    # A registered read-write page: reads reaching past it answer codes,
    # reads inside it land byte-exact.
    good = map_pages(mmap.PROT_READ | mmap.PROT_WRITE)
    say("good:register_buffer", store.register_buffer(good, PAGE))
    say("good:get_into_past_end", store.get_into(key, good + PAGE // 2, PAGE))
    say("good:batch_get_into_past_end", store.batch_get_into([key], [good + 1], [PAGE]))
    say("good:get_into", store.get_into(key, good, PAGE))
    say("good:bytes_match", ctypes.string_at(good, PAGE) == value)
    say("good:unregister_buffer", store.unregister_buffer(good))
    store.remove(key, force=True)
    store.close()
    say("done", 0)


if __name__ == "__main__":
    main()
