# UCX engine, loopback engine and TransportSet: library shelfmark::transport.
# UCX comes from Debian's libucx-dev (pkg-config "ucx").
find_package(PkgConfig REQUIRED)
pkg_check_modules(UCX REQUIRED IMPORTED_TARGET ucx)

shelfmark_library(transport
  SOURCES am_transport.cc loopback_am.cc loopback_engine.cc transport_set.cc ucx_context.cc
          ucx_engine.cc ucx_am.cc ucx_wire.cc ucx_address_server.cc local_share.cc
          challenge_book.cc ucx_memory_access.cc ucx_log_filter.cc
  DEPS shelfmark::common shelfmark::auth PkgConfig::UCX Threads::Threads)

shelfmark_test(challenge_book_test SOURCES challenge_book_test.cc DEPS shelfmark::transport
  LABELS unit)

shelfmark_test(loopback_engine_test SOURCES loopback_engine_test.cc DEPS shelfmark::transport
  LABELS unit TIMEOUT 60)
shelfmark_test(ucx_wire_test SOURCES ucx_wire_test.cc DEPS shelfmark::transport LABELS unit)
shelfmark_test(ucx_log_filter_test SOURCES ucx_log_filter_test.cc
  DEPS shelfmark::transport shelfmark::testing LABELS unit)
shelfmark_test(ucx_address_server_test SOURCES ucx_address_server_test.cc
  DEPS shelfmark::transport LABELS unit)
shelfmark_test(local_share_test SOURCES local_share_test.cc
  DEPS shelfmark::transport shelfmark::testing LABELS unit)
shelfmark_test(transport_set_test SOURCES transport_set_test.cc DEPS shelfmark::transport
  LABELS unit TIMEOUT 60)
shelfmark_test(ucx_engine_test SOURCES ucx_engine_test.cc
  DEPS shelfmark::transport shelfmark::testing LABELS unit TIMEOUT 120)
# The AmTransport contract on both implementations (UcxAm, LoopbackAm).
shelfmark_test(am_transport_test SOURCES am_transport_test.cc
  DEPS shelfmark::transport shelfmark::testing LABELS unit TIMEOUT 120)

# libFuzzer over the hello decoders (clang builds; ctest label fuzz).
shelfmark_fuzzer(ucx_wire_fuzz SOURCES ucx_wire_fuzz.cc ucx_wire.cc
  DEPS shelfmark::common shelfmark::auth)
