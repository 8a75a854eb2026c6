# shelfmark_library(NAME SOURCES... DEPS...): one library target per folder,
# aliased as shelfmark::NAME, built with the project's warnings. Installed
# ones (cmake/install.cmake) are exported as Shelfmark::NAME, their headers
# under include/shelfmark/NAME/.
function(shelfmark_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(shelfmark_${name} STATIC ${ARG_SOURCES})
  add_library(shelfmark::${name} ALIAS shelfmark_${name})
  set_target_properties(shelfmark_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(shelfmark_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/shelfmark>)
  target_compile_options(shelfmark_${name} PRIVATE ${SHELFMARK_WARNINGS})
  target_link_libraries(shelfmark_${name} PUBLIC ${ARG_DEPS})
endfunction()

# shelfmark_test(NAME SOURCES... DEPS... LABELS... [TIMEOUT s]): one GoogleTest
# binary registered with ctest under the given labels (unit, process, s3, cluster,
# softroce; docs/architecture.md says what each means).
function(shelfmark_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SHELFMARK_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

# shelfmark_binary(NAME COMPONENT C SOURCES... DEPS...): a program installed
# into bin/ as part of install component C (cmake/packaging.cmake maps the
# components master, node and tools to Debian packages; "benchmarks" is
# installed by a plain `cmake --install` only).
function(shelfmark_binary name)
  cmake_parse_arguments(ARG "" "COMPONENT" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_COMPONENT)
    message(FATAL_ERROR "shelfmark_binary(${name}): COMPONENT is required")
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SHELFMARK_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${ARG_COMPONENT})
endfunction()

# shelfmark_fuzzer(NAME SOURCES... DEPS...): a libFuzzer target (clang only,
# ASan + UBSan), with the decoder sources it covers among SOURCES so libFuzzer
# sees their coverage. ctest runs it for SHELFMARK_FUZZ_SECONDS (label fuzz;
# scripts/test.sh runs the label in the clang tree of its last pass).
set(SHELFMARK_FUZZ_SECONDS 20 CACHE STRING "seconds each fuzz target runs under ctest -L fuzz")
function(shelfmark_fuzzer name)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${SHELFMARK_WARNINGS}
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  add_test(NAME ${name}
    COMMAND ${name} -max_total_time=${SHELFMARK_FUZZ_SECONDS} -rss_limit_mb=2048 -print_final_stats=1)
  set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 600)
endfunction()

# shelfmark_link_rdma(target): links the verbs engine when it is built
# (transport/rdma_plugin.h tests SHELFMARK_HAVE_VERBS).
function(shelfmark_link_rdma target)
  if(TARGET shelfmark_transport_verbs)
    target_link_libraries(${target} PRIVATE shelfmark::transport_verbs)
    target_compile_definitions(${target} PRIVATE SHELFMARK_HAVE_VERBS=1)
  endif()
endfunction()
