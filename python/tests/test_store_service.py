"""The standalone-store shape end to end (docs/node.md, "The host's store
service"): a real shelfmark-master, a real shelfmark-store-service holding
the only DRAM segment, and dummy clients (mooncake.store's setup_dummy) in
processes of their own, their buffers MooncakeHostMemAllocator memory."""

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
        self.process.wait_text(r"socket \S+", "shelfmark-store-service serving")

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
