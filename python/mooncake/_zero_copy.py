"""The zero-copy calls of Mooncake's reference that MooncakeDistributedStore
gains as a mixin: put_from_with_metadata, and the put and get sessions with
their ranged transfers (storeservice/sessions.h):

    store.batch_put_session_start(keys, sizes)        # objects allocated, unreadable
    store.batch_put_from_multi_buffer_ranges(keys, ptrs, sizes, dst_offsets)  # any order
    store.batch_put_session_end(keys)                  # readable (or _revoke: dropped)
    store.batch_get_session_start(keys)                # one lookup, its read lease
    store.batch_get_into_multi_buffer_ranges(keys, ptrs, sizes, src_offsets)
    store.batch_get_session_end(keys)

Memory is given by address and must lie in buffers registered with
register_buffer (else -600, never touched). Per key: 0 / the bytes moved,
or a negative Mooncake code; a key without a session answers -600, a ranged
read past the session's lease -707 (LEASE_EXPIRED).
"""

import threading

import _shelfmark as _native

_INVALID_PARAMS = -600
_sessions_lock = threading.Lock()


def _mooncake(codes):
    from mooncake.store import _cs  # the store module is loaded by the time of a call
    return _cs(codes)


def _lists(rows):
    return [list(r) for r in rows]


class ZeroCopyMixin:
    """Needs the host class's batch_put_from_multi_buffers and _store."""

    def put_from_with_metadata(self, key, buffer_ptr, metadata_buffer_ptr, size, metadata_size,
                               config=None):
        """One object: metadata_size bytes at metadata_buffer_ptr, then size
        bytes at buffer_ptr. As Mooncake: size 0 writes nothing and answers
        0, prefer_alloc_in_same_node answers -1 (not supported there)."""
        if config is not None and getattr(config, "prefer_alloc_in_same_node", False):
            return -1
        if size == 0:
            return 0
        ptrs, sizes = [buffer_ptr], [size]
        if metadata_size > 0:
            ptrs, sizes = [metadata_buffer_ptr, buffer_ptr], [metadata_size, size]
        return self.batch_put_from_multi_buffers([key], [ptrs], [sizes], config)[0]

    def _native_sessions(self):
        with _sessions_lock:
            store, sessions = self.__dict__.get("_sessions", (None, None))
            if store is not self._store:  # none yet, or a setup changed the shape
                if isinstance(self._store, _native.NativeServiceStore):
                    sessions = self._store  # the service holds them (the same calls)
                else:
                    sessions = _native.NativeSessions(self._store)
                self._sessions = (self._store, sessions)
            return sessions

    # --- put sessions --------------------------------------------------------
    def batch_put_session_start(self, keys, sizes, config=None):
        if config is not None:
            config = config._native()
        else:
            config = _native.PutConfig()
        return _mooncake(self._native_sessions().put_start(list(keys), list(sizes), config))

    def batch_put_from_multi_buffer_ranges(self, keys, all_buffer_ptrs, all_sizes,
                                           all_dst_offsets):
        """Per key: the bytes written (its pieces' total), or a code."""
        return _mooncake(self._native_sessions().put_ranges(
            list(keys), _lists(all_buffer_ptrs), _lists(all_sizes), _lists(all_dst_offsets)))

    def batch_put_session_end(self, keys):
        return _mooncake(self._native_sessions().put_end(list(keys)))

    def batch_put_session_revoke(self, keys):
        return _mooncake(self._native_sessions().put_revoke(list(keys)))

    # --- get sessions --------------------------------------------------------
    def batch_get_session_start(self, keys):
        return _mooncake(self._native_sessions().get_start(list(keys)))

    def batch_get_into_multi_buffer_ranges(self, keys, all_buffer_ptrs, all_sizes,
                                           all_src_offsets):
        """Per key: the bytes read (its pieces' total), or a code."""
        return _mooncake(self._native_sessions().get_ranges(
            list(keys), _lists(all_buffer_ptrs), _lists(all_sizes), _lists(all_src_offsets)))

    def batch_get_session_end(self, keys):
        """Forgets the keys' get sessions; 0."""
        return self._native_sessions().get_end(list(keys))
