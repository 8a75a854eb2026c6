"""Bare UCX against a Python process hosting its own segment (issue 28):
on UCX over tcp a small UCX program with no hello and no token could read
and overwrite such a process's segment and kill it with a put to 0x1000.
The attacker (tests/ucx_rma_attacker, $SHELFMARK_UCX_ATTACKER_BIN) tries
the objects' ranges, ranges outside the segment, address 0 and 0x1000:
nothing is served, the process lives, every object reads back byte-exact,
from another client (connected before the attack, as in
tests/hostile_test.cc) and from the process itself. ctest runs this file as
python_hostile_test (labels python, hostile).

A client that first connects after the attack is served too. The host's
stdout is a pipe read only up to its ready line: before UCX's warnings for
the stranger's messages were filtered (transport/ucx_log_filter.h) they
filled that pipe within the six tries, the host's progress thread blocked
in write() with its worker held, and that new client timed out on its hello
(docs/security.md, denial of service)."""

import json
import os
import select
import subprocess
import sys
import time

from conftest import _binary
from mooncake.store import MooncakeDistributedStore

MiB = 1 << 20
OBJECTS, OBJECT_BYTES = 4, 65536
HOST_SCRIPT = os.path.join(os.path.dirname(__file__), "segment_host_script.py")
# The packed rkey of any registration on tcp, the same bytes in every process.
TCP_RKEY = "01000000000000000000"


def read_json_line(proc, timeout_s):
    """The child's next JSON line on stdout, parsed (UCX writes its log lines
    to stdout too: those are skipped); fails after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no line from the segment host in %d s" % timeout_s)
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the segment host exited (%s)" % proc.wait(10))
            if line.startswith("{"):
                return json.loads(line)


def pattern(n, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(n))


def test_bare_ucx_reaches_no_byte_of_a_python_hosted_segment(tmp_cluster, tmp_path):
    attacker = _binary("SHELFMARK_UCX_ATTACKER_BIN")
    _, master_addr = tmp_cluster.start_master()  # no node: every object lands in the host
    host_log = open(tmp_path / "host.err", "wb")
    host = subprocess.Popen([sys.executable, HOST_SCRIPT, master_addr, str(OBJECTS),
                             str(OBJECT_BYTES)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=host_log, text=True)
    try:
        ready = read_json_line(host, 60)
        reader = MooncakeDistributedStore()
        assert reader.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 * MiB, "tcp", "",
                            master_addr) == 0
        assert reader.get("hosted-0") == pattern(OBJECT_BYTES, 0)  # connected before
        replicas = ready["replicas"]
        endpoint = replicas[0]["endpoint"]
        assert all(r["endpoint"] == endpoint for r in replicas), replicas
        read, written = replicas[0]["buffer_address"], replicas[1]["buffer_address"]
        tries = ["get:%x:%d" % (read, OBJECT_BYTES), "put:%x:%d" % (written, OBJECT_BYTES),
                 "get:%x:4096" % (read - (128 << 20)), "put:%x:4096" % (read + (128 << 20)),
                 "get:0:8", "put:1000:8"]
        r = subprocess.run([attacker, endpoint, TCP_RKEY, *tries], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        lines = [line for line in r.stderr.splitlines() if line.startswith("try ")]
        assert len(lines) >= len(tries), r.stderr  # each try, with each rkey
        served = [line for line in lines if " ok" in line]
        assert served == [], "served to a peer without a hello:\n" + "\n".join(served)
        assert host.poll() is None, "the segment host died (%s):\n%s" % (
            host.returncode, (tmp_path / "host.err").read_text(errors="replace"))

        try:
            for i in range(OBJECTS):
                assert reader.get("hosted-%d" % i) == pattern(OBJECT_BYTES, i), i
        finally:
            reader.close()
        fresh = MooncakeDistributedStore()  # never talked to the host before
        assert fresh.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 * MiB, "tcp", "",
                           master_addr) == 0
        try:
            for i in range(OBJECTS):
                assert fresh.get("hosted-%d" % i) == pattern(OBJECT_BYTES, i), i
        finally:
            fresh.close()
        host.stdin.write("check\n")
        host.stdin.flush()
        assert read_json_line(host, 60) == {"intact": list(range(OBJECTS))}
        host.stdin.close()
        assert host.wait(timeout=60) == 0
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(10)
        host_log.close()
