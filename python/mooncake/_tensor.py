"""Mooncake's tensor calls of MooncakeDistributedStore (CPU torch tensors),
as a mixin over the store's byte calls: every tensor object is
[Mooncake's tensor header][the tensor's bytes] (mooncake/_tensor_format.py),
so tensors put here read back in Mooncake and the other way round.

Conventions, as Mooncake's: puts answer 0 or a negative code (-600
INVALID_PARAMS for something that is not a CPU tensor of a dtype Mooncake
knows, a tensor with a zero-sized dimension, or an impossible TP split);
batch puts a list of codes; gets answer a tensor or None. TP forms store
shard r of tp_size under "<key>_tp_<r>" (split along split_dim with
Mooncake's ranges: [n*r/tp_size, n*(r+1)/tp_size)), and read back the
shard of tp_rank; tp_size 1 is the plain form. The *_into reads return a
tensor over the caller's registered buffer (no copy; keep the buffer
alive); the *_from puts take a buffer already holding a tensor object and
answer -600 when it holds none.

Needs torch; importing mooncake.store without torch leaves these calls
answering as Mooncake does without it (ImportError when called).
"""

import ctypes

try:
    from mooncake import _tensor_format as fmt
except ImportError as e:  # torch (or numpy) missing
    fmt = None
    _IMPORT_ERROR = e

_INVALID_PARAMS = -600


def _tp_key(key, rank):
    return "%s_tp_%d" % (key, rank)


def _memory(address, size):
    """The bytes at a registered address (read only after the store has
    checked the registration)."""
    return (ctypes.c_char * size).from_address(address)


def _bad_config(config):
    """Mooncake refuses a pub whose preferred_segments do not name one
    segment per replica."""
    segments = list(getattr(config, "preferred_segments", None) or [])
    return config is not None and segments and len(segments) != config.replica_num


class TensorMixin:
    """The tensor family; the host class provides put_parts, upsert_parts,
    get_buffer, batch_get_buffer, get_into, batch_get_into, put_from,
    upsert_from, batch_put_from, batch_upsert_from and _store."""

    # --- writes --------------------------------------------------------------
    def _put_objects(self, keys, objects, config, upsert):
        """Codes of putting [(layout, contiguous tensor) or None] under keys
        (None: INVALID_PARAMS)."""
        put = self.upsert_parts if upsert else self.put_parts
        codes = []
        for key, obj in zip(keys, objects):
            if obj is None:
                codes.append(_INVALID_PARAMS)
                continue
            layout, tensor = obj
            data = tensor.reshape(-1).view(fmt.torch.uint8).numpy()
            codes.append(put(key, fmt.encode(layout), data, config=config))
        return codes

    @staticmethod
    def _full(tensor):
        """(FULL layout, contiguous tensor), or None for a tensor Mooncake
        cannot store."""
        _require_torch()
        try:
            t, _ = fmt.tensor_bytes(tensor)
        except ValueError:
            return None
        if any(d <= 0 for d in t.shape):
            return None
        return fmt.full_layout(t), t

    def _put_tensors(self, keys, tensors, config=None, upsert=False):
        if len(keys) != len(tensors) or _bad_config(config):
            return [_INVALID_PARAMS] * len(keys)
        return self._put_objects(list(keys), [self._full(t) for t in tensors], config, upsert)

    def put_tensor(self, key, tensor):
        return self._put_tensors([key], [tensor])[0]

    def batch_put_tensor(self, keys, tensors_list):
        return self._put_tensors(keys, tensors_list)

    def pub_tensor(self, key, tensor, config=None):
        return self._put_tensors([key], [tensor], config)[0]

    def batch_pub_tensor(self, keys, tensors_list, config=None):
        return self._put_tensors(keys, tensors_list, config)

    def upsert_tensor(self, key, tensor):
        return self._put_tensors([key], [tensor], upsert=True)[0]

    def batch_upsert_tensor(self, keys, tensors_list):
        return self._put_tensors(keys, tensors_list, upsert=True)

    def upsert_pub_tensor(self, key, tensor, config=None):
        return self._put_tensors([key], [tensor], config, upsert=True)[0]

    def batch_upsert_pub_tensor(self, keys, tensors_list, config=None):
        return self._put_tensors(keys, tensors_list, config, upsert=True)

    # --- tensor parallelism: shard r under <key>_tp_<r> -------------------------
    def _put_shards(self, base_keys, tensors, config, tp_size, split_dim):
        """Per base key: 0, or the first failing shard's code."""
        if len(base_keys) != len(tensors) or _bad_config(config):
            return [_INVALID_PARAMS] * len(base_keys)
        codes = []
        for key, tensor in zip(base_keys, tensors):
            full = self._full(tensor)
            try:
                shards = fmt.tp_shards(full[1], tp_size, split_dim) if full else None
            except ValueError:
                shards = None
            if shards is None:
                codes.append(_INVALID_PARAMS)
                continue
            keys = [_tp_key(key, r) for r in range(tp_size)]
            codes.append(next((c for c in self._put_objects(keys, shards, config, False) if c),
                              0))
        return codes

    def put_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0):
        """Stores every shard (tp_rank is accepted for Mooncake's signature)."""
        if tp_size <= 1:
            return self.put_tensor(key, tensor)
        return self._put_shards([key], [tensor], None, tp_size, split_dim)[0]

    def pub_tensor_with_tp(self, key, tensor, config=None, tp_rank=0, tp_size=1, split_dim=0):
        if tp_size <= 1:
            return self.pub_tensor(key, tensor, config)
        return self._put_shards([key], [tensor], config, tp_size, split_dim)[0]

    def batch_put_tensor_with_tp(self, base_keys, tensors_list, tp_rank=0, tp_size=1,
                                 split_dim=0):
        if tp_size <= 1:
            return self.batch_put_tensor(base_keys, tensors_list)
        return self._put_shards(base_keys, tensors_list, None, tp_size, split_dim)

    def batch_pub_tensor_with_tp(self, base_keys, tensors_list, config=None, tp_rank=0,
                                 tp_size=1, split_dim=0):
        if tp_size <= 1:
            return self.batch_pub_tensor(base_keys, tensors_list, config)
        return self._put_shards(base_keys, tensors_list, config, tp_size, split_dim)

    # --- reads ---------------------------------------------------------------
    @staticmethod
    def _tensor_of(handle):
        """The tensor a BufferHandle holds, or None."""
        if handle is None:
            return None
        layout = fmt.decode(handle)
        return fmt.to_tensor(handle, layout) if layout else None

    def get_tensor(self, key):
        _require_torch()
        return self._tensor_of(self.get_buffer(key))

    def batch_get_tensor(self, keys):
        _require_torch()
        return [self._tensor_of(h) for h in self.batch_get_buffer(list(keys))]

    def get_tensor_with_tp(self, key, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor(key if tp_size <= 1 else _tp_key(key, tp_rank))

    def batch_get_tensor_with_tp(self, base_keys, tp_rank=0, tp_size=1):
        keys = list(base_keys) if tp_size <= 1 else [_tp_key(k, tp_rank) for k in base_keys]
        return self.batch_get_tensor(keys)

    @staticmethod
    def _tensor_at(address, length):
        """A tensor over the object get_into wrote at address (length bytes,
        or a negative code: None)."""
        if length < 0:
            return None
        layout = fmt.decode(_memory(address, length))
        return fmt.view_tensor(address, layout) if layout else None

    def get_tensor_into(self, key, buffer_ptr, size):
        _require_torch()
        return self._tensor_at(buffer_ptr, self.get_into(key, buffer_ptr, size))

    def batch_get_tensor_into(self, keys, buffer_ptrs, sizes):
        """Tensors (None for a failed read); a list of -600 when the three
        lists differ in length, as Mooncake answers."""
        _require_torch()
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [_INVALID_PARAMS] * len(keys)
        lengths = self.batch_get_into(list(keys), list(buffer_ptrs), list(sizes))
        return [self._tensor_at(p, n) for p, n in zip(buffer_ptrs, lengths)]

    def get_tensor_with_tp_into(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor_into(key if tp_size <= 1 else _tp_key(key, tp_rank),
                                    buffer_ptr, size)

    def batch_get_tensor_with_tp_into(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1):
        keys = list(base_keys) if tp_size <= 1 else [_tp_key(k, tp_rank) for k in base_keys]
        return self.batch_get_tensor_into(keys, buffer_ptrs, sizes)

    # --- from registered memory holding a tensor object ------------------------
    def _object_at(self, address, size):
        """The Layout of the tensor object in registered memory, or None
        (unregistered memory is never read)."""
        _require_torch()
        if size <= 0 or not self._store.is_registered(address, size):
            return None
        return fmt.decode(_memory(address, size))

    def _from(self, keys, buffer_ptrs, sizes, batch_put):
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            return [_INVALID_PARAMS] * len(keys)
        valid = [i for i in range(len(keys)) if self._object_at(buffer_ptrs[i], sizes[i])]
        codes = [_INVALID_PARAMS] * len(keys)
        if valid:
            done = batch_put([keys[i] for i in valid], [buffer_ptrs[i] for i in valid],
                             [sizes[i] for i in valid])
            for i, code in zip(valid, done):
                codes[i] = code
        return codes

    def put_tensor_from(self, key, buffer_ptr, size):
        return self._from([key], [buffer_ptr], [size], self.batch_put_from)[0]

    def batch_put_tensor_from(self, keys, buffer_ptrs, sizes):
        return self._from(list(keys), list(buffer_ptrs), list(sizes), self.batch_put_from)

    def upsert_tensor_from(self, key, buffer_ptr, size):
        return self._from([key], [buffer_ptr], [size], self.batch_upsert_from)[0]

    def batch_upsert_tensor_from(self, keys, buffer_ptrs, sizes):
        return self._from(list(keys), list(buffer_ptrs), list(sizes), self.batch_upsert_from)

    def _shards_from(self, base_keys, buffer_ptrs, sizes, tp_size, split_dim):
        """Splits each full tensor object in registered memory into TP
        shards (copied out: a shard along an inner dimension is not
        contiguous there) and puts them."""
        if not len(base_keys) == len(buffer_ptrs) == len(sizes):
            return [_INVALID_PARAMS] * len(base_keys)
        tensors = []
        for ptr, size in zip(buffer_ptrs, sizes):
            layout = self._object_at(ptr, size)
            full = layout is not None and layout.kind == fmt.FULL \
                and layout.global_shape == layout.local_shape
            tensors.append(fmt.view_tensor(ptr, layout) if full else None)
        return self._put_shards(list(base_keys), tensors, None, tp_size, split_dim)

    def put_tensor_with_tp_from(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
        if tp_size <= 1:
            return self.put_tensor_from(key, buffer_ptr, size)
        return self._shards_from([key], [buffer_ptr], [size], tp_size, split_dim)[0]

    def batch_put_tensor_with_tp_from(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1,
                                      split_dim=0):
        if tp_size <= 1:
            return self.batch_put_tensor_from(base_keys, buffer_ptrs, sizes)
        return self._shards_from(base_keys, buffer_ptrs, sizes, tp_size, split_dim)


def _require_torch():
    if fmt is None:
        raise ImportError("the tensor calls need torch: %s" % _IMPORT_ERROR)
