# libshelfmark-dev: the client library and the libraries it is built on, their
# headers and a CMake package, so that a program outside the tree can write
#   find_package(Shelfmark REQUIRED)
#   target_link_libraries(app PRIVATE Shelfmark::client)
# (tests/package/consumer is such a program). The binaries install themselves
# (shelfmark_binary in cmake/shelfmark.cmake).
include(CMakePackageConfigHelpers)

set(SHELFMARK_DEV_LIBRARIES common auth schemas ha rpc transport client)
set(SHELFMARK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Shelfmark)

foreach(lib IN LISTS SHELFMARK_DEV_LIBRARIES)
  install(TARGETS shelfmark_${lib} EXPORT ShelfmarkTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  if(NOT lib STREQUAL "schemas")
    # Headers keep their folder, as the sources include them ("client/client.h").
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${lib}/
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shelfmark/${lib} COMPONENT dev
      FILES_MATCHING PATTERN "*.h" PATTERN "*_test_util.h" EXCLUDE)
  endif()
endforeach()
# The generated Cap'n Proto headers (schemas/CMakeLists.txt).
install(DIRECTORY ${PROJECT_BINARY_DIR}/schemas/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shelfmark/schemas COMPONENT dev
  FILES_MATCHING PATTERN "*.capnp.h" PATTERN CMakeFiles EXCLUDE)

install(EXPORT ShelfmarkTargets NAMESPACE Shelfmark::
  DESTINATION ${SHELFMARK_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ShelfmarkConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ShelfmarkConfig.cmake INSTALL_DESTINATION ${SHELFMARK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ShelfmarkConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ShelfmarkConfig.cmake
  ${PROJECT_BINARY_DIR}/ShelfmarkConfigVersion.cmake
  DESTINATION ${SHELFMARK_CMAKE_DIR} COMPONENT dev)
