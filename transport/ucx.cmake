# UCX engine, loopback engine and TransportSet: library shelfmark::transport.
# UCX comes from Debian's libucx-dev (pkg-config "ucx").
find_package(PkgConfig REQUIRED)
pkg_check_modules(UCX REQUIRED IMPORTED_TARGET ucx)

shelfmark_library(transport
  SOURCES loopback_engine.cc transport_set.cc ucx_context.cc ucx_engine.cc ucx_am.cc
  DEPS shelfmark::directory PkgConfig::UCX Threads::Threads)

shelfmark_test(loopback_engine_test SOURCES loopback_engine_test.cc DEPS shelfmark::transport
  LABELS quick TIMEOUT 60)
shelfmark_test(transport_set_test SOURCES transport_set_test.cc DEPS shelfmark::transport
  LABELS quick TIMEOUT 60)
shelfmark_test(ucx_engine_test SOURCES ucx_engine_test.cc DEPS shelfmark::transport
  LABELS quick TIMEOUT 120)
shelfmark_test(ucx_am_test SOURCES ucx_am_test.cc DEPS shelfmark::transport
  LABELS quick TIMEOUT 120)
