"""Fixtures: a real shelfmark-master and shelfmark-node (the build tree's
binaries, from $SHELFMARK_MASTER_BIN and $SHELFMARK_NODE_BIN, which ctest
sets), started on free ports and stopped by pid; every wait has a deadline.

The session cluster: one master (read lease 5 s) and one node with a
256 MiB DRAM segment over UCX. Tests use their own key prefixes, and force
removes where a read's lease would keep an object (OBJECT_HAS_LEASE).
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

import pytest

START_TIMEOUT_S = 30


def _binary(var):
    path = os.environ.get(var)
    if not path or not os.access(path, os.X_OK):
        pytest.skip("%s is not set to a built binary (ctest -L python sets it)" % var)
    return path


def wait_for(predicate, timeout_s, what):
    """Polls predicate() until it is true; fails the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("timed out after %.0f s waiting for %s" % (timeout_s, what))
        time.sleep(0.02)


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


class Process:
    """A child process whose stderr goes to a log file; stop() ends it by pid."""

    def __init__(self, args, log_path, env=None):
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=self._log,
                                     stdin=subprocess.DEVNULL,
                                     env=dict(os.environ, **env) if env else None)

    def log(self):
        return _read(self.log_path)

    def wait_text(self, pattern, what):
        def found():
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (%s):\n%s" % (what, self.proc.returncode, self.log()))
            return re.search(pattern, self.log())
        return wait_for(found, START_TIMEOUT_S, what)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._log.close()


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.processes = []
        self.master = None
        self.master_addr = None

    def start_master(self, *flags):
        p = Process([_binary("SHELFMARK_MASTER_BIN"), "--rpc_port=0", "--metrics_port=0",
                     "--rpc_address=127.0.0.1", *flags],
                    os.path.join(self.tmp, "master-%d.err" % len(self.processes)))
        self.processes.append(p)
        m = p.wait_text(r"rpc port (\d+), metrics port (\d+)", "shelfmark-master's ports")
        return p, "127.0.0.1:%s" % m.group(1)

    def start_node(self, master_addr, name, segment_bytes=256 << 20, env=None):
        """env: variables added to this one's (e.g. an SSD store's MOONCAKE_OFFLOAD_*)."""
        p = Process([_binary("SHELFMARK_NODE_BIN"), "--master=" + master_addr,
                     "--segment_size=%d" % segment_bytes, "--protocol=ucx",
                     "--listen_ip=127.0.0.1", "--listen_port=0", "--metrics_port=0",
                     "--segment_name=" + name, "--ping_interval_ms=300"],
                    os.path.join(self.tmp, "node-%s.err" % name), env)
        self.processes.append(p)
        p.wait_text(r"protocol ucx endpoint 127\.0\.0\.1:\d+", "shelfmark-node %s mounted" % name)
        return p

    def stop(self):
        for p in reversed(self.processes):
            p.stop()

    def logs(self):
        return "\n".join("--- %s ---\n%s" % (os.path.basename(p.log_path), p.log()[-3000:])
                         for p in self.processes)


@pytest.fixture(scope="session")
def cluster():
    tmp = tempfile.mkdtemp(prefix="shelfmark-py-")
    c = Cluster(tmp)
    try:
        c.master, c.master_addr = c.start_master("--default_kv_lease_ttl=5000")
        c.start_node(c.master_addr, "py-node")
        yield c
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def master_addr(cluster):
    return cluster.master_addr


@pytest.fixture
def prefix():
    """A key prefix of this test's own."""
    return "t-%s-" % uuid.uuid4().hex[:8]


@pytest.fixture
def tmp_cluster():
    """Processes of one test (e.g. a master it kills), stopped after it."""
    tmp = tempfile.mkdtemp(prefix="shelfmark-py-")
    c = Cluster(tmp)
    try:
        yield c
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def dead_master_addr():
    """host:port where nothing listens (a port bound and released)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "127.0.0.1:%d" % port
