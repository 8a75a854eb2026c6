# Multi-process tests against the real binaries.
shelfmark_test(master_process_test
  SOURCES master_process_test.cc process_util.cc
  DEPS shelfmark::control
  LABELS quick)
target_compile_definitions(master_process_test PRIVATE
  SHELFMARK_MASTER_BIN="$<TARGET_FILE:shelfmark-master>")
add_dependencies(master_process_test shelfmark-master)
