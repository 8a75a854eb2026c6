"""mooncake.store's SSD tier (setup's enable_ssd_offload / ssd_offload_path,
a config's fields, setup_with_env's MOONCAKE_OFFLOAD_ENABLED): the store's
hosted segment copies its objects to a real directory when the master runs
with --enable_offload, and objects evicted from DRAM are read back from
there (LOCAL_DISK) byte-exact; a store opened later on the same directory
re-reports them (docs/python.md)."""

import pytest

from conftest import wait_for
from mooncake.store import MooncakeDistributedStore

SEGMENT = 4 << 20
SIZE = 64 << 10
NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
DEADLINE_S = 30


def value_of(i):
    return bytes((i * 7 + j) % 251 for j in range(256)) * (SIZE // 256)


def put_range(store, prefix, begin, end):
    """Puts prefix+i for i in [begin, end); a put that finds DRAM full of
    objects whose SSD copies have not landed yet is retried until they do."""
    for i in range(begin, end):
        codes = []
        wait_for(lambda: codes.append(store.put(prefix + str(i), value_of(i))) or
                 codes[-1] != NO_AVAILABLE_HANDLE, DEADLINE_S, "room for " + prefix + str(i))
        assert codes[-1] == 0, (i, codes[-1])


def offloaded(store, count):
    wait_for(lambda: store.disk_stats()["offloaded"] >= count, DEADLINE_S,
             "%d objects copied to the SSD tier" % count)


@pytest.fixture
def offload_master(tmp_cluster):
    _, master = tmp_cluster.start_master("--enable_offload=true")
    return master


@pytest.fixture
def ssd(tmp_path):
    path = tmp_path / "ssd"
    path.mkdir()
    return str(path)


def setup_args(master):
    return ("127.0.0.1", "P2PHANDSHAKE", SEGMENT, 16 << 20, "tcp", "", master)


def test_objects_beyond_dram_are_read_back_from_the_tier(offload_master, ssd, prefix):
    store = MooncakeDistributedStore()
    assert store.setup(*setup_args(offload_master), enable_ssd_offload=True,
                       ssd_offload_path=ssd) == 0
    try:
        first, total = 48, 96  # 3 MiB, then 6 MiB into a 4 MiB segment
        put_range(store, prefix, 0, first)
        offloaded(store, first)
        put_range(store, prefix, first, total)
        disk_only = []
        for i in range(total):
            replicas = store.get_replica_desc(prefix + str(i))
            assert replicas, i
            if not any(r.is_memory_replica() for r in replicas):
                disk_only.append(i)
        # At least 2 MiB left DRAM, every byte of it for the tier.
        assert len(disk_only) >= (total * SIZE - SEGMENT) // SIZE
        before = store.disk_stats()
        assert before["objects"] >= first and before["used_bytes"] >= first * SIZE
        for i in disk_only:
            assert store.get(prefix + str(i)) == value_of(i), i
        after = store.disk_stats()
        assert after["disk_requests"] - before["disk_requests"] == len(disk_only)
        assert after["disk_served_bytes"] - before["disk_served_bytes"] == len(disk_only) * SIZE
        assert after["disk_errors"] == 0
    finally:
        assert store.close() == 0
    assert store.disk_stats() is None  # closed: the tier went with the store


def test_a_store_opened_later_on_the_directory_reports_its_objects(
        offload_master, ssd, prefix, monkeypatch):
    config = {"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
              "global_segment_size": SEGMENT, "local_buffer_size": 16 << 20, "protocol": "tcp",
              "device_name": "", "master_server_address": offload_master,
              "enable_ssd_offload": True, "ssd_offload_path": ssd}
    first = MooncakeDistributedStore()
    assert first.setup(config) == 0
    put_range(first, prefix, 0, 8)
    offloaded(first, 8)
    assert first.close() == 0

    # The environment's shape: MOONCAKE_OFFLOAD_ENABLED and the path variable.
    monkeypatch.delenv("MOONCAKE_CONFIG_PATH", raising=False)
    for name, value in {"MOONCAKE_MASTER": offload_master, "MOONCAKE_LOCAL_HOSTNAME": "127.0.0.1",
                        "MOONCAKE_GLOBAL_SEGMENT_SIZE": str(SEGMENT), "MOONCAKE_PROTOCOL": "tcp",
                        "MOONCAKE_OFFLOAD_ENABLED": "true",
                        "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": ssd}.items():
        monkeypatch.setenv(name, value)
    second = MooncakeDistributedStore()
    assert second.setup_with_env() == 0
    try:
        assert second.disk_stats()["objects"] == 8
        wait_for(lambda: second.disk_stats()["disk_reported"] >= 8, DEADLINE_S,
                 "the tier's objects re-reported")
        for i in range(8):
            assert second.get(prefix + str(i)) == value_of(i), i
        assert second.disk_stats()["disk_requests"] >= 8
    finally:
        second.close()


def test_the_tier_needs_a_segment_and_a_directory(offload_master, ssd, tmp_path, monkeypatch):
    monkeypatch.delenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", raising=False)
    store = MooncakeDistributedStore()
    host, meta, _, buf, proto, dev, master = setup_args(offload_master)
    assert store.setup(host, meta, 0, buf, proto, dev, master, enable_ssd_offload=True,
                       ssd_offload_path=ssd) == INVALID_PARAMS
    assert store.setup(*setup_args(offload_master), enable_ssd_offload=True,
                       ssd_offload_path=str(tmp_path / "missing")) == INVALID_PARAMS
    assert store.setup(*setup_args(offload_master), enable_ssd_offload=True) == INVALID_PARAMS
    # A path alone turns nothing on (Mooncake's enable_ssd_offload defaults to False).
    assert store.setup(*setup_args(offload_master), ssd_offload_path=ssd) == 0
    try:
        assert store.disk_stats() is None
    finally:
        store.close()
