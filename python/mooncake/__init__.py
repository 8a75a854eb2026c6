"""Mooncake-compatible names over Shelfmark (docs/python.md).

`mooncake.store` is Mooncake's store API (MooncakeDistributedStore,
ReplicateConfig, ...) served by Shelfmark's native module, so connectors
written for Mooncake (vLLM, LMCache, SGLang) run unchanged;
`mooncake.mooncake_config` is its configuration loader (JSON file at
$MOONCAKE_CONFIG_PATH, or $MOONCAKE_MASTER and the other MOONCAKE_* variables).
Only the store is provided: there is no transfer engine here.
"""
