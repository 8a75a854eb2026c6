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
    # 10,000 blocks of 4 KiB at the master's 0.9 watermark.
    assert capacity_from_segment(45514752, 4096) == 10000
    assert capacity_from_segment(45514752, 4096, watermark=1.0) == 11112
    # 100-byte blocks take 128 bytes of segment (64-byte allocation unit).
    assert capacity_from_segment(12800, 100, watermark=1.0) == 100


def test_percentile_and_stats():
    assert percentile([], 99) == 0.0
    values = list(range(1, 101))
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50, 99, 100)
    assert percentile([3.0], 50) == 3.0
    a, b = Stats(), Stats()
    a.hits, b.hits = 2, 3
    a.puts_refused["NO_AVAILABLE_HANDLE"] += 1
    b.puts_refused["NO_AVAILABLE_HANDLE"] += 2
    a.latencies_s, b.latencies_s = [1.0], [2.0]
    s = a + b
    assert (s.hits, dict(s.puts_refused), s.latencies_s) == (5, {"NO_AVAILABLE_HANDLE": 3}, [1.0, 2.0])


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
    ["--segment_size=1MB", "--eviction_high_watermark_ratio=1.5"],
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
