# Cap'n Proto schemas -> shelfmark::schemas. Generated code lands at
# ${CMAKE_BINARY_DIR}/schemas/<name>.capnp.{h,c++} and is included as
# "schemas/<name>.capnp.h". It is built without the project's warnings
# (generated code is exempt from -Werror).
set(CAPNPC_SRC_PREFIX "${PROJECT_SOURCE_DIR}")
set(CAPNPC_OUTPUT_DIR "${CMAKE_BINARY_DIR}")
file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/schemas")
capnp_generate_cpp(SHELFMARK_SCHEMA_SRCS SHELFMARK_SCHEMA_HDRS
  ${CMAKE_CURRENT_LIST_DIR}/master.capnp)
unset(CAPNPC_SRC_PREFIX)
unset(CAPNPC_OUTPUT_DIR)

add_library(shelfmark_schemas STATIC ${SHELFMARK_SCHEMA_SRCS} ${SHELFMARK_SCHEMA_HDRS})
add_library(shelfmark::schemas ALIAS shelfmark_schemas)
target_include_directories(shelfmark_schemas PUBLIC ${CMAKE_BINARY_DIR})
target_link_libraries(shelfmark_schemas PUBLIC
  CapnProto::capnp-rpc CapnProto::kj-async CapnProto::capnp CapnProto::kj)
