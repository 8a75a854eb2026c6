"""The standalone-store shape end to end (docs/node.md, "The host's store
service"): a real shelfmark-master, a real shelfmark-store-service holding
the only DRAM segment, and dummy clients (mooncake.store's setup_dummy) in
processes of their own, their buffers MooncakeHostMemAllocator memory."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest

from conftest import Cluster, Process, _binary, wait_for
from mooncake.store import MooncakeDistributedStore, MooncakeHostMemAllocator

TOKEN = "store-service-pytest-token-0123456789"
SCRIPT = os.path.join(os.path.dirname(__file__), "dummy_client_script.py")
SIZE = 64 << 10

sys.path.insert(0, os.path.dirname(__file__))
from dummy_client_script import read, value_of, write  # noqa: E402


class Service:
    def __init__(self, tmp):
        self.cluster = Cluster(tmp)
        _, master = self.cluster.start_master()
        self.master = master
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token_file, 0o600)
        self.socket = os.path.join(tmp, "store.sock")
        self.process = Process([_binary("SHELFMARK_STORE_SERVICE_BIN"),
                                "--master_server_address=" + master, "--host=127.0.0.1",
                                "--global_segment_size=%d" % (128 << 20),
                                "--socket_path=" + self.socket,
                                "--cluster_token_file=" + token_file],
                               os.path.join(tmp, "store-service.err"))
        self.cluster.processes.append(self.process)
        m = self.process.wait_text(r"segment (\S+) \d+ bytes socket \S+",
                                   "shelfmark-store-service serving")
        self.segment = m.group(1)

    def shm_mappings(self):
        """The client shared memory the service maps now (lines of its maps)."""
        with open("/proc/%d/maps" % self.process.proc.pid) as f:
            return [line for line in f if "shelfmark-shm" in line]


@pytest.fixture(scope="module")
def service():
    tmp = tempfile.mkdtemp(prefix="shelfmark-svc-")
    s = Service(tmp)
    try:
        yield s
    finally:
        s.cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run_script(*args):
    env = dict(os.environ, SHELFMARK_CLUSTER_TOKEN=TOKEN)
    out = subprocess.run([sys.executable, SCRIPT, *args], env=env, capture_output=True,
                         text=True, timeout=60)
    return out.stdout + out.stderr


def dummy(service, token=TOKEN):
    store = MooncakeDistributedStore()
    assert store.setup_dummy(0, 0, service.socket, cluster_token=token) == 0
    return store


def test_two_dummy_clients_put_and_get_byte_exact(service, prefix):
    assert "put ok" in run_script("put", service.socket, prefix, "16", str(SIZE))
    assert "get ok" in run_script("get", service.socket, prefix, "16", str(SIZE))
    store = dummy(service)
    try:
        assert store.put(prefix + "bytes", b"through the service") == 0
        assert store.get(prefix + "bytes") == b"through the service"
        assert store.get(prefix + "missing") == b""
        assert store.is_exist(prefix + "0") == 1
        assert store.batch_is_exist([prefix + "1", prefix + "missing"]) == [1, 0]
        assert store.get_size(prefix + "2") == SIZE
        assert store.put(prefix + "gone", b"x") == 0
        assert store.remove(prefix + "gone") == 0
        assert store.is_exist(prefix + "gone") == 0
        assert store.health_check() == 0
        # Buffers outside the allocator's memory: the service cannot see them.
        plain = bytearray(SIZE)
        import ctypes
        address = ctypes.addressof((ctypes.c_char * SIZE).from_buffer(plain))
        assert store.register_buffer(address, SIZE) == -600
    finally:
        store.close()


def test_multi_buffer_calls_and_batch_remove(service, prefix):
    store = dummy(service)
    alloc = MooncakeHostMemAllocator()
    piece = 8 << 10
    src, dst = alloc.alloc(4 * piece), alloc.alloc(4 * piece)
    try:
        for b in (src, dst):
            assert store.register_buffer(b, 4 * piece) == 0
        data = value_of(prefix, 4 * piece)
        write(src, data)
        keys = [prefix + "a", prefix + "b"]
        assert store.batch_put_from_multi_buffers(
            keys, [[src, src + piece], [src + 2 * piece, src + 3 * piece]],
            [[piece, piece], [piece, piece]]) == [0, 0]
        assert store.batch_get_into_multi_buffers(
            keys, [[dst + 2 * piece], [dst]], [[2 * piece], [2 * piece]]) == [2 * piece] * 2
        assert read(dst, 4 * piece) == data[2 * piece:] + data[:2 * piece]
        assert store.batch_remove(keys + [prefix + "missing"], True) == [0, 0, -704]
        for b in (src, dst):
            assert store.unregister_buffer(b) == 0
    finally:
        store.close()
        assert alloc.free(src) == 0 and alloc.free(dst) == 0


def test_killed_client_leaves_its_objects_and_frees_its_memory(service, prefix):
    baseline = len(service.shm_mappings())
    env = dict(os.environ, SHELFMARK_CLUSTER_TOKEN=TOKEN)
    client = subprocess.Popen([sys.executable, SCRIPT, "loop", service.socket, prefix,
                               str(4 << 20)], env=env, stdout=subprocess.PIPE, text=True)
    done = []
    try:
        while len(done) < 3:
            line = client.stdout.readline()
            assert line, "the looping client stopped"
            done.append(int(line.split()[1]))
        assert len(service.shm_mappings()) > baseline
        os.kill(client.pid, signal.SIGKILL)
        client.wait(timeout=10)
    finally:
        if client.poll() is None:
            os.kill(client.pid, signal.SIGKILL)
            client.wait(timeout=10)
        client.stdout.close()
    wait_for(lambda: len(service.shm_mappings()) == baseline, 10, "the service to unmap")
    store = dummy(service)
    alloc = MooncakeHostMemAllocator()
    ptr = alloc.alloc(4 << 20)
    try:
        assert store.register_buffer(ptr, 4 << 20) == 0
        for i in done:
            key = "%s%d" % (prefix, i)
            assert store.get_into(key, ptr, 4 << 20) == 4 << 20
            assert read(ptr, 4 << 20) == value_of(key, 4 << 20)
        assert store.unregister_buffer(ptr) == 0
    finally:
        store.close()
        assert alloc.free(ptr) == 0


def test_wrong_token_and_hostile_bytes_get_typed_errors(service):
    store = MooncakeDistributedStore()
    assert store.setup_dummy(0, 0, service.socket, cluster_token="not-the-token-0000") == -1300
    assert store.setup_dummy(0, 0, service.socket, tenant_id="other", cluster_token=TOKEN) == -1301
    assert store.setup_dummy(0, 0, "not an address") == -600
    for junk in (b"\xff" * 64, os.urandom(1 << 20), b"\x00\x00\x00\x10SMSS"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(service.socket)
        try:
            s.sendall(junk)
        except OSError:
            pass  # the service may close first
        s.close()
    good = dummy(service)
    try:
        assert good.health_check() == 0
    finally:
        good.close()
    assert service.process.proc.poll() is None


def test_a_dead_service_is_a_typed_error(tmp_path):
    store = MooncakeDistributedStore()
    assert store.setup_dummy(0, 0, str(tmp_path / "nothing.sock"), cluster_token=TOKEN) == -900
    assert store.setup_dummy(0, 0, "127.0.0.1:1", cluster_token=TOKEN) == -900
    assert store.put("k", b"v") == -600  # never set up


# --- every call of the Python API through the service (issue 31) -------------

UNAVAILABLE_IN_CURRENT_MODE = -1011


def two_dummies(service):
    """Two dummy clients, each with its own connection."""
    return dummy(service), dummy(service)


def test_inline_value_calls_round_trip_between_two_clients(service, prefix):
    writer, reader = two_dummies(service)
    try:
        assert writer.put_parts(prefix + "parts", b"abc", bytearray(b"def"), b"g" * 1000) == 0
        assert reader.get(prefix + "parts") == b"abcdef" + b"g" * 1000
        assert writer.upsert_parts(prefix + "parts", b"new") == 0
        assert reader.get(prefix + "parts") == b"new"
        keys = [prefix + "b%d" % i for i in range(5)]
        values = [value_of(k, 1000 + i) for i, k in enumerate(keys)]
        assert writer.put_batch(keys, values) == 0
        assert reader.get_batch(keys + [prefix + "missing"]) == values + [b""]
        assert writer.upsert_batch(keys[:2], [b"x", b"y"]) == 0
        assert reader.get_batch(keys[:2]) == [b"x", b"y"]
        handle = reader.get_buffer(keys[2])
        assert bytes(memoryview(handle)) == values[2] and handle.size() == len(values[2])
        assert reader.get_buffer(prefix + "missing") is None
        handles = reader.batch_get_buffer([keys[3], prefix + "missing", keys[4]])
        assert bytes(handles[0]) == values[3] and handles[1] is None
        assert bytes(handles[2]) == values[4]
        # Bad arguments: typed codes, nothing stored.
        assert writer.put_batch(keys, values[:1]) == -600
        assert writer.put_parts(prefix + "empty") == -600
        assert reader.is_exist(prefix + "empty") == 0
    finally:
        writer.close()
        reader.close()


def test_ranged_reads_and_replica_descriptors(service, prefix):
    writer, reader = two_dummies(service)
    alloc = MooncakeHostMemAllocator()
    size = 64 << 10
    dst = alloc.alloc(size)
    try:
        data = value_of(prefix + "ranged", size)
        assert writer.put(prefix + "ranged", data) == 0
        assert reader.register_buffer(dst, size) == 0
        # Two fragments into one buffer, the second from the object's start.
        got = reader.get_into_ranges([dst], [[prefix + "ranged"]], [[[0, 4096]]],
                                     [[[100, 0]]], [[[1000, 2000]]])
        assert got == [[[1000, 2000]]]
        assert read(dst, 1000) == data[100:1100]
        assert read(dst + 4096, 2000) == data[:2000]
        # Past the object's end, outside registered memory, a missing key.
        got = reader.get_into_ranges([dst, 4096], [[prefix + "ranged", prefix + "missing"],
                                                   [prefix + "ranged"]],
                                     [[[0, 8192], [0]], [[0]]], [[[size - 10, 0], [0]], [[0]]],
                                     [[[100, 10], [10]], [[10]]])
        assert got == [[[-10, 10], [-704]], [[-600]]]
        assert reader.get_into_ranges([dst], [[prefix + "ranged"]], [[[0]]], [[[0]]], []) == \
            [[[-600]]]
        replicas = reader.get_replica_desc(prefix + "ranged")
        assert len(replicas) == 1 and replicas[0].is_memory_replica()
        assert replicas[0].get_memory_descriptor().buffer_descriptor.size == size
        assert reader.get_replica_desc(prefix + "missing") == []
        assert set(reader.batch_get_replica_desc([prefix + "ranged"])) == {prefix + "ranged"}
        assert reader.unregister_buffer(dst) == 0
        # Two registrations side by side: a fragment past the first one's end
        # is refused though registered memory follows it.
        half = size // 2
        assert reader.register_buffer(dst, half) == 0
        assert reader.register_buffer(dst + half, half) == 0
        before = read(dst + half, 64)
        assert reader.get_into_ranges([dst], [[prefix + "ranged"]], [[[half + 8]]], [[[0]]],
                                      [[[16]]]) == [[[-600]]]
        assert read(dst + half, 64) == before
        assert reader.unregister_buffer(dst) == 0 and reader.unregister_buffer(dst + half) == 0
    finally:
        writer.close()
        reader.close()
        assert alloc.free(dst) == 0


def test_multi_buffer_calls_between_two_clients(service, prefix):
    writer, reader = two_dummies(service)
    alloc = MooncakeHostMemAllocator()
    piece = 4 << 10
    src, dst = alloc.alloc(4 * piece), alloc.alloc(4 * piece)
    try:
        assert writer.register_buffer(src, 4 * piece) == 0
        assert reader.register_buffer(dst, 4 * piece) == 0
        data = value_of(prefix + "multi", 4 * piece)
        write(src, data)
        assert writer.put_from_with_metadata(prefix + "meta", src + piece, src, 3 * piece,
                                             piece) == 0
        assert reader.get_into(prefix + "meta", dst, 4 * piece) == 4 * piece
        assert read(dst, 4 * piece) == data
        assert writer.batch_upsert_from_multi_buffers(
            [prefix + "meta"], [[src + 2 * piece, src]], [[piece, piece]]) == [0]
        assert reader.batch_get_into_multi_buffers(
            [prefix + "meta"], [[dst, dst + 3 * piece]], [[piece, piece]]) == [2 * piece]
        assert read(dst, piece) == data[2 * piece:3 * piece]
        assert read(dst + 3 * piece, piece) == data[:piece]
        # Put and get sessions, held by the service for each connection.
        keys = [prefix + "s0", prefix + "s1"]
        assert writer.batch_put_session_start(keys, [2 * piece, 2 * piece]) == [0, 0]
        assert reader.is_exist(keys[0]) == 0  # not readable before its end
        assert writer.batch_put_from_multi_buffer_ranges(
            keys, [[src, src + piece], [src + 2 * piece, src + 3 * piece]],
            [[piece, piece], [piece, piece]], [[piece, 0], [0, piece]]) == [2 * piece] * 2
        assert writer.batch_put_session_end(keys) == [0, 0]
        assert reader.batch_get_session_start(keys) == [0, 0]
        assert reader.batch_get_into_multi_buffer_ranges(
            keys, [[dst], [dst + 2 * piece]], [[2 * piece], [2 * piece]], [[0], [0]]) == \
            [2 * piece] * 2
        assert read(dst, 4 * piece) == data[piece:2 * piece] + data[:piece] + data[2 * piece:]
        assert reader.batch_get_session_end(keys) == 0
        # Another connection's sessions are not this one's; revoke drops the object.
        assert writer.batch_put_session_start([prefix + "s2"], [piece]) == [0]
        assert reader.batch_put_from_multi_buffer_ranges(
            [prefix + "s2"], [[dst]], [[piece]], [[0]]) == [-600]
        assert writer.batch_put_from_multi_buffer_ranges(
            [prefix + "s2"], [[4096]], [[piece]], [[0]]) == [-600]  # memory it cannot see
        assert writer.batch_put_session_revoke([prefix + "s2"]) == [0]
        assert reader.batch_get_session_start([prefix + "s2"]) == [-704]
        assert reader.batch_get_into_multi_buffer_ranges(
            [prefix + "s2", keys[0]], [[dst], [dst]], [[piece], [piece, piece]],
            [[0], [0]]) == [-600, -600]  # no session; pieces of two shapes
    finally:
        writer.close()
        reader.close()
        assert alloc.free(src) == 0 and alloc.free(dst) == 0


def test_removes_segments_and_tasks_through_the_service(service, prefix):
    store = dummy(service)
    try:
        for i in range(3):
            assert store.put("%sregex-%d" % (prefix, i), b"v") == 0
        assert store.put(prefix + "kept", b"v") == 0
        assert store.remove_by_regex("^" + prefix + "regex-[0-9]$") == 3
        assert store.is_exist(prefix + "kept") == 1
        assert store.remove_by_regex("(") == -600
        # Segments are the service's: mounting through it is not this shape's.
        assert store.allocate_and_mount_segment(1 << 20)["ret"] == UNAVAILABLE_IN_CURRENT_MODE
        assert store.mount_segment("/dev/null", 4096)["ret"] == UNAVAILABLE_IN_CURRENT_MODE
        # Copy tasks run on the service's client: from its segment (the only
        # one when the object is put) into a node's.
        assert store.put(prefix + "copied", b"copy me" * 100) == 0
        assert store.put(prefix + "moved", b"move me" * 100) == 0
        service.cluster.start_node(service.master, prefix + "node",
                                   env={"SHELFMARK_CLUSTER_TOKEN": TOKEN})
        task_id, rc = store.create_copy_task(prefix + "copied", [prefix + "node"])
        assert rc == 0

        def finished(task_id):
            response, code = store.query_task(task_id)
            assert code == 0
            return response.status.name in ("SUCCESS", "FAILED") and response

        def endpoints(key):
            return {r.get_memory_descriptor().buffer_descriptor.transport_endpoint
                    for r in store.get_replica_desc(key)}

        response = wait_for(lambda: finished(task_id), 30, "the copy task to finish")
        assert response.status.name == "SUCCESS", response
        assert len(endpoints(prefix + "copied")) == 2
        before = endpoints(prefix + "moved")
        task_id, rc = store.create_move_task(prefix + "moved", service.segment, prefix + "node")
        assert rc == 0
        response = wait_for(lambda: finished(task_id), 30, "the move task to finish")
        assert response.status.name == "SUCCESS", response
        after = endpoints(prefix + "moved")
        assert len(after) == 1 and after != before
        assert store.get(prefix + "moved") == b"move me" * 100
        assert store.create_copy_task(prefix + "missing", [prefix + "node"])[1] == -704
        assert store.query_task((1, 2)) == (None, -1400)
        assert store.query_task("junk") == (None, -600)
        assert store.remove_all(force=True) >= 2  # "copied" was read: it has a lease
        assert store.is_exist(prefix + "kept") == 0
    finally:
        store.close()


def test_tensors_through_the_service(service, prefix):
    torch = pytest.importorskip("torch")
    writer, reader = two_dummies(service)
    alloc = MooncakeHostMemAllocator()
    size = 1 << 20
    buf = alloc.alloc(size)
    try:
        t = torch.arange(0, 4096, dtype=torch.float32).reshape(64, 64)
        assert writer.put_tensor(prefix + "t", t) == 0
        assert torch.equal(reader.get_tensor(prefix + "t"), t)
        assert writer.batch_put_tensor([prefix + "t1", prefix + "t2"], [t, t * 2]) == [0, 0]
        got = reader.batch_get_tensor([prefix + "t1", prefix + "t2", prefix + "missing"])
        assert torch.equal(got[0], t) and torch.equal(got[1], t * 2) and got[2] is None
        assert writer.upsert_tensor(prefix + "t", t + 1) == 0
        assert torch.equal(reader.get_tensor(prefix + "t"), t + 1)
        assert writer.pub_tensor(prefix + "pub", t) == 0
        assert torch.equal(reader.get_tensor(prefix + "pub"), t)
        assert writer.put_tensor_with_tp(prefix + "tp", t, tp_rank=0, tp_size=2, split_dim=0) == 0
        shard = reader.get_tensor_with_tp(prefix + "tp", tp_rank=1, tp_size=2, split_dim=0)
        assert torch.equal(shard, t[32:])
        assert reader.register_buffer(buf, size) == 0
        into = reader.get_tensor_into(prefix + "t", buf, size)
        assert torch.equal(into, t + 1)
        assert writer.register_buffer(buf, size) == 0  # the same memory, the writer's view
        n = writer.get_size(prefix + "t")  # the tensor object's bytes at buf
        assert writer.put_tensor_from(prefix + "from", buf, n) == 0
        assert torch.equal(reader.get_tensor(prefix + "from"), t + 1)
    finally:
        writer.close()
        reader.close()
        assert alloc.free(buf) == 0


def test_setup_routes_the_standalone_store_mode_to_the_service(service, prefix, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv("SHELFMARK_CLUSTER_TOKEN", TOKEN)
    config = {"mode": "standalone-store", "local_hostname": "localhost",
              "metadata_server": "P2PHANDSHAKE", "master_server_address": service.master,
              "global_segment_size": "0 B", "local_buffer_size": "64 MB", "protocol": "tcp",
              "client_server_address": service.socket}
    path = tmp_path / "mooncake_config.json"
    path.write_text(json.dumps(config))
    # vLLM's way: setup() with the file's sizes, the mode only in the file.
    monkeypatch.setenv("MOONCAKE_CONFIG_PATH", str(path))
    store = MooncakeDistributedStore()
    assert store.setup("localhost", "P2PHANDSHAKE", 0, 64 << 20, "tcp", "", service.master) == 0
    assert store.get_hostname() == service.socket
    assert store.put(prefix + "vllm", b"through the service") == 0
    store.close()
    # No client_server_address: $MOONCAKE_PREFERRED_SEGMENT names the service.
    del config["client_server_address"]
    monkeypatch.setenv("MOONCAKE_PREFERRED_SEGMENT", service.socket)
    store = MooncakeDistributedStore()
    assert store.setup(config) == 0
    assert store.get(prefix + "vllm") == b"through the service"
    store.close()
    store = MooncakeDistributedStore()
    assert store.setup_with_env() == 0
    assert store.get_hostname() == service.socket
    store.close()
    # A segment of its own: the embedded shape, whatever the file says.
    monkeypatch.setenv("MOONCAKE_PREFERRED_SEGMENT", str(tmp_path / "no-service.sock"))
    store = MooncakeDistributedStore()
    assert store.setup(dict(config, mode="standalone-store")) == -900
    assert store.setup(dict(config, mode="sideways")) == -600
    store.close()



def test_shelfmark_store_through_the_service(service, prefix):
    import shelfmark
    store = shelfmark.Store.through_service(service.socket, cluster_token=TOKEN)
    try:
        store.put(prefix + "sm", b"shelfmark through the service")
        assert store.get(prefix + "sm") == b"shelfmark through the service"
        store.put_many([(prefix + "m1", b"one"), (prefix + "m2", b"two")])
        assert store.get_many([prefix + "m1", prefix + "m2"]) == [b"one", b"two"]
        assert prefix + "m1" in store and store.size(prefix + "m2") == 3
        store.remove(prefix + "m1", force=True)  # the get above holds a read lease
        assert prefix + "m1" not in store
        with pytest.raises(shelfmark.ObjectNotFound):
            store.get(prefix + "m1")
    finally:
        store.close()
    assert store.closed
    with pytest.raises(shelfmark.ShelfmarkError) as refused:
        shelfmark.Store.through_service(service.socket, cluster_token="not-the-token-0000")
    assert refused.value.code == -1300
