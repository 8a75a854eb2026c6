"""Request traces in the Mooncake FAST'25 format (kvcache-ai/Mooncake,
FAST25-release/traces): one JSON object a line,

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}

`timestamp`: the request's arrival in ms; `hash_ids`: the ids of its KV
blocks (512 tokens each in the paper's traces) in prompt order. Prefix
caching: a block is reusable only when every block before it in the request
is cached too.

read_trace() checks every line and raises TraceError (a ValueError) naming
the file and line of the first bad one; nothing is half-read.
"""

import json
from collections import namedtuple

__all__ = ["Request", "TraceError", "read_trace", "parse_trace"]

# hash_ids is a tuple of ints; input_length / output_length are kept for
# reports (None when the line has none).
Request = namedtuple("Request", "timestamp_ms hash_ids input_length output_length")


class TraceError(ValueError):
    """A trace that cannot be read: the file, line and what is wrong."""


def _int(value, what, where, minimum=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TraceError("%s: %s must be an integer >= %d, not %r" % (where, what, minimum, value))
    return value


def _optional_int(obj, name, where):
    return None if obj.get(name) is None else _int(obj[name], name, where)


def _request(line, where):
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise TraceError("%s: not JSON (%s)" % (where, e)) from None
    if not isinstance(obj, dict):
        raise TraceError("%s: not a JSON object" % where)
    if "hash_ids" not in obj or not isinstance(obj["hash_ids"], list):
        raise TraceError("%s: no hash_ids list" % where)
    ids = tuple(_int(h, "a hash id", where) for h in obj["hash_ids"])
    timestamp = _int(obj.get("timestamp", 0), "timestamp", where)
    return Request(timestamp, ids, _optional_int(obj, "input_length", where),
                   _optional_int(obj, "output_length", where))


def parse_trace(lines, name="<trace>"):
    """The requests of an iterable of lines (blank lines skipped), in order.
    Timestamps must not go backwards (the replay paces by them)."""
    requests = []
    last = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = "%s:%d" % (name, number)
        r = _request(line, where)
        if r.timestamp_ms < last:
            raise TraceError("%s: timestamp %d is before the previous line's %d"
                             % (where, r.timestamp_ms, last))
        last = r.timestamp_ms
        requests.append(r)
    return requests


def read_trace(path):
    """The requests of the trace file at `path` (TraceError, or OSError when
    it cannot be opened)."""
    with open(path, encoding="utf-8") as f:
        return parse_trace(f, name=str(path))
