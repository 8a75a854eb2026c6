"""mooncake.mooncake_config: Mooncake's configuration file and variables."""

import json

import pytest

from mooncake.mooncake_config import (DEFAULT_GLOBAL_SEGMENT_SIZE, DEFAULT_LOCAL_BUFFER_SIZE,
                                      MooncakeConfig, service_address)


def test_from_file_with_defaults(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"local_hostname": "h", "metadata_server": "m",
                             "master_server_address": "x:1"}))
    c = MooncakeConfig.from_file(str(p))
    assert c.global_segment_size == DEFAULT_GLOBAL_SEGMENT_SIZE
    assert c.local_buffer_size == DEFAULT_LOCAL_BUFFER_SIZE
    assert (c.protocol, c.device_name, c.tenant_id) == ("tcp", "", "default")


def test_required_fields_and_bad_values():
    with pytest.raises(ValueError, match="master_server_address"):
        MooncakeConfig.from_dict({"local_hostname": "h"})
    with pytest.raises(ValueError, match="Invalid protocol"):
        MooncakeConfig.from_dict({"local_hostname": "h", "master_server_address": "x:1",
                                  "protocol": "rmda"})
    with pytest.raises(ValueError):
        MooncakeConfig.from_dict({"local_hostname": "h", "master_server_address": "x:1",
                                  "local_buffer_size": "50%"})


def test_env(monkeypatch):
    monkeypatch.delenv("MOONCAKE_CONFIG_PATH", raising=False)
    monkeypatch.setenv("MOONCAKE_MASTER", "m:2")
    monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "2 GB")
    monkeypatch.setenv("MOONCAKE_LOCAL_BUFFER_SIZE", "16MB")
    monkeypatch.setenv("MOONCAKE_PROTOCOL", "rdma")
    monkeypatch.setenv("MOONCAKE_DEVICE", "mlx5_0,mlx5_1")
    c = MooncakeConfig.load_from_env()
    assert (c.master_server_address, c.global_segment_size, c.local_buffer_size) == \
        ("m:2", 2 << 30, 16 << 20)
    assert (c.protocol, c.device_name, c.metadata_server) == ("rdma", "mlx5_0,mlx5_1",
                                                              "P2PHANDSHAKE")


def test_codes_mooncake_numbers_differently():
    from mooncake import store
    assert store._c(-1002) == -1010 and store._c(-1000) == -601
    assert store._c(-704) == -704 and store._c(0) == 0
    codes = [0, -704, -900]
    assert store._cs(codes) is codes
    assert store._cs([0, -1002]) == [0, -1010]
    # Shelfmark's etcd codes (-1400..-1402) answer Mooncake's (-1000..-1002).
    assert [store._c(c) for c in (-1400, -1401, -1402)] == [-1000, -1001, -1002]
    # Its task codes (-1420, -1421) answer Mooncake's (-1400, -1401).
    assert [store._c(c) for c in (-1420, -1421)] == [-1400, -1401]
    assert store._c(-1410) == -1410  # NOT_LEADER: Mooncake has no such code


def test_follow_leader_hints_from_the_argument_or_the_environment(monkeypatch):
    from shelfmark._util import store_options

    def options(**extra):
        return store_options(master="h:1", protocol="ucx", tenant="", local_buffer_size=0,
                             global_segment_size=0, rpc_timeout_ms=1, transfer_timeout_ms=1,
                             cluster_token="", master_token="", device="", hostname="",
                             **extra)
    monkeypatch.delenv("SHELFMARK_FOLLOW_LEADER_HINTS", raising=False)
    assert options().follow_leader_hints is False
    assert options(follow_leader_hints=True).follow_leader_hints is True
    monkeypatch.setenv("SHELFMARK_FOLLOW_LEADER_HINTS", "1")
    assert options().follow_leader_hints is True
    assert options(follow_leader_hints=False).follow_leader_hints is False


def test_the_standalone_store_shape_and_its_service_address(tmp_path, monkeypatch):
    for var in ("MOONCAKE_CONFIG_PATH", "MOONCAKE_PREFERRED_SEGMENT",
                "MOONCAKE_STANDALONE_STORAGE", "MOONCAKE_CLIENT_SERVER_ADDRESS"):
        monkeypatch.delenv(var, raising=False)
    base = {"local_hostname": "h", "master_server_address": "x:1", "global_segment_size": 0}
    embedded = MooncakeConfig.from_dict(base)
    assert embedded.mode == "embedded" and service_address(embedded) is None
    standalone = MooncakeConfig.from_dict(dict(base, mode="standalone-store"))
    assert service_address(standalone) == "127.0.0.1:50052"
    monkeypatch.setenv("MOONCAKE_PREFERRED_SEGMENT", "10.0.0.5:50052")
    assert service_address(standalone) == "10.0.0.5:50052"
    given = MooncakeConfig.from_dict(dict(base, mode="standalone-store",
                                          client_server_address="127.0.0.1:6000"))
    assert service_address(given) == "127.0.0.1:6000"
    # A segment of its own: embedded, whatever the mode says.
    hosting = MooncakeConfig.from_dict(dict(base, mode="standalone-store",
                                            global_segment_size="1GB"))
    assert service_address(hosting) is None
    # vLLM passes setup() the sizes only: the mode is read from the file.
    p = tmp_path / "vllm.json"
    p.write_text(json.dumps(dict(base, mode="standalone-store",
                                 client_server_address="127.0.0.1:7000")))
    monkeypatch.setenv("MOONCAKE_CONFIG_PATH", str(p))
    assert service_address(embedded) == "127.0.0.1:7000"
    p.write_text("not json")
    assert service_address(embedded) is None
    # SGLang's switch, from its variable.
    monkeypatch.delenv("MOONCAKE_CONFIG_PATH")
    monkeypatch.setenv("MOONCAKE_MASTER", "m:2")
    monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "0")
    monkeypatch.setenv("MOONCAKE_STANDALONE_STORAGE", "true")
    assert service_address(MooncakeConfig.load_from_env()) == "10.0.0.5:50052"
    with pytest.raises(ValueError, match="mode"):
        MooncakeConfig.from_dict(dict(base, mode="sideways"))
