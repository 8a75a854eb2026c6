"""Mooncake's store configuration: a JSON file named by $MOONCAKE_CONFIG_PATH,
or, without one, $MOONCAKE_MASTER and the other MOONCAKE_* variables
(the same names and defaults as Mooncake's loader; docs/python.md).

Sizes are bytes or size strings ("16MB", "16 MB", "1.5GB"); anything else,
such as "50%", raises ValueError.
"""

import json
import os
from dataclasses import dataclass

from shelfmark._util import parse_size

DEFAULT_GLOBAL_SEGMENT_SIZE = 3355443200  # 3.125 GiB, Mooncake's default
DEFAULT_LOCAL_BUFFER_SIZE = 1 << 30       # 1 GiB, Mooncake's default

# Mooncake's names; "tcp" runs on Shelfmark's UCX engine, "rdma" on verbs.
# Shelfmark's own engine names are accepted too.
PROTOCOLS = {"tcp": "ucx", "rdma": "rdma", "ucx": "ucx", "auto": "auto", "loopback": "loopback"}

MODES = ("embedded", "standalone-store")
DEFAULT_SERVICE_ADDRESS = "127.0.0.1:50052"  # Mooncake's mooncake_client port

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def _bool(value):
    if isinstance(value, (bool, int)):
        return bool(value)
    s = str(value).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    raise ValueError("not a boolean: %r" % (value,))


@dataclass
class MooncakeConfig:
    local_hostname: str
    metadata_server: str
    global_segment_size: int
    local_buffer_size: int
    protocol: str
    device_name: str
    master_server_address: str
    enable_ssd_offload: bool = False  # the SSD tier of the store's own segment (setup)
    ssd_offload_path: str = ""
    tenant_id: str = "default"
    # The store shape (vLLM's mooncake_config.json "mode"): "embedded", or
    # "standalone-store" (with global_segment_size 0: the calls go to the
    # host's store service; standalone.py). standalone_storage is SGLang's
    # switch for the same; client_server_address names the service.
    mode: str = "embedded"
    client_server_address: str = ""
    standalone_storage: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError("unknown Mooncake mode %r (one of %s)" % (self.mode, ", ".join(MODES)))
        if not isinstance(self.protocol, str) or self.protocol.lower() not in PROTOCOLS:
            raise ValueError("Invalid protocol %r (one of %s)"
                             % (self.protocol, ", ".join(sorted(PROTOCOLS))))
        self.global_segment_size = parse_size(self.global_segment_size, "global_segment_size")
        self.local_buffer_size = parse_size(self.local_buffer_size, "local_buffer_size")
        for field in ("local_hostname", "master_server_address"):
            if not str(getattr(self, field) or "").strip():
                raise ValueError("config field %s is empty" % field)

    @staticmethod
    def from_dict(config):
        """From a mapping with the JSON file's fields (master_server_addr and
        rdma_devices are accepted for master_server_address and device_name)."""
        config = dict(config)
        if "master_server_addr" in config and "master_server_address" not in config:
            config["master_server_address"] = config.pop("master_server_addr")
        if "rdma_devices" in config and "device_name" not in config:
            config["device_name"] = config.pop("rdma_devices")
        for field in ("local_hostname", "master_server_address"):
            if field not in config:
                raise ValueError("Missing required config field: %s" % field)
        return MooncakeConfig(
            local_hostname=config["local_hostname"],
            metadata_server=config.get("metadata_server", "P2PHANDSHAKE"),
            global_segment_size=config.get("global_segment_size", DEFAULT_GLOBAL_SEGMENT_SIZE),
            local_buffer_size=config.get("local_buffer_size", DEFAULT_LOCAL_BUFFER_SIZE),
            protocol=config.get("protocol", "tcp"),
            device_name=config.get("device_name", "") or "",
            master_server_address=config["master_server_address"],
            enable_ssd_offload=_bool(config.get("enable_ssd_offload", False)),
            ssd_offload_path=str(config.get("ssd_offload_path") or ""),
            tenant_id=str(config.get("tenant_id") or "default"),
            mode=str(config.get("mode") or "embedded"),
            client_server_address=str(config.get("client_server_address") or ""),
            standalone_storage=_bool(config.get("standalone_storage", False)),
        )

    @staticmethod
    def from_file(path):
        with open(path) as f:
            return MooncakeConfig.from_dict(json.load(f))

    @staticmethod
    def load_from_env():
        """$MOONCAKE_CONFIG_PATH's file, else the MOONCAKE_* variables
        ($MOONCAKE_MASTER required); ValueError when neither is set."""
        path = os.getenv("MOONCAKE_CONFIG_PATH")
        if path:
            return MooncakeConfig.from_file(path)
        master = os.getenv("MOONCAKE_MASTER")
        if not master:
            raise ValueError("Neither the environment variable 'MOONCAKE_CONFIG_PATH' "
                             "nor 'MOONCAKE_MASTER' is set.")
        return MooncakeConfig(
            local_hostname=os.getenv("MOONCAKE_LOCAL_HOSTNAME",
                                     os.getenv("LOCAL_HOSTNAME", "localhost")),
            metadata_server=os.getenv("MOONCAKE_TE_META_DATA_SERVER", "P2PHANDSHAKE"),
            global_segment_size=os.getenv("MOONCAKE_GLOBAL_SEGMENT_SIZE",
                                          DEFAULT_GLOBAL_SEGMENT_SIZE),
            local_buffer_size=os.getenv("MOONCAKE_LOCAL_BUFFER_SIZE", DEFAULT_LOCAL_BUFFER_SIZE),
            protocol=os.getenv("MOONCAKE_PROTOCOL", "tcp"),
            device_name=os.getenv("MOONCAKE_DEVICE", ""),
            master_server_address=master,
            enable_ssd_offload=_bool(os.getenv("MOONCAKE_OFFLOAD_ENABLED", "false")),
            ssd_offload_path=os.getenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", ""),
            tenant_id=os.getenv("MOONCAKE_TENANT_ID", "default"),
            client_server_address=os.getenv("MOONCAKE_CLIENT_SERVER_ADDRESS", ""),
            standalone_storage=_bool(os.getenv("MOONCAKE_STANDALONE_STORAGE", "false")),
        )

    def is_standalone(self):
        """True when this configuration asks for the standalone-store shape."""
        return self.mode == "standalone-store" or self.standalone_storage


def service_address(cfg):
    """The host's store service a setup() with `cfg` goes to, or None when
    it asks for the embedded shape: a global_segment_size of 0 with the
    standalone-store mode in `cfg` or in $MOONCAKE_CONFIG_PATH's file (vLLM
    passes setup() the file's sizes, not its mode), or SGLang's
    standalone_storage. The address: the configuration's
    client_server_address, else $MOONCAKE_PREFERRED_SEGMENT (the service's
    segment, as vLLM's deployments set it), else 127.0.0.1:50052."""
    if cfg.global_segment_size != 0:
        return None
    file_cfg = {}
    path = os.getenv("MOONCAKE_CONFIG_PATH")
    if path and not cfg.is_standalone():
        try:
            with open(path) as f:
                file_cfg = json.load(f)
        except (OSError, ValueError):
            file_cfg = {}
        if not isinstance(file_cfg, dict):
            file_cfg = {}
    try:
        file_standalone = file_cfg.get("mode") == "standalone-store" or \
            _bool(file_cfg.get("standalone_storage", False))
    except ValueError:
        file_standalone = False
    if not cfg.is_standalone() and not file_standalone:
        return None
    return (cfg.client_server_address or str(file_cfg.get("client_server_address") or "")
            or os.getenv("MOONCAKE_PREFERRED_SEGMENT", "") or DEFAULT_SERVICE_ADDRESS)
