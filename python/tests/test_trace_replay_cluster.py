"""shelfmark-replay against a real shelfmark-master and shelfmark-node (ctest
python_trace_replay_test): the repository's copy of Mooncake's synthetic
trace (tests/data) replayed as an engine would, at 10,000 blocks of 4 KiB
of DRAM, with the master's default eviction settings.

Asserts what must hold whatever the eviction policy: every byte read is
right, every read came from the node's DRAM (no SSD tier here), the whole
trace was replayed at the capacity intended; then that the cluster's prefix
hit rate is at least 0.95 of an offline LRU cache of the same capacity
(issue 27: eviction must keep what will be reused at least as well as LRU).

Capacity: a segment of exactly 10,000 x 4 KiB (the master allocates in
64-byte units: 4 KiB blocks waste nothing), the capacity the tool derives
from --segment_size and gives the offline caches. The master keeps less
than that (it evicts above its watermark): the comparison charges it.

Pace and lease: a read lease (--default_kv_lease_ttl, 10 s by default)
keeps an object from eviction, in wall time. The replay honours the
trace's timestamps 100x faster than recorded (10 s of replay for the
trace's 1,022 s; the tool keeps up on two cores), so the master's lease is
100x shorter too (100 ms): with 10 s, every block used in the last ~17
minutes of trace time would be unevictable and puts refused, which no
real-time serving would see. Were the machine too slow to keep pace, the
replay would run slower than 100x, the lease would cover less trace time
than 10 s, and eviction would only have more to choose from.
"""

import json
import os
import subprocess
import sys

SYNTHETIC = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data",
                         "mooncake_synthetic_trace.jsonl")
BLOCK = 4096
CAPACITY = 10_000
SEGMENT = CAPACITY * BLOCK
SPEEDUP = 100
LEASE_MS = 10_000 // SPEEDUP
REPLAY_TIMEOUT_S = 600  # a deadline for a hung replay, not a speed check


def test_synthetic_trace_hit_rate_against_offline_lru(tmp_cluster):
    _, master = tmp_cluster.start_master("--default_kv_lease_ttl=%d" % LEASE_MS)
    node = tmp_cluster.start_node(master, "replay-node", segment_bytes=SEGMENT)
    metrics = node.wait_text(r"metrics port (\d+)", "the node's metrics port").group(1)
    out = subprocess.run(
        [sys.executable, "-m", "shelfmark.trace_replay", SYNTHETIC, "--master", master,
         "--block_size=%d" % BLOCK, "--segment_size=%d" % SEGMENT,
         "--timestamps=honour", "--speedup=%d" % SPEEDUP,
         "--node_metrics=127.0.0.1:%s" % metrics, "--json"],
        capture_output=True, text=True, timeout=REPLAY_TIMEOUT_S)
    assert out.returncode == 0, out.stderr + tmp_cluster.logs()
    r = json.loads(out.stdout)
    print(json.dumps(r, indent=1))  # the figures, in pytest's output on failure
    assert (r["requests"], r["block_references"], r["capacity_blocks"]) == (3993, 121877, CAPACITY)
    assert r["wrong_bytes"] == 0 and r["wrong_sizes"] == 0
    assert r["blocks_read"] >= r["hits"] > 0
    served = r["blocks_read"] + r["read_failures"].get("LEASE_EXPIRED", 0)
    assert (r["memory_blocks"], r["local_disk_blocks"]) == (served, 0)
    assert r["lookup_errors"] == {}
    assert r["puts_accepted"] > 0
    assert r["hit_rate"] >= 0.95 * r["lru_hit_rate"], (
        "prefix hit rate %.4f is %.2f of offline LRU's %.4f at %d blocks (want >= 0.95); "
        "puts refused: %s" % (r["hit_rate"], r["hit_over_lru"], r["lru_hit_rate"], CAPACITY,
                              r["puts_refused"]))


def test_replay_with_an_ssd_tier_reads_right_bytes_from_both_tiers(tmp_cluster, tmp_path):
    """The first 1,000 requests at 2,000 blocks of DRAM over an SSD store of
    8,000 (a master with --enable_offload): blocks evicted from DRAM are
    read back from SSD (the node's metrics count them), every byte right."""
    ssd = tmp_path / "ssd"
    ssd.mkdir()
    segment = 2000 * BLOCK
    _, master = tmp_cluster.start_master("--default_kv_lease_ttl=%d" % LEASE_MS,
                                         "--enable_offload=true")
    node = tmp_cluster.start_node(master, "replay-ssd", segment_bytes=segment, env={
        "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": str(ssd),
        "MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT": "8000"})
    metrics = node.wait_text(r"metrics port (\d+)", "the node's metrics port").group(1)
    out = subprocess.run(
        [sys.executable, "-m", "shelfmark.trace_replay", SYNTHETIC, "--master", master,
         "--block_size=%d" % BLOCK, "--segment_size=%d" % segment, "--requests=1000",
         "--ssd_capacity_blocks=8000", "--timestamps=honour", "--speedup=%d" % SPEEDUP,
         "--node_metrics=127.0.0.1:%s" % metrics, "--json"],
        capture_output=True, text=True, timeout=REPLAY_TIMEOUT_S)
    assert out.returncode == 0, out.stderr + tmp_cluster.logs()
    r = json.loads(out.stdout)
    print(json.dumps(r, indent=1))
    assert (r["requests"], r["capacity_blocks"], r["tiers_capacity_blocks"]) == (1000, 2000, 10000)
    assert r["wrong_bytes"] == 0 and r["wrong_sizes"] == 0
    # The disk serves reads the client then refuses too (their lease ended
    # during the transfer on a loaded machine: LEASE_EXPIRED).
    served = r["blocks_read"] + r["read_failures"].get("LEASE_EXPIRED", 0)
    assert 0 < r["local_disk_blocks"] <= served
    assert r["memory_blocks"] > 0
