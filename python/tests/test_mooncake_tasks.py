"""mooncake.store's copy and move tasks (create_copy_task, create_move_task,
query_task) against a real master (started as Mooncake's CI starts one) and
a peer process hosting a segment: the object copied into the peer's segment
is read back byte-exact from that replica alone, a moved one lives only
there, the task states, and the typed refusals."""

import subprocess
import sys
import time

import pytest

from mooncake.store import MooncakeDistributedStore, ReplicateConfig, TaskStatus, TaskType

MiB = 1 << 20
OK, INVALID_PARAMS, SEGMENT_NOT_FOUND = 0, -600, -101
OBJECT_NOT_FOUND, OBJECT_ALREADY_EXISTS, TASK_NOT_FOUND = -704, -705, -1400

# A peer hosting a segment of its own: prints its segment's name, then
# keeps the segment mounted until its stdin closes.
PEER = r"""
import sys
from mooncake.store import MooncakeDistributedStore
s = MooncakeDistributedStore()
assert s.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, 4 << 20, "tcp", "", sys.argv[1],
               rpc_timeout_ms=60000) == 0
print(s.get_hostname(), flush=True)
sys.stdin.read()
s.close()
"""


def value(key, size=3 * MiB + 17):
    seed = key.encode()
    return (seed * (size // len(seed) + 1))[:size]


@pytest.fixture
def mc_master(tmp_cluster):
    """A master with no node, as Mooncake's CI starts one."""
    _, addr = tmp_cluster.start_master("--default_kv_lease_ttl=500")
    return addr


@pytest.fixture
def peer(mc_master):
    """(the peer's segment name, its process)."""
    p = subprocess.Popen([sys.executable, "-c", PEER, mc_master], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        name = p.stdout.readline().strip()
        assert name, "the peer did not start"
        yield name
    finally:
        p.stdin.close()
        p.wait(timeout=60)


def open_store(master, segment=16 * MiB):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", segment, 8 * MiB, "tcp", "", master) == OK
    return s


@pytest.fixture
def owner_and_reader(mc_master):
    """A store hosting a segment (the tasks' creator) and one without."""
    owner, reader = open_store(mc_master), open_store(mc_master, segment=0)
    try:
        yield owner, reader
    finally:
        owner.close()
        reader.close()


def put_here(store, key):
    config = ReplicateConfig()
    config.preferred_segment = store.get_hostname()
    assert store.put(key, value(key), config) == OK


def endpoints(store, key):
    return sorted(d.get_memory_descriptor().buffer_descriptor.transport_endpoint
                  for d in store.get_replica_desc(key))


def wait_done(store, task_id, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while True:
        response, rc = store.query_task(task_id)
        assert rc == OK
        if response.status in (TaskStatus.SUCCESS, TaskStatus.FAILED):
            return response
        assert time.monotonic() < deadline, "task still %s" % response.status.name
        time.sleep(0.02)


def test_copy_to_peer_then_read_from_that_replica_alone(owner_and_reader, peer):
    owner, reader = owner_and_reader
    put_here(owner, "copied")
    [own_endpoint] = endpoints(owner, "copied")
    before = int(time.time() * 1000)
    task_id, rc = owner.create_copy_task("copied", [peer])
    assert rc == OK and task_id != (0, 0)
    response = wait_done(owner, task_id)
    assert response.status == TaskStatus.SUCCESS, response.message
    assert response.type == TaskType.REPLICA_COPY
    assert response.id == task_id and response.message == ""
    assert before <= response.created_at_ms_epoch <= response.last_updated_at_ms_epoch
    assert response.last_updated_at_ms_epoch <= int(time.time() * 1000)
    assert len(endpoints(owner, "copied")) == 2
    # The owner's segment goes with it: only the peer's replica is left.
    owner.close()
    [left] = endpoints(reader, "copied")
    assert left != own_endpoint
    assert reader.get("copied") == value("copied")
    # Another store of the tenant sees the finished task too.
    again, rc = reader.query_task(task_id)
    assert rc == OK and again.status == TaskStatus.SUCCESS


def test_move_leaves_the_object_on_the_target_only(mc_master, peer):
    owner = open_store(mc_master)
    try:
        put_here(owner, "moved")
        [own_endpoint] = endpoints(owner, "moved")
        task_id, rc = owner.create_move_task("moved", owner.get_hostname(), peer)
        assert rc == OK
        response = wait_done(owner, task_id)
        assert response.status == TaskStatus.SUCCESS, response.message
        assert response.type == TaskType.REPLICA_MOVE
        [left] = endpoints(owner, "moved")
        assert left != own_endpoint
        assert owner.get("moved") == value("moved")
        # Moved away: the source holds no replica to move again.
        assert owner.create_move_task("moved", owner.get_hostname(), peer) == \
            ((0, 0), OBJECT_NOT_FOUND)
    finally:
        owner.close()


def test_close_waits_for_the_stores_tasks(owner_and_reader, peer):
    owner, reader = owner_and_reader
    ids = []
    for i in range(5):
        put_here(owner, "k%d" % i)
        task_id, rc = owner.create_copy_task("k%d" % i, [peer])
        assert rc == OK
        ids.append(task_id)
    assert owner.close() == OK
    for task_id in ids:
        response, rc = reader.query_task(task_id)
        assert rc == OK and response.status == TaskStatus.SUCCESS, response
    for i in range(5):
        assert reader.get("k%d" % i) == value("k%d" % i)


def test_refusals(mc_master, peer):
    store = open_store(mc_master)
    try:
        put_here(store, "here")
        nil = (0, 0)
        assert store.create_copy_task("missing", [peer]) == (nil, OBJECT_NOT_FOUND)
        assert store.create_copy_task("here", ["10.9.9.9:1"]) == (nil, SEGMENT_NOT_FOUND)
        assert store.create_copy_task("here", [store.get_hostname()]) == \
            (nil, OBJECT_ALREADY_EXISTS)
        assert store.create_copy_task("here", []) == (nil, INVALID_PARAMS)
        assert store.create_copy_task("here", [peer, peer]) == (nil, INVALID_PARAMS)
        assert store.create_copy_task("here", peer) == (nil, INVALID_PARAMS)
        assert store.create_move_task("here", peer, store.get_hostname()) == \
            (nil, OBJECT_NOT_FOUND)
        assert store.create_move_task("here", peer, peer) == (nil, INVALID_PARAMS)
        assert store.query_task((12345, 678)) == (None, TASK_NOT_FOUND)
        assert store.query_task("not a task id") == (None, INVALID_PARAMS)
        assert len(endpoints(store, "here")) == 1  # no refusal placed anything
    finally:
        store.close()
    closed = MooncakeDistributedStore()
    assert closed.create_copy_task("here", [peer]) == ((0, 0), INVALID_PARAMS)
