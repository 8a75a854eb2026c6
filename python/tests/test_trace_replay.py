"""shelfmark.trace_replay's own parts (block bytes, capacity, percentiles,
codes, flags) and its failures without a cluster. The replay through a real
master and node: test_trace_replay_cluster.py."""

import json
import subprocess
import sys

import pytest

from conftest import dead_master_addr
from shelfmark.trace_replay import (BlockPattern, Stats, capacity_from_segment, code_name,
                                    count_wrong_bytes, main, percentile)


def test_block_bytes_are_deterministic_and_distinct():
    p = BlockPattern(4096)
    a, b = p.block(7), p.block(8)
    assert len(a) == len(b) == 4096
    assert a == BlockPattern(4096).block(7)  # another process writes the same bytes
    assert count_wrong_bytes(a, b) > 4000  # not just the header
    assert BlockPattern(32 << 10).block(7)[:8] == a[:8]  # the id, whatever the size
    assert BlockPattern(16).block(3) == (3).to_bytes(8, "little") + (16).to_bytes(8, "little")
    with pytest.raises(ValueError):
        BlockPattern(15)


def test_count_wrong_bytes():
    want = bytes(range(256)) * 16
    got = bytearray(want)
    assert count_wrong_bytes(bytes(got), want) == 0
    got[0] ^= 1
    got[100] ^= 0xFF
    got[-1] = (got[-1] + 1) % 256
    assert count_wrong_bytes(bytes(got), want) == 3
    # A read shifted by one byte within the block is wrong almost everywhere.
    p = BlockPattern(4096)
    assert count_wrong_bytes(p.block(5)[1:] + b"\0", p.block(5)) > 4000


def test_capacity_from_segment():
    assert capacity_from_segment(40960000, 4096) == 10000
    assert capacity_from_segment(40960000 + 4095, 4096) == 10000
    # 100-byte blocks take 128 bytes of segment (64-byte allocation unit).
    assert capacity_from_segment(12800, 100) == 100


def test_percentile_and_stats():
    assert percentile([], 99) == 0.0
    values = list(range(1, 101))
    assert [percentile(values, q) for q in (50, 99, 100)] == [50, 99, 100]
    assert percentile([3.0], 50) == 3.0
    a, b = Stats(), Stats()
    a.hits, b.hits = 2, 3
    a.puts_refused["NO_AVAILABLE_HANDLE"] += 1
    b.puts_refused["NO_AVAILABLE_HANDLE"] += 2
    a.latencies_s, b.latencies_s = [1.0], [2.0]
    s = a + b
    assert (s.hits, s.latencies_s) == (5, [1.0, 2.0])
    assert s.puts_refused == {"NO_AVAILABLE_HANDLE": 3}


def test_code_names_in_mooncake_numbering():
    assert code_name(-200) == "NO_AVAILABLE_HANDLE"
    assert code_name(-705) == "OBJECT_ALREADY_EXISTS"
    assert code_name(-601) == "ILLEGAL_CLIENT"  # Mooncake's number for Shelfmark's -1000
    assert code_name(-123456) == "-123456"


def _trace(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "hash_ids": [1, 2, i]}) + "\n"
                            for i in range(3, 6)))
    return str(path)


def test_failures_without_a_cluster(tmp_path, capsys):
    trace = _trace(tmp_path)
    # No master: exit 1 with the reason.
    assert main([trace, "--master", dead_master_addr(), "--capacity_blocks=10"]) == 1
    assert "cannot set up a store" in capsys.readouterr().err
    # A trace that cannot be read: exit 1, naming the line.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hash_ids": [1]}\n{"hash_ids": 5}\n')
    assert main([str(bad), "--capacity_blocks=10"]) == 1
    assert "bad.jsonl:2" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [
    [],                                                    # no capacity
    ["--capacity_blocks=10", "--segment_size=1MB"],        # both
    ["--capacity_blocks=0"],
    ["--capacity_blocks=10", "--block_size=8"],
    ["--capacity_blocks=10", "--block_size=4 parsecs"],
    ["--capacity_blocks=10", "--speedup=0"],
    ["--capacity_blocks=10", "--timestamps=sometimes"],
    ["--segment_size=1MB", "--eviction_high_watermark_ratio=0.9"],  # not the tool's flag
    ["--capacity_blocks=10", "--ssd_capacity_blocks=-1"],
])
def test_bad_flags_exit_2(tmp_path, flags):
    with pytest.raises(SystemExit) as e:
        main([_trace(tmp_path)] + flags)
    assert e.value.code == 2


def test_runs_as_a_module(tmp_path):
    """`python3 -m shelfmark.trace_replay` is the console entry
    shelfmark-replay (pyproject.toml) without installing."""
    out = subprocess.run([sys.executable, "-m", "shelfmark.trace_replay", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert "--capacity_blocks" in out.stdout and "--node_metrics" in out.stdout


# Through the session's master and node (conftest.py), a trace small enough
# to work out: [1,2,3] [1,2,3,4] [1,2,5] in a cache that never fills hits
# 0 + 3 + 2 = 5 of 10 references and puts 3 + 1 + 1 blocks.
SMALL = [[1, 2, 3], [1, 2, 3, 4], [1, 2, 5]]


def _replay(capsys, tmp_path, master_addr, *flags):
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 100 * i, "hash_ids": ids}) + "\n"
                            for i, ids in enumerate(SMALL)))
    rc = main([str(path), "--master", master_addr, "--block_size=4096", "--capacity_blocks=100",
               "--json"] + list(flags))
    return rc, json.loads(capsys.readouterr().out)


def test_replay_of_a_known_trace(capsys, tmp_path, master_addr, prefix):
    rc, r = _replay(capsys, tmp_path, master_addr, "--key_prefix=" + prefix)
    assert rc == 0
    assert (r["hits"], r["block_references"], r["hit_rate"]) == (5, 10, 0.5)
    assert (r["lru_hit_rate"], r["belady_hit_rate"], r["hit_over_lru"]) == (0.5, 0.5, 1.0)
    assert (r["blocks_read"], r["blocks_put"], r["puts_accepted"]) == (5, 5, 5)
    assert (r["wrong_bytes"], r["puts_refused"], r["read_failures"]) == (0, {}, {})
    assert r["local_disk_blocks"] is None  # no --node_metrics: the split is unknown
    # Again on the same keys: every block is cached now, the first
    # request's included: 10 hits, nothing put.
    rc, r = _replay(capsys, tmp_path, master_addr, "--key_prefix=" + prefix)
    assert (rc, r["hits"], r["blocks_put"], r["wrong_bytes"]) == (0, 10, 0, 0)


def test_wrong_bytes_are_counted_and_fail_the_run(capsys, tmp_path, master_addr, prefix):
    """Block 1's key holds zeros: each of the three requests reads it, finds
    it wrong (so it is no hit and nothing after it is either), and its put
    is refused (the object exists)."""
    import shelfmark
    with shelfmark.Store(master_addr, local_buffer_size="1MB") as s:
        s.put(prefix + "1", bytes(4096))
    rc, r = _replay(capsys, tmp_path, master_addr, "--key_prefix=" + prefix)
    assert rc == 3
    wrong = count_wrong_bytes(bytes(4096), BlockPattern(4096).block(1))
    assert wrong > 4000
    assert (r["wrong_bytes"], r["hits"]) == (3 * wrong, 0)
    assert r["puts_refused"] == {"OBJECT_ALREADY_EXISTS": 3}


def test_threads_and_honoured_timestamps(capsys, tmp_path, master_addr, prefix):
    # Three threads: which request sees which block first is a race, the
    # bytes are not.
    rc, r = _replay(capsys, tmp_path, master_addr, "--key_prefix=" + prefix, "--concurrency=3")
    assert (rc, r["block_references"], r["wrong_bytes"], r["concurrency"]) == (0, 10, 0, 3)
    assert r["puts_accepted"] == 5  # each block once: a refused duplicate is OBJECT_ALREADY_EXISTS
    # At the trace's own pace the last request starts 200 ms after the first.
    rc, r = _replay(capsys, tmp_path, master_addr, "--key_prefix=x" + prefix,
                    "--timestamps=honour", "--speedup=1")
    assert (rc, r["hits"], r["speedup"]) == (0, 5, 1.0)
    assert r["wall_s"] >= 0.2 and "lag_p99_ms" in r
