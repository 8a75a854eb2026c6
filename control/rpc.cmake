# Cap'n Proto RPC: wire conversions, the master's RPC server and the client stub.
list(APPEND CONTROL_SOURCES rpc_convert.cc rpc_server.cc master_client.cc)

shelfmark_test(rpc_test
  SOURCES rpc_server_test.cc rpc_convert_test.cc
  DEPS shelfmark::control
  LABELS quick)
