"""Segment management of Mooncake's reference, a mixin of
MooncakeDistributedStore: more DRAM of this process (allocated here, or a
caller's file) given to the cluster after setup, and taken back.

    r = store.allocate_and_mount_segment(64 << 20)   # {"ret", "segment_ids", "allocated_size"}
    cfg = ReplicateConfig(); cfg.preferred_segment = r["segment_ids"][0]
    store.put("k", b"v", cfg)                         # lands in the new segment
    store.unmount_and_free_segment(r["segment_ids"])  # the master drops what it held

Each segment is hosted like setup's (embedded/hosted_segment.h): its own
memory and segment id, on the store's engine and client id, named at the
master by its id (so preferred_segment = the id places there). Return codes
are Mooncake's: 0, or a negative code (-600 INVALID_PARAMS for a bad
argument, before setup or after close). docs/python.md lists the
differences.
"""

from mooncake.mooncake_config import PROTOCOLS

_INVALID_PARAMS = -600


def _mooncake(code):
    from mooncake.store import _c  # the store module is loaded by the time of a call
    return _c(code)


def _ids(segment_ids):
    """The ids as a list of str, or None when they are not that."""
    if isinstance(segment_ids, str):
        return None
    try:
        ids = list(segment_ids)
    except TypeError:
        return None
    return ids if all(isinstance(i, str) for i in ids) else None


def _grace_ms(seconds):
    """The grace period in whole milliseconds, or None when it is not a
    number >= 0 (bool is not one)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    if not seconds >= 0 or seconds > 1e9:  # NaN fails the first test
        return None
    return int(seconds * 1000)


def _size(size):
    return isinstance(size, int) and size > 0


class SegmentsMixin:
    """Needs the host class's _store (a NativeStore)."""

    def allocate_and_mount_segment(self, size, protocol="tcp", location=""):
        """Hosts `size` more bytes of this process's memory as one segment.
        {"ret": 0 or a code, "segment_ids": [its id] or [], "allocated_size":
        the bytes mounted (size; 0 on failure)}. `location` (Mooncake's
        device or NUMA hint) is accepted and unused: the memory is this
        process's DRAM. -600 for size 0, a protocol the store has no engine
        for, or a store whose local_hostname gave its engines no address."""
        result = {"ret": _INVALID_PARAMS, "segment_ids": [], "allocated_size": 0}
        engine = PROTOCOLS.get(str(protocol).lower())
        if engine is None or not _size(size):
            return result
        rc, segment_id = self._store.allocate_and_mount_segment(size, engine)
        result["ret"] = _mooncake(rc)
        if rc == 0:
            result["segment_ids"] = [segment_id]
            result["allocated_size"] = size
        return result

    def unmount_and_free_segment(self, segment_ids, grace_period_seconds=0):
        """Unmounts segments allocate_and_mount_segment made and frees their
        memory, all or none: 0, or -600 (nothing done) for an id that is not
        one of them (setup's segment is freed by close), an id named twice or
        an empty list. The master drops every replica in them: objects that
        lived only there are gone (get answers b"", is_exist 0).
        grace_period_seconds > 0 (Mooncake's graceful unmount): returns at
        once; the segments take no new allocations but their objects are
        still read for that long, then they are unmounted (at once by
        close). -600, nothing done, for a grace that is negative, NaN, not a
        number or over 1e9 s."""
        return self._unmount(self._store.unmount_and_free_segments, segment_ids,
                             grace_period_seconds)

    def mount_segment(self, path, size, offset=0, protocol="tcp", location=""):
        """Serves `size` bytes of the caller's file at `path` (a /dev/shm or
        hugetlbfs file, any regular file) from `offset` as one segment,
        mapped shared: what puts write there is in the file. {"ret": 0 or a
        code, "segment_ids": [its id] or []}. -600 also for an offset that is
        not a multiple of the page size, a file that cannot be opened
        read-write, is not a regular file or is shorter than offset + size.
        Do not shrink the file while it is mounted. Unlike setup's segment it
        is never mapped by clients on this host: they read it over the
        transport."""
        result = {"ret": _INVALID_PARAMS, "segment_ids": []}
        engine = PROTOCOLS.get(str(protocol).lower())
        if engine is None or not isinstance(path, str) or not _size(size) or \
                not isinstance(offset, int) or offset < 0:
            return result
        rc, segment_id = self._store.mount_segment(path, offset, size, engine)
        result["ret"] = _mooncake(rc)
        if rc == 0:
            result["segment_ids"] = [segment_id]
        return result

    def unmount_segment(self, segment_ids, grace_period_seconds=0):
        """Unmounts segments mount_segment made, all or none, as
        unmount_and_free_segment does for its own (an id of the other call
        answers -600); the file and its bytes stay the caller's."""
        return self._unmount(self._store.unmount_segments, segment_ids, grace_period_seconds)

    @staticmethod
    def _unmount(native, segment_ids, grace_period_seconds):
        ids = _ids(segment_ids)
        grace_ms = _grace_ms(grace_period_seconds)
        if not ids or grace_ms is None:
            return _INVALID_PARAMS
        return _mooncake(native(ids, grace_ms))
