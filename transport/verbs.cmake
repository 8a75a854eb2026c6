# RDMA verbs engine (libibverbs + librdmacm from Debian's libibverbs-dev and
# librdmacm-dev): library shelfmark::transport_verbs, on shelfmark::transport
# (the handshake's ChallengeBook). Built only where rdma-core's headers and
# libraries exist; binaries test for the target (transport/rdma_plugin.h).
find_path(SHELFMARK_VERBS_INCLUDE infiniband/verbs.h)
find_path(SHELFMARK_RDMACM_INCLUDE rdma/rdma_cma.h)
find_library(SHELFMARK_IBVERBS_LIB ibverbs)
find_library(SHELFMARK_RDMACM_LIB rdmacm)
if(NOT SHELFMARK_VERBS_INCLUDE OR NOT SHELFMARK_RDMACM_INCLUDE OR
   NOT SHELFMARK_IBVERBS_LIB OR NOT SHELFMARK_RDMACM_LIB)
  message(STATUS "rdma-core (libibverbs-dev, librdmacm-dev) not found: no verbs engine")
  return()
endif()

shelfmark_library(transport_verbs
  SOURCES verbs_device.cc verbs_connection.cc verbs_engine.cc
  DEPS shelfmark::transport ${SHELFMARK_IBVERBS_LIB} ${SHELFMARK_RDMACM_LIB} Threads::Threads)

# On a host without an RDMA device the device tests skip ("no RDMA device");
# the same binary runs them inside the soft-RoCE VM (label softroce below).
shelfmark_test(verbs_engine_test SOURCES verbs_engine_test.cc DEPS shelfmark::transport_verbs
  LABELS unit TIMEOUT 120)

# The soft-RoCE VM suite: boots Debian's kernel in QEMU (TCG) with rxe0/rxe1
# over a veth pair and runs verbs_engine_test and ib_read_lat inside
# (tests/softroce/run_vm_suite.sh installs qemu and friends: scripts/setup.sh
# label-softroce).
add_test(NAME softroce_vm_suite
  COMMAND ${PROJECT_SOURCE_DIR}/tests/softroce/run_vm_suite.sh ${PROJECT_BINARY_DIR})
set_tests_properties(softroce_vm_suite PROPERTIES LABELS softroce TIMEOUT 900)
