"""shelfmark.trace (the trace reader) and shelfmark.trace_sim (offline cache
policies): hand-made traces whose answers are worked out in the comments,
and the repository's copy of Mooncake's synthetic trace against its
published figures. Pure Python: no cluster."""

import json
import os

import pytest

from shelfmark.trace import Request, TraceError, parse_trace, read_trace
from shelfmark.trace_sim import (POLICIES, CachePolicy, LruPolicy, distinct_blocks, main,
                                 prefix_hits, simulate)

SYNTHETIC = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data",
                         "mooncake_synthetic_trace.jsonl")


def trace(*requests):
    return [Request(i, tuple(ids), None, None) for i, ids in enumerate(requests)]


def hits(requests, capacity, policy):
    return simulate(requests, capacity, policy).hits


# [1,2] [1,2] [3] [1,2] with 2 blocks:
#  lru:    0, 2 (both cached), 0 (3 evicts 1), 0 (1 is missing: 2 is
#          cached but after a gap) -> 2
#  fifo:   the same evictions -> 2
#  belady: 3 is never used again, so it is dropped at once -> 0 + 2 + 0 + 2
PREFIX = trace([1, 2], [1, 2], [3], [1, 2])


def test_prefix_rule_and_policies_on_a_known_trace():
    assert hits(PREFIX, 2, "lru") == 2
    assert hits(PREFIX, 2, "fifo") == 2
    assert hits(PREFIX, 2, "belady") == 4
    r = simulate(PREFIX, 2, "lru")
    assert (r.references, r.hit_rate) == (7, 2 / 7)


def test_lru_and_fifo_differ_on_a_touch():
    # [1] [2] [1] [3] [1] with 2 blocks: the third request touches 1.
    #  lru keeps 1 (evicts 2 for 3) -> hits at requests 3 and 5;
    #  fifo evicts 1 (inserted first) for 3 -> a hit at request 3 only.
    t = trace([1], [2], [1], [3], [1])
    assert hits(t, 2, "lru") == 2
    assert hits(t, 2, "fifo") == 1
    assert hits(t, 2, "belady") == 2


def test_belady_beats_lru_on_a_cycle():
    # A cycle one block longer than the cache: LRU always evicts the block
    # needed next (0 hits); Belady keeps 1 and 2 and drops 3 -> 2 hits.
    t = trace([1], [2], [3], [1], [2], [3])
    assert hits(t, 2, "lru") == 0
    assert hits(t, 2, "belady") == 2


def test_2q_keeps_a_reused_block_through_a_scan():
    # 5 blocks, probation may hold 1 before it goes first. Block 1 is used
    # twice, then six one-time blocks pass, then 1 again.
    #  lru: the scan's 6th insertion evicts 1 -> only the second use hits;
    #  2q:  1 is protected after its touch; the scan evicts its own blocks
    #       (probation beyond its share) -> the last use hits too.
    t = trace([1], [1], [2], [3], [4], [5], [6], [7], [1])
    assert hits(t, 5, "lru") == 1
    assert hits(t, 5, "2q") == 2


def test_2q_remembers_what_probation_evicted():
    # 3 blocks (probation share 0.6 block). 1 is evicted from probation by
    # 4, comes back (a ghost: enters protected), then a scan of 5, 6 and 7
    # passes: 1 survives it and hits. Without the ghost it would re-enter
    # probation and go with the scan, as under LRU.
    t = trace([1], [2], [3], [4], [1], [5], [6], [7], [1])
    assert hits(t, 3, "2q") == 1
    assert hits(t, 3, "lru") == 0


def test_unbounded_and_zero_capacity():
    # Each request extends the one before: 0 + 2 + 3 hits of 2 + 3 + 4.
    t = trace([1, 2], [1, 2, 3], [1, 2, 3, 4])
    for policy in POLICIES:
        assert simulate(t, None, policy).hits == 5
        assert simulate(t, 0, policy).hits == 0
    assert distinct_blocks(t) == 4


def test_a_request_longer_than_the_cache():
    # [1,2,3] twice with 2 blocks: LRU ends the first request holding 2, 3;
    # the second misses 1 and gets nothing (prefix rule). Belady keeps 1
    # and 2 (3's next use is the farthest) -> 2 hits.
    t = trace([1, 2, 3], [1, 2, 3])
    assert hits(t, 2, "lru") == 0
    assert hits(t, 2, "belady") == 2


def test_prefix_hits():
    assert prefix_hits({1, 2, 4}, (1, 2, 3, 4)) == 2
    assert prefix_hits(set(), (1,)) == 0
    assert prefix_hits({1}, ()) == 0


def test_bad_policy_and_capacity():
    with pytest.raises(KeyError, match="unknown policy 'mru'"):
        simulate(PREFIX, 2, "mru")
    with pytest.raises(ValueError, match="capacity"):
        simulate(PREFIX, -1, "lru")


def test_a_new_policy_plugs_in(monkeypatch):
    class NoCache(LruPolicy):
        """Caches nothing: every request misses."""
        name = "none"

        def access(self, block, position):
            pass

    monkeypatch.setitem(POLICIES, NoCache.name, NoCache)
    assert issubclass(NoCache, CachePolicy)
    assert hits(PREFIX, 2, "none") == 0


def test_trace_reader_rejects_bad_lines(tmp_path):
    good = '{"timestamp": 5, "input_length": 1024, "output_length": 3, "hash_ids": [7, 8]}\n'
    cases = {
        "not json": "not JSON",
        "[1, 2]": "not a JSON object",
        '{"timestamp": 1}': "no hash_ids",
        '{"hash_ids": [1, -2]}': "hash id must be an integer >= 0",
        '{"hash_ids": [1, "a"]}': "hash id",
        '{"hash_ids": [1], "timestamp": 1.5}': "timestamp",
        '{"hash_ids": [1], "timestamp": 1}': "before the previous line's 5",
    }
    for line, message in cases.items():
        with pytest.raises(TraceError, match=message) as e:
            parse_trace([good, line], name="t.jsonl")
        assert "t.jsonl:2" in str(e.value)
    path = tmp_path / "t.jsonl"
    path.write_text(good + good)
    assert [r.hash_ids for r in read_trace(str(path))] == [(7, 8), (7, 8)]


def test_trace_reader_keeps_lengths_and_skips_blank_lines():
    line = '{"timestamp": 5, "input_length": 1024, "output_length": 3, "hash_ids": [7, 8]}'
    assert parse_trace([line, "\n", '{"timestamp": 5, "hash_ids": []}']) == [
        Request(5, (7, 8), 1024, 3), Request(5, (), None, None)]


def test_synthetic_trace_published_figures():
    """The figures of the trace's release notes (tests/data/README.md)."""
    requests = read_trace(SYNTHETIC)
    assert len(requests) == 3993
    assert sum(len(r.hash_ids) for r in requests) == 121877
    assert distinct_blocks(requests) == 43924
    assert round(simulate(requests, None).hit_rate, 4) == 0.6396
    assert round(simulate(requests, 10000, "lru").hit_rate, 4) == 0.4235
    assert round(simulate(requests, 30000, "lru").hit_rate, 4) == 0.6242
    assert round(simulate(requests, 10000, "belady").hit_rate, 3) == 0.618
    # shelfmark-master's default policy, offline: above LRU at both sizes.
    assert round(simulate(requests, 10000, "2q").hit_rate, 4) == 0.4341
    assert round(simulate(requests, 30000, "2q").hit_rate, 4) == 0.626


def test_command_line(capsys, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "hash_ids": ids}) + "\n"
                            for i, ids in enumerate([[1], [2], [3], [1], [2], [3]])))
    assert main([str(path), "--capacity_blocks=2", "--policy=lru,belady", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["policy"], x["capacity"], x["hits"]) for x in lines] == [
        ("lru", 2, 0), ("belady", 2, 2)]
    assert main([str(tmp_path / "missing.jsonl"), "--capacity_blocks=2"]) == 1
    with pytest.raises(SystemExit):
        main([str(path), "--capacity_blocks=2", "--policy=mru"])
