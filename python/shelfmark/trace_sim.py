"""Offline prefix-cache simulators over a request trace (shelfmark.trace):
what a cache of `capacity` blocks under a given eviction policy would have
served, the bounds the replay tool (shelfmark.trace_replay) sets a real
cluster against.

The model, per request in trace order:
  1. lookup: the request's hit is the length of the longest prefix of its
     hash_ids that is cached (prefix caching: a block after a missing one
     cannot be used);
  2. every block of the request, in prompt order, is then touched (cached)
     or inserted (missing), an insertion into a full cache evicting the
     policy's victim first.
Prefix hit rate = sum of the hits / sum of the requests' lengths (every
block reference counts, so a cache that held everything still misses each
block's first use).

Policies (POLICIES; simulate(..., policy=NAME)):
  lru     evicts the least recently touched or inserted block;
  fifo    evicts the block inserted first (touches do not count);
  2q      shelfmark-master's --eviction_policy=2q, one block at a time:
          blocks used once (inserted, never touched since) wait in a
          probation queue that may hold PROBATION_RATIO of the capacity
          before they go ahead of the rest; a touched block moves to the
          protected queue; each queue evicts its least recent first (probation
          beyond its share, then protected, then probation); a block evicted
          from probation is remembered (as many as the capacity) and enters
          protected when it comes back;
  belady  evicts the block whose next use is farthest in the future (never
          used again first): Belady's MIN, which knows the whole trace. It
          is optimal for block hits; for prefix hits it is a strong bound,
          not a proven optimum (it may keep a block whose predecessor it
          dropped).
A new policy is a CachePolicy subclass registered in POLICIES.

    python3 -m shelfmark.trace_sim TRACE --capacity_blocks=10000,30000 \\
        [--policy=lru,belady] [--json]
"""

import argparse
import heapq
import json
import sys
from collections import OrderedDict, namedtuple

from shelfmark.trace import TraceError, read_trace

__all__ = ["CachePolicy", "LruPolicy", "FifoPolicy", "TwoQPolicy", "BeladyPolicy", "POLICIES",
           "SimResult",
           "simulate", "prefix_hits", "distinct_blocks"]

# capacity: the blocks the simulated cache held at most (None: unbounded).
SimResult = namedtuple("SimResult", "policy capacity hits references hit_rate")


class CachePolicy:
    """A cache of at most `capacity` block ids. `requests` is the whole trace
    (policies that look ahead, such as Belady's, read it; others ignore it).
    access(block, position) touches a cached block or inserts a missing one;
    `position` is the reference's index in the trace's blocks flattened in
    order (0, 1, 2, ... across requests)."""

    name = ""

    def __init__(self, capacity, requests):
        if capacity < 0:
            raise ValueError("capacity must be >= 0, not %r" % capacity)
        self.capacity = capacity

    def __contains__(self, block):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def access(self, block, position):
        raise NotImplementedError


class LruPolicy(CachePolicy):
    name = "lru"

    def __init__(self, capacity, requests):
        super().__init__(capacity, requests)
        self._order = OrderedDict()  # least recent first

    def __contains__(self, block):
        return block in self._order

    def __len__(self):
        return len(self._order)

    def access(self, block, position):
        if block in self._order:
            self._order.move_to_end(block)
            return
        if self.capacity == 0:
            return
        if len(self._order) >= self.capacity:
            self._order.popitem(last=False)
        self._order[block] = None


class FifoPolicy(LruPolicy):
    name = "fifo"

    def access(self, block, position):
        if block not in self._order:
            super().access(block, position)


class TwoQPolicy(CachePolicy):
    name = "2q"
    PROBATION_RATIO = 0.2  # shelfmark-master --eviction_probation_ratio's default

    def __init__(self, capacity, requests):
        super().__init__(capacity, requests)
        self._probation = OrderedDict()  # least recent first
        self._protected = OrderedDict()
        self._ghosts = OrderedDict()  # evicted from probation, oldest first

    def __contains__(self, block):
        return block in self._probation or block in self._protected

    def __len__(self):
        return len(self._probation) + len(self._protected)

    def _evict(self):
        over = len(self._probation) > self.PROBATION_RATIO * self.capacity
        if self._probation and (over or not self._protected):
            victim, _ = self._probation.popitem(last=False)
            self._ghosts[victim] = None
            if len(self._ghosts) > self.capacity:
                self._ghosts.popitem(last=False)
        else:
            self._protected.popitem(last=False)

    def access(self, block, position):
        if block in self._protected:
            self._protected.move_to_end(block)
        elif block in self._probation:
            del self._probation[block]
            self._protected[block] = None
        elif self.capacity > 0:
            if len(self) >= self.capacity:
                self._evict()
            if self._ghosts.pop(block, False) is None:
                self._protected[block] = None
            else:
                self._probation[block] = None


class BeladyPolicy(CachePolicy):
    name = "belady"

    def __init__(self, capacity, requests):
        super().__init__(capacity, requests)
        self._next_use = _next_uses(requests)
        self._cached = {}  # block -> its next use (a position; never: len(trace))
        self._farthest = []  # heap of (-next use, block); stale entries skipped

    def __contains__(self, block):
        return block in self._cached

    def __len__(self):
        return len(self._cached)

    def access(self, block, position):
        if self.capacity == 0:
            return
        nxt = self._next_use[position]
        self._cached[block] = nxt
        heapq.heappush(self._farthest, (-nxt, block))
        # The block just inserted is a candidate too: dropping it at once is
        # not caching it, the right move when its next use is the farthest.
        while len(self._cached) > self.capacity:
            neg, victim = heapq.heappop(self._farthest)
            if self._cached.get(victim) == -neg:
                del self._cached[victim]


def _next_uses(requests):
    """For each position of the flattened trace, the position of the same
    block's next reference (len(trace) when there is none)."""
    flat = [b for r in requests for b in r.hash_ids]
    never = len(flat)
    next_use = [never] * len(flat)
    seen = {}
    for position in range(len(flat) - 1, -1, -1):
        block = flat[position]
        next_use[position] = seen.get(block, never)
        seen[block] = position
    return next_use


POLICIES = {p.name: p for p in (LruPolicy, FifoPolicy, TwoQPolicy, BeladyPolicy)}


def prefix_hits(cache, hash_ids):
    """How many leading blocks of `hash_ids` are in `cache`."""
    n = 0
    for block in hash_ids:
        if block not in cache:
            break
        n += 1
    return n


def distinct_blocks(requests):
    return len({b for r in requests for b in r.hash_ids})


def simulate(requests, capacity, policy="lru"):
    """The SimResult of `requests` (shelfmark.trace.Request, or anything
    with hash_ids) through a cache of `capacity` blocks (None: unbounded)
    under the policy named `policy` (a POLICIES key; KeyError otherwise)."""
    if policy not in POLICIES:
        raise KeyError("unknown policy %r (known: %s)" % (policy, ", ".join(sorted(POLICIES))))
    size = distinct_blocks(requests) if capacity is None else capacity
    cache = POLICIES[policy](size, requests)
    hits = references = position = 0
    for r in requests:
        hits += prefix_hits(cache, r.hash_ids)
        references += len(r.hash_ids)
        for block in r.hash_ids:
            cache.access(block, position)
            position += 1
    return SimResult(policy, capacity, hits, references, hits / references if references else 0.0)


def _counts(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a list of block counts" % text) from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError("%r: block counts must be >= 0" % text)
    return values


def _policies(text):
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in POLICIES]
    if not names or unknown:
        raise argparse.ArgumentTypeError("unknown policy %s (known: %s)" % (
            ", ".join(unknown) or "''", ", ".join(sorted(POLICIES))))
    return names


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m shelfmark.trace_sim",
        description="Offline prefix hit rates of a Mooncake-format trace under cache policies.")
    p.add_argument("trace", help="JSON lines: timestamp, hash_ids (shelfmark.trace)")
    p.add_argument("--capacity_blocks", type=_counts, required=True,
                   help="cache sizes in blocks, comma-separated")
    p.add_argument("--policy", type=_policies, default=sorted(POLICIES),
                   help="policies, comma-separated (default: all: %s)" % ",".join(sorted(POLICIES)))
    p.add_argument("--json", action="store_true", help="one JSON line per result")
    args = p.parse_args(argv)
    try:
        requests = read_trace(args.trace)
    except (OSError, TraceError) as e:
        print("trace_sim: %s" % e, file=sys.stderr)
        return 1
    unbounded = simulate(requests, None)
    if not args.json:
        print("%d requests, %d block references, %d distinct blocks; unbounded cache: %.4f"
              % (len(requests), unbounded.references, distinct_blocks(requests),
                 unbounded.hit_rate))
        print("%-8s %10s %9s" % ("policy", "capacity", "hit rate"))
    for capacity in args.capacity_blocks:
        for name in args.policy:
            r = simulate(requests, capacity, name)
            if args.json:
                print(json.dumps(r._asdict()))
            else:
                print("%-8s %10d %9.4f" % (name, capacity, r.hit_rate))
    return 0


if __name__ == "__main__":
    sys.exit(main())
