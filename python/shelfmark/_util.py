"""Helpers shared by `shelfmark` and `mooncake.store`: size strings and the
memory behind Python buffers (bytes-likes, numpy arrays, torch tensors)."""

import ctypes
import os
import re

import _shelfmark as _native

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}


def parse_size(value, name="size"):
    """Bytes from an int or a size string: 4096, "4096", "16MB", "16 MB",
    "1.5gb", "512k", "2GiB" (binary units, as Mooncake's config reads them).
    Refuses anything else, such as "50%" or a negative size (ValueError)."""
    if isinstance(value, bool):
        raise ValueError("%s: %r is not a size" % (name, value))
    if isinstance(value, int):
        size = value
    elif isinstance(value, float):
        size = int(value)
    elif isinstance(value, str):
        m = _SIZE.match(value)
        unit = m.group(2).lower() if m else None
        if not m or unit not in _UNITS:
            raise ValueError("%s: %r is not a size (bytes, or a number with "
                             "B, KB, MB, GB or TB)" % (name, value))
        size = int(float(m.group(1)) * _UNITS[unit])
    else:
        raise ValueError("%s: %r is not a size" % (name, value))
    if size < 0:
        raise ValueError("%s: %r is negative" % (name, value))
    return size


def _is_tensor(obj):
    return type(obj).__name__ in ("Tensor", "Parameter") and hasattr(obj, "data_ptr")


def address_of(obj, writable=False):
    """(address, nbytes) of the memory of a C-contiguous buffer: a bytes-like
    object, a numpy array, or a torch CPU tensor. The caller keeps `obj`
    alive while the address is in use."""
    if _is_tensor(obj):
        if obj.device.type != "cpu":
            raise ValueError("only CPU tensors are supported (got %s)" % obj.device)
        if not obj.is_contiguous():
            raise ValueError("the tensor is not contiguous")
        return obj.data_ptr(), obj.numel() * obj.element_size()
    return tuple(_native.buffer_address(obj, writable))


def as_buffer(obj):
    """An object with the buffer protocol over obj's bytes (torch tensors
    become a ctypes view of their memory; the caller keeps `obj` alive)."""
    if _is_tensor(obj):
        ptr, n = address_of(obj)
        return (ctypes.c_char * n).from_address(ptr) if n else b""
    return obj


def store_options(*, master, protocol, tenant, local_buffer_size, global_segment_size,
                  rpc_timeout_ms, transfer_timeout_ms, cluster_token, master_token, device,
                  hostname, cluster_id=None, follow_leader_hints=None):
    """The native StoreOptions; tokens default to $SHELFMARK_CLUSTER_TOKEN /
    $SHELFMARK_MASTER_TOKEN when None, sizes are parse_size's. master is
    "host:port" or "etcd://H:P[;H:P...]" (follow the leader of cluster_id
    published there; None or "": $SHELFMARK_CLUSTER_ID, else
    $MC_STORE_CLUSTER_ID, else "shelfmark", resolved by the native side)."""
    o = _native.StoreOptions()
    o.master = master
    o.cluster_id = cluster_id or ""
    o.follow_leader_hints = (bool(follow_leader_hints) if follow_leader_hints is not None
                             else os.environ.get("SHELFMARK_FOLLOW_LEADER_HINTS", "") == "1")
    o.protocol = protocol
    o.tenant = tenant
    o.local_buffer_bytes = parse_size(local_buffer_size, "local_buffer_size")
    o.global_segment_bytes = parse_size(global_segment_size, "global_segment_size")
    o.rpc_timeout_ms = int(rpc_timeout_ms)
    o.transfer_timeout_ms = int(transfer_timeout_ms)
    o.cluster_token = (cluster_token if cluster_token is not None
                       else os.environ.get("SHELFMARK_CLUSTER_TOKEN", ""))
    o.master_token = (master_token if master_token is not None
                      else os.environ.get("SHELFMARK_MASTER_TOKEN", ""))
    o.device = device
    o.local_hostname = hostname
    return o

