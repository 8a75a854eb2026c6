# Service files of the master, node and store-service components, and the
# Debian packages (scripts/package.sh builds them): one package per install
# component.
#   master        -> shelfmark-master         binary, systemd unit, /etc/default file
#   node          -> shelfmark-node           binary, systemd unit, /etc/default file
#   store-service -> shelfmark-store-service  binary, systemd unit, /etc/default file
#   tools         -> shelfmark-tools          shelfmark-cli, shelfmark-perf
#   dev           -> libshelfmark-dev         libraries, headers, CMake package
#   python        -> python3-shelfmark        `mooncake` and `shelfmark` with the
#                                             native module, for Debian's python3
#                                             (python/CMakeLists.txt; only when
#                                             python/ is built)
# Runtime dependencies come from dpkg-shlibdeps; the unit's hardening and the
# maintainer scripts' behaviour are described in packaging/ and the README.

# The /etc/default files land in /etc when the prefix is /usr (the packages'),
# else under the prefix (GNUInstallDirs' rule for CMAKE_INSTALL_FULL_SYSCONFDIR).
set(SHELFMARK_UNIT_DIR ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(SHELFMARK_UNIT_DIR /lib/systemd/system)
endif()

set(SHELFMARK_DEB_DIR ${PROJECT_BINARY_DIR}/packaging)

# shelfmark_service(ROLE STATE_DIR): ROLE's unit, defaults file, README and
# maintainer scripts, in install component ROLE.
function(shelfmark_service role state_dir)
  set(PACKAGE shelfmark-${role})
  set(UNIT shelfmark-${role}.service)
  set(STATE_DIR ${state_dir})
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/${UNIT}
    DESTINATION ${SHELFMARK_UNIT_DIR} COMPONENT ${role})
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/default/${PACKAGE}
    DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/default COMPONENT ${role})
  install(FILES ${PROJECT_SOURCE_DIR}/README.md
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${PACKAGE} COMPONENT ${role})
  set(dir ${SHELFMARK_DEB_DIR}/${role})
  foreach(script postinst prerm postrm)
    configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/${script}.in ${dir}/${script}
      @ONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
      WORLD_READ WORLD_EXECUTE)
  endforeach()
  file(WRITE ${dir}/conffiles "${CMAKE_INSTALL_FULL_SYSCONFDIR}/default/${PACKAGE}\n")
  string(TOUPPER ${role} ROLE)
  set(CPACK_DEBIAN_${ROLE}_PACKAGE_CONTROL_EXTRA
    "${dir}/conffiles;${dir}/postinst;${dir}/prerm;${dir}/postrm" PARENT_SCOPE)
endfunction()

shelfmark_service(master /var/lib/shelfmark/snapshots)
shelfmark_service(node /var/lib/shelfmark/ssd)
shelfmark_service(store-service /var/lib/shelfmark/store-ssd)

# What scripts/package.sh builds before cpack (cpack itself builds nothing).
add_custom_target(shelfmark-packaged)
add_dependencies(shelfmark-packaged shelfmark-master shelfmark-node shelfmark-store-service
  shelfmark-cli shelfmark-perf shelfmark_client)
set(SHELFMARK_DEB_COMPONENTS master node store-service tools dev)
if(TARGET _shelfmark)
  add_dependencies(shelfmark-packaged _shelfmark)
  list(APPEND SHELFMARK_DEB_COMPONENTS python)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME shelfmark)
set(CPACK_PACKAGE_VENDOR Shelfmark)
set(CPACK_PACKAGE_CONTACT "Shelfmark developers <shelfmark@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "KV-cache store for LLM serving clusters")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${SHELFMARK_DEB_COMPONENTS})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://shelfmark.invalid/")

set(CPACK_DEBIAN_MASTER_PACKAGE_NAME shelfmark-master)
set(CPACK_DEBIAN_NODE_PACKAGE_NAME shelfmark-node)
set(CPACK_DEBIAN_STORE-SERVICE_PACKAGE_NAME shelfmark-store-service)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME shelfmark-tools)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libshelfmark-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The maintainer scripts create the user with adduser and drive the unit with
# deb-systemd-helper (init-system-helpers).
set(CPACK_DEBIAN_MASTER_PACKAGE_DEPENDS "adduser, init-system-helpers")
set(CPACK_DEBIAN_NODE_PACKAGE_DEPENDS "adduser, init-system-helpers")
set(CPACK_DEBIAN_STORE-SERVICE_PACKAGE_DEPENDS "adduser, init-system-helpers")
# python/CMakeLists.txt: the interpreter the native module is built for.
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-shelfmark)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "${SHELFMARK_PYTHON_DEB_DEPENDS}")
set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS python3-numpy)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS python3-torch)
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/python/prerm)
# Static libraries: what they link against comes with its -dev package, and
# ShelfmarkConfig.cmake finds UCX through pkg-config.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "libcapnp-dev, libucx-dev, libssl-dev, libcurl4-openssl-dev | libcurl-dev, pkg-config")
set(CPACK_COMPONENT_MASTER_DESCRIPTION
  "Shelfmark master: the KV-cache directory over Cap'n Proto RPC, as a systemd service")
set(CPACK_COMPONENT_NODE_DESCRIPTION
  "Shelfmark node: a DRAM segment and SSD store of the cluster, as a systemd service")
set(CPACK_COMPONENT_STORE-SERVICE_DESCRIPTION
  "Shelfmark store service: the host's DRAM segment and SSD tier for its engines, as a systemd service")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION
  "Shelfmark Python client: mooncake.store (Mooncake's store API) and shelfmark")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "Shelfmark command line (shelfmark-cli) and benchmarks (shelfmark-perf)")
set(CPACK_COMPONENT_DEV_DESCRIPTION "Shelfmark client library, headers and CMake package")
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_BINARY_DIR}/packages)
include(CPack)
