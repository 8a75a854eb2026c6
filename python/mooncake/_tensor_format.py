"""The byte layout of a tensor object, as Mooncake's store writes it, so a
tensor put through `mooncake.store` reads back in Mooncake (and the other
way round):

    [TensorObjectHeader][TensorLayoutMetadata][the tensor's bytes, C order]

All fields little-endian, naturally aligned (the C structs' layout on
x86-64 and aarch64), 304 bytes before the data:

    TensorObjectHeader (40 bytes): u32 magic 0x4d4f4f4e, u16 version 1,
      u16 header_size 304, i32 dtype, i32 ndim, u32 layout_kind (0 FULL,
      1 SHARD), u32 reserved_flags 0, u64 data_offset 304, u64 data_bytes
    TensorLayoutMetadata (264 bytes): i64 global_shape[8], i64
      local_shape[8] (-1 past ndim), u32 axis_count, u32 reserved,
      LayoutAxis axes[4]
    LayoutAxis (32 bytes): i32 kind (0 DP, 1 TP, 2 EP, 3 PP), i32
      axis_index, i32 shard_rank, i32 shard_count, i32 split_dim (-1: none),
      i32 reserved0, i64 reserved1 (the shard's extent along split_dim)

Readers also accept Mooncake's earlier layout (no magic: i32 dtype, i32
ndim, i64 shape[4], then the bytes; 40 bytes), which a store written by an
older Mooncake holds. Writers always write the current one.
"""

import struct

import numpy as np
import torch

MAGIC = 0x4D4F4F4E
VERSION = 1
MAX_DIMS = 8
MAX_AXES = 4
FULL, SHARD = 0, 1
AXIS_DP, AXIS_TP, AXIS_EP, AXIS_PP = 0, 1, 2, 3

_HEADER = struct.Struct("<IHHiiIIQQ")
_SHAPE = struct.Struct("<8q")
_AXES_HEAD = struct.Struct("<II")
_AXIS = struct.Struct("<6iq")
HEADER_BYTES = _HEADER.size + 2 * _SHAPE.size + _AXES_HEAD.size + MAX_AXES * _AXIS.size
assert HEADER_BYTES == 304

_LEGACY = struct.Struct("<ii4q")
_LEGACY_MAX_DIMS = 4

# Mooncake's TensorDtype numbers. A dtype this torch lacks (float8 and the
# wide unsigned types arrived after torch 1.13) is neither written nor read.
_DTYPE_NAMES = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                "int64", "uint64", "bool", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
_CODE_OF = {}
_DTYPE_OF = {}
for _code, _name in enumerate(_DTYPE_NAMES):
    _dt = getattr(torch, _name, None)
    if isinstance(_dt, torch.dtype):
        _CODE_OF[_dt] = _code
        _DTYPE_OF[_code] = _dt


class Layout:
    """What a tensor object's header says: dtype, the full tensor's shape,
    this object's (local) shape, FULL or SHARD with its axes
    [(kind, rank, count, split_dim)], where the data starts and how long."""

    def __init__(self, dtype, global_shape, local_shape, kind=FULL, axes=(),
                 data_offset=HEADER_BYTES, data_bytes=0):
        self.dtype = dtype
        self.global_shape = tuple(global_shape)
        self.local_shape = tuple(local_shape)
        self.kind = kind
        self.axes = list(axes)
        self.data_offset = data_offset
        self.data_bytes = data_bytes


def dtype_code(dtype):
    """Mooncake's number for a torch dtype, or None where it has none."""
    return _CODE_OF.get(dtype)


def tensor_bytes(tensor):
    """(contiguous tensor, a uint8 numpy view of its bytes) of a CPU tensor;
    ValueError for anything that is not one, or a dtype Mooncake lacks."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError("not a torch tensor: %r" % type(tensor).__name__)
    if tensor.device.type != "cpu":
        raise ValueError("only CPU tensors are supported (got %s)" % tensor.device)
    if dtype_code(tensor.dtype) is None:
        raise ValueError("dtype %s has no Mooncake tensor code" % tensor.dtype)
    if tensor.dim() > MAX_DIMS:
        raise ValueError("a tensor has at most %d dimensions (got %d)" % (MAX_DIMS, tensor.dim()))
    t = tensor.detach().contiguous()
    return t, t.reshape(-1).view(torch.uint8).numpy()


def encode(layout):
    """The 304 header bytes of `layout`."""
    ndim = len(layout.global_shape)

    def shape(dims):
        return _SHAPE.pack(*(list(dims) + [-1] * (MAX_DIMS - len(dims))))

    axes = b"".join(_AXIS.pack(kind, i, rank, count, split_dim, 0,
                               layout.local_shape[split_dim] if split_dim >= 0 else 0)
                    for i, (kind, rank, count, split_dim) in enumerate(layout.axes))
    axes += bytes(_AXIS.size * (MAX_AXES - len(layout.axes)))
    return (_HEADER.pack(MAGIC, VERSION, HEADER_BYTES, _CODE_OF[layout.dtype], ndim, layout.kind,
                         0, HEADER_BYTES, layout.data_bytes)
            + shape(layout.global_shape) + shape(layout.local_shape)
            + _AXES_HEAD.pack(len(layout.axes), 0) + axes)


def full_layout(tensor):
    """The FULL layout of a (contiguous CPU) tensor."""
    shape = tuple(tensor.shape)
    return Layout(tensor.dtype, shape, shape, FULL, (),
                  data_bytes=tensor.numel() * tensor.element_size())


def shard_range(extent, rank, count):
    """(start, length) of shard `rank` of `count` along an axis of `extent`:
    Mooncake's split, shard r gets [extent*r/count, extent*(r+1)/count)."""
    start = extent * rank // count
    return start, extent * (rank + 1) // count - start


def tp_shards(tensor, tp_size, split_dim):
    """[(layout, contiguous shard)] of a CPU tensor split into tp_size TP
    shards along split_dim (Mooncake's ranges; a shard may be empty).
    ValueError when the split is impossible."""
    if tensor.dim() == 0 or not 0 <= split_dim < tensor.dim():
        raise ValueError("split_dim %d is not a dimension of a %d-d tensor"
                         % (split_dim, tensor.dim()))
    if tp_size < 1:
        raise ValueError("tp_size must be at least 1")
    extent = tensor.shape[split_dim]
    out = []
    for rank in range(tp_size):
        start, length = shard_range(extent, rank, tp_size)
        shard = tensor.narrow(split_dim, start, length).contiguous()
        layout = Layout(tensor.dtype, tuple(tensor.shape), tuple(shard.shape), SHARD,
                        [(AXIS_TP, rank, tp_size, split_dim)],
                        data_bytes=shard.numel() * shard.element_size())
        out.append((layout, shard))
    return out


def decode(data):
    """The Layout of a tensor object's bytes (anything with the buffer
    protocol; its length is the object's), or None when they are not a
    valid tensor object (Mooncake's checks: magic, version, sizes, dtype,
    shapes, axes; or the earlier layout's)."""
    view = memoryview(data).cast("B")
    total = len(view)
    if total >= 4 and struct.unpack_from("<I", view)[0] == MAGIC:
        return _decode_current(view, total)
    return _decode_legacy(view, total)


def _decode_current(view, total):
    if total < HEADER_BYTES:
        return None
    (_, version, header_size, code, ndim, kind, _, data_offset,
     data_bytes) = _HEADER.unpack_from(view)
    if (version != VERSION or header_size != HEADER_BYTES or code not in _DTYPE_OF
            or not 0 <= ndim <= MAX_DIMS or kind not in (FULL, SHARD)
            or not HEADER_BYTES <= data_offset <= total or data_bytes != total - data_offset):
        return None
    global_shape = _SHAPE.unpack_from(view, _HEADER.size)
    local_shape = _SHAPE.unpack_from(view, _HEADER.size + _SHAPE.size)
    if any(d <= 0 for d in global_shape[:ndim]) or any(d < 0 for d in local_shape[:ndim]):
        return None
    if any(d != -1 for d in global_shape[ndim:] + local_shape[ndim:]):
        return None
    axis_count, _ = _AXES_HEAD.unpack_from(view, _HEADER.size + 2 * _SHAPE.size)
    if axis_count > MAX_AXES:
        return None
    axes = []
    base = _HEADER.size + 2 * _SHAPE.size + _AXES_HEAD.size
    for i in range(axis_count):
        a_kind, _, rank, count, split_dim, _, _ = _AXIS.unpack_from(view, base + i * _AXIS.size)
        if not 0 <= a_kind <= 4 or count <= 0 or not 0 <= rank < count \
                or not -1 <= split_dim < ndim:
            return None
        axes.append((a_kind, rank, count, split_dim))
    layout = Layout(_DTYPE_OF[code], global_shape[:ndim], local_shape[:ndim], kind, axes,
                    data_offset, data_bytes)
    return layout if _fits(layout) else None


def _decode_legacy(view, total):
    if total <= _LEGACY.size:
        return None
    code, ndim, *shape = _LEGACY.unpack_from(view)
    if code not in _DTYPE_OF or not 0 <= ndim <= _LEGACY_MAX_DIMS:
        return None
    shape = tuple(shape[:ndim])
    if any(d < 0 for d in shape):
        return None
    layout = Layout(_DTYPE_OF[code], shape, shape, FULL, (), _LEGACY.size, total - _LEGACY.size)
    return layout if _fits(layout) else None


def _fits(layout):
    """The data is exactly local_shape's elements."""
    numel = 1
    for d in layout.local_shape:
        numel *= d
    return numel * torch.empty((), dtype=layout.dtype).element_size() == layout.data_bytes


def to_tensor(data, layout):
    """A new tensor (its own memory) holding the object's data."""
    out = torch.empty(layout.local_shape, dtype=layout.dtype)
    if layout.data_bytes:
        out.reshape(-1).view(torch.uint8).numpy()[:] = np.frombuffer(
            data, dtype=np.uint8, count=layout.data_bytes, offset=layout.data_offset)
    return out


def view_tensor(address, layout):
    """A tensor over the object's data where it lies in memory (at
    address + data_offset; no copy: the caller keeps that memory alive)."""
    if layout.data_bytes == 0:
        return torch.empty(layout.local_shape, dtype=layout.dtype)
    raw = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * layout.data_bytes)
                                .from_address(address + layout.data_offset))
    return torch.from_numpy(raw).view(layout.dtype).reshape(layout.local_shape)
