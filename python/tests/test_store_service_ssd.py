"""shelfmark-store-service --enable_offload: the service's segment gets an
SSD tier in $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH (docs/node.md). A real
master (--enable_offload), a real service and dummy clients in processes of
their own: objects put through the service land on the tier, and after the
service restarts it re-reports them, so clients read them again byte-exact."""

import os
import re
import subprocess
import sys
import urllib.request

import pytest

from conftest import Process, _binary, wait_for

TOKEN = "store-service-ssd-pytest-token-0123"
SCRIPT = os.path.join(os.path.dirname(__file__), "dummy_client_script.py")
COUNT, SIZE = 16, 64 << 10
DEADLINE_S = 30


def run_script(*args):
    env = dict(os.environ, SHELFMARK_CLUSTER_TOKEN=TOKEN)
    out = subprocess.run([sys.executable, SCRIPT, *args], env=env, capture_output=True,
                         text=True, timeout=120)
    return out.stdout + out.stderr


class Services:
    """A master with offload, and store services started on one socket and
    one SSD directory, one after the other."""

    def __init__(self, cluster, tmp):
        self.cluster, self.tmp = cluster, tmp
        _, self.master = cluster.start_master("--enable_offload=true")
        self.token_file = os.path.join(tmp, "token")
        with open(self.token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(self.token_file, 0o600)
        self.socket = os.path.join(tmp, "store.sock")
        self.ssd = os.path.join(tmp, "ssd")
        os.mkdir(self.ssd)
        self.started = 0

    def start(self, *flags, env=None):
        """A service process (not waited for)."""
        self.started += 1
        p = Process([_binary("SHELFMARK_STORE_SERVICE_BIN"),
                     "--master_server_address=" + self.master, "--host=127.0.0.1",
                     "--global_segment_size=%d" % (64 << 20), "--socket_path=" + self.socket,
                     "--cluster_token_file=" + self.token_file, "--enable_http_server",
                     "--http_port=0", *flags],
                    os.path.join(self.tmp, "store-service-%d.err" % self.started),
                    {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": self.ssd} if env is None else env)
        self.cluster.processes.append(p)
        return p

    def serve(self):
        """A service with the tier, serving; its metrics port."""
        p = self.start("--enable_offload")
        port = p.wait_text(r"http port (\d+)", "shelfmark-store-service serving").group(1)
        assert re.search(r"ssd tier backend=\S+ path=" + re.escape(self.ssd), p.log()), p.log()
        return p, int(port)


def metric(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


@pytest.fixture
def services(tmp_cluster):
    return Services(tmp_cluster, tmp_cluster.tmp)


def test_the_tier_survives_a_service_restart(services, prefix):
    service, port = services.serve()
    assert "put ok" in run_script("put", services.socket, prefix, str(COUNT), str(SIZE))
    wait_for(lambda: metric(port, "shelfmark_store_service_offloaded_objects_total") >= COUNT,
             DEADLINE_S, "the objects copied to the SSD tier")
    assert metric(port, "shelfmark_store_service_disk_objects") == COUNT
    service.stop()
    assert service.proc.returncode == 0

    # The new service's DRAM is empty: every object is read from its tier.
    service, port = services.serve()
    wait_for(lambda: metric(port, "shelfmark_store_service_disk_reported_objects_total") >= COUNT,
             DEADLINE_S, "the tier's objects re-reported")
    out = run_script("get", services.socket, prefix, str(COUNT), str(SIZE))
    assert "get ok" in out, out
    assert metric(port, "shelfmark_store_service_disk_requests_total") >= COUNT
    assert metric(port, "shelfmark_store_service_disk_served_bytes_total") >= COUNT * SIZE
    service.stop()
    assert service.proc.returncode == 0


@pytest.mark.parametrize("flags, env, says", [
    ((), {}, "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"),
    ((), {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": "relative/dir"},
     "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH=relative/dir"),
    ((), "ssd+", "MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT"),
    (("--protocol=rdma",), "ssd", "--protocol=rdma"),
])
def test_a_bad_tier_setting_exits_2_with_a_message(services, flags, env, says, monkeypatch):
    monkeypatch.delenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", raising=False)
    if env == "ssd":
        env = {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": services.ssd}
    elif env == "ssd+":
        env = {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": services.ssd,
               "MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT": "many"}
    p = services.start("--enable_offload", *flags, env=env)
    assert p.proc.wait(timeout=DEADLINE_S) == 2
    assert says in p.log(), p.log()
    assert "--enable_offload" in p.log(), p.log()
