"""mooncake.store and shelfmark with Mooncake's "etcd://" master address:
the store finds the master whose address is published in a real etcd
(/usr/bin/etcd on free loopback ports, stopped by pid) under
shelfmark/<cluster_id>/leader (docs/ha.md, "Finding the leader")."""

import base64
import json
import os
import shutil
import socket
import tempfile
import urllib.request

import pytest

import shelfmark
from conftest import Process, wait_for
from mooncake.store import MooncakeDistributedStore

ETCD = "/usr/bin/etcd"
OK, INVALID_PARAMS, RPC_FAIL = 0, -600, -900


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _post(port, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as reply:
        return json.loads(reply.read() or b"{}")


def _healthy(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1) as r:
            return b'"true"' in r.read()
    except OSError:
        return False


@pytest.fixture(scope="module")
def etcd():
    """The client port of a fresh single-member etcd."""
    if not os.access(ETCD, os.X_OK):
        pytest.skip("%s is missing (Debian's etcd-server; scripts/setup.sh installs it)" % ETCD)
    tmp = tempfile.mkdtemp(prefix="shelfmark-py-etcd-")
    client, peer = _free_port(), _free_port()
    url = lambda p: "http://127.0.0.1:%d" % p  # noqa: E731
    p = Process([ETCD, "--name=py", "--data-dir=" + os.path.join(tmp, "data"),
                 "--listen-client-urls=" + url(client), "--advertise-client-urls=" + url(client),
                 "--listen-peer-urls=" + url(peer), "--initial-advertise-peer-urls=" + url(peer),
                 "--initial-cluster=py=" + url(peer), "--heartbeat-interval=50",
                 "--election-timeout=500", "--log-outputs=stderr"],
                os.path.join(tmp, "etcd.err"))
    try:
        wait_for(lambda: _healthy(client), 30, "etcd's /health")
        yield client
    finally:
        p.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _publish(port, cluster_id, master_addr):
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    _post(port, "/v3/kv/put", {"key": b64("shelfmark/%s/leader" % cluster_id),
                                "value": b64(master_addr)})


def _setup(master, **kwargs):
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", 0, 4 << 20, "tcp", "", master, **kwargs)
    return s, rc


def test_mooncake_store_puts_and_gets_through_etcd(etcd, master_addr, prefix):
    _publish(etcd, "py-etcd", master_addr)
    s, rc = _setup("etcd://127.0.0.1:%d" % etcd, cluster_id="py-etcd")
    try:
        assert rc == OK
        assert s.put(prefix + "k", b"through etcd") == OK
        assert s.get(prefix + "k") == b"through etcd"
        assert s.remove(prefix + "k", True) == OK
    finally:
        s.close()


def test_cluster_id_from_mooncakes_variable(etcd, master_addr, prefix, monkeypatch):
    _publish(etcd, "py-mc-env", master_addr)
    monkeypatch.delenv("SHELFMARK_CLUSTER_ID", raising=False)
    monkeypatch.setenv("MC_STORE_CLUSTER_ID", "py-mc-env")
    with shelfmark.Store("etcd://127.0.0.1:%d" % etcd, local_buffer_size="4MB") as store:
        store.put(prefix + "e", b"env")
        assert store.get(prefix + "e") == b"env"


def test_no_leader_and_bad_addresses(etcd):
    s, rc = _setup("etcd://127.0.0.1:%d" % etcd, cluster_id="py-nobody", rpc_timeout_ms=300)
    s.close()
    assert rc == RPC_FAIL
    s, rc = _setup("etcd://")
    s.close()
    assert rc == INVALID_PARAMS
