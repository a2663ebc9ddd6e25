# What `cmake --install` lays out, the CMake package C++ tests find with
# `find_package(understudy)`, and the Debian packages CPack builds from it
# (docs/install.md). Included last from the top-level CMakeLists.txt, once
# every target exists; the whole layout is here, in one place:
#
#   bin/understudy, bin/understudy-sim                     component server
#   share/understudy/scenarios/*.yaml (the named packs)    component server
#   share/understudy/schemas/*.json                        component server
#   share/understudy/sim/meow, hook (the sim walk-through's) component server
#   share/doc/understudy/ (README.md, docs/)               component server
#   lib/systemd/system/understudy.service                  component server
#   /etc/understudy/server.toml (PREFIX/etc unless /usr)   component server
#   include/understudy/clients/cpp/understudy_testing.h    component dev
#   include/understudy/understudy/v1/*.pb.h, *.proto       component dev
#   include/understudy/grpc/health/v1/*.pb.h, *.proto      component dev
#   lib/libunderstudy_testing.a, lib/libunderstudy_proto.a component dev
#   lib/cmake/understudy/understudyConfig.cmake, ...       component dev
#
# The two components become the packages `understudy` and `understudy-dev`.
# Headers keep their in-tree relative paths under one root,
# include/understudy, so a test includes "clients/cpp/understudy_testing.h"
# in this repository and against the installed package alike, and the
# generated grpc/health/v1 headers never land in Debian's /usr/include/grpc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(UNDERSTUDY_INCLUDE_ROOT ${CMAKE_INSTALL_INCLUDEDIR}/understudy)
set(UNDERSTUDY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/understudy)

# --- component server: the programs and their data -------------------------
install(TARGETS understudy understudy-sim
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
# The named scenario packs (`--scenario rate-limit`) and the JSON Schemas of
# the document formats, for editors (docs/schemas.md).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/scenarios/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/understudy/scenarios COMPONENT server
        FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/understudy/schemas COMPONENT server
        FILES_MATCHING PATTERN "*.json")
# The completion command and the hook command docs/sim.md's tmux
# walk-through runs: small reporters to an orchestrator's Unix socket, the
# ones the sim's end-to-end tests use (tests/sim).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tests/sim/meow ${PROJECT_SOURCE_DIR}/tests/sim/hook
        DESTINATION ${CMAKE_INSTALL_DATADIR}/understudy/sim COMPONENT server)
# A shared server (docs/scaling.md): the systemd unit, installed disabled,
# and the configuration it reads, an admin's file (a conffile in the .deb).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/understudy.service
        DESTINATION lib/systemd/system COMPONENT server)
# The configuration goes where the prefix's system configuration does,
# decided at install time: /etc for the prefix /usr (a system install, or
# the .deb, staged under a folder ending in /usr), PREFIX/etc otherwise
# (`cmake --install --prefix /opt/understudy`).
install(CODE "set(UNDERSTUDY_SERVER_TOML \"${PROJECT_SOURCE_DIR}/packaging/systemd/server.toml\")"
        COMPONENT server)
install(CODE [[
  if(CMAKE_INSTALL_PREFIX MATCHES "/usr/?$")
    get_filename_component(_understudy_etc "${CMAKE_INSTALL_PREFIX}/../etc" ABSOLUTE)
  else()
    set(_understudy_etc "${CMAKE_INSTALL_PREFIX}/etc")
  endif()
  file(INSTALL "${UNDERSTUDY_SERVER_TOML}" DESTINATION "${_understudy_etc}/understudy")
]] COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT server)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT server
        FILES_MATCHING PATTERN "*.md")

# --- component dev: the C++ helper and its CMake package ---------------------
# The libraries name their include directories as absolute paths of the
# source and build trees, which an installed package must not carry: each
# such path becomes build-only, and installed targets get the include root.
function(understudy_installed_includes target)
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped)
  foreach(dir IN LISTS dirs)
    if(IS_ABSOLUTE "${dir}")
      list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
    else()
      list(APPEND wrapped "${dir}")
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
endfunction()
understudy_installed_includes(understudy_testing)
understudy_installed_includes(understudy_proto)
# understudy::testing and understudy::proto once installed, as in this tree.
set_target_properties(understudy_testing PROPERTIES EXPORT_NAME testing)
set_target_properties(understudy_proto PROPERTIES EXPORT_NAME proto)
# The header needs C++17 (std::optional, inline variables); say so to users.
target_compile_features(understudy_testing INTERFACE cxx_std_17)

install(TARGETS understudy_testing understudy_proto
        EXPORT understudyTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${UNDERSTUDY_INCLUDE_ROOT})
# A static library exports its private links too (link-only), so the
# warnings target travels with the package; it gives users no compile option.
install(TARGETS understudy_warnings EXPORT understudyTargets COMPONENT dev)
# `--strip` (CPACK_STRIP_FILES) leaves static libraries whole, since their
# symbol table is what links them; their debug information is dropped here.
install(CODE "
  if(CMAKE_INSTALL_DO_STRIP)
    foreach(lib $<TARGET_FILE_NAME:understudy_testing> $<TARGET_FILE_NAME:understudy_proto>)
      execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
        \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/\${lib}\"
        COMMAND_ERROR_IS_FATAL ANY)
    endforeach()
  endif()" COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/clients/cpp/understudy_testing.h
        DESTINATION ${UNDERSTUDY_INCLUDE_ROOT}/clients/cpp COMPONENT dev)
# The generated messages and stubs (proto/'s build directory), with the
# .proto files they come from, as protobuf installs its own.
get_target_property(UNDERSTUDY_PROTO_OUT understudy_proto BINARY_DIR)
install(DIRECTORY ${UNDERSTUDY_PROTO_OUT}/understudy ${UNDERSTUDY_PROTO_OUT}/grpc
        DESTINATION ${UNDERSTUDY_INCLUDE_ROOT} COMPONENT dev
        FILES_MATCHING PATTERN "*.pb.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/understudy ${PROJECT_SOURCE_DIR}/proto/grpc
        DESTINATION ${UNDERSTUDY_INCLUDE_ROOT} COMPONENT dev
        FILES_MATCHING PATTERN "*.proto")

install(EXPORT understudyTargets
        NAMESPACE understudy::
        DESTINATION ${UNDERSTUDY_CMAKE_DIR}
        COMPONENT dev)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/understudyConfig.cmake.in
  ${PROJECT_BINARY_DIR}/understudyConfig.cmake
  INSTALL_DESTINATION ${UNDERSTUDY_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/understudyConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/understudyConfig.cmake
              ${PROJECT_BINARY_DIR}/understudyConfigVersion.cmake
        DESTINATION ${UNDERSTUDY_CMAKE_DIR} COMPONENT dev)

# --- CPack: the Debian packages ------------------------------------------
set(UNDERSTUDY_PACKAGE_MAINTAINER "understudy maintainers <maintainers@understudy.dev>"
    CACHE STRING "Maintainer field of the Debian packages")
set(UNDERSTUDY_PACKAGE_HOMEPAGE "https://understudy.dev/"
    CACHE STRING "Homepage field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME understudy)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR understudy)
set(CPACK_PACKAGE_CONTACT "${UNDERSTUDY_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_INSTALL_DIRECTORY understudy)
# The packages carry the stripped programs; debug information stays in the
# build tree.
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL server dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${UNDERSTUDY_PACKAGE_HOMEPAGE}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME understudy)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION devel)
# Depends: the Debian runtime libraries the programs link, as dpkg-shlibdeps
# reads them off the binaries (dpkg-dev).
set(CPACK_DEBIAN_SERVER_PACKAGE_SHLIBDEPS ON)
file(WRITE ${CMAKE_BINARY_DIR}/deb-server/conffiles "/etc/understudy/server.toml\n")
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/deb-server/conffiles)
# What the sim's tmux walk-through (docs/sim.md) runs besides: its reporters
# (share/understudy/sim) are Python, the terminal is tmux.
set(CPACK_DEBIAN_SERVER_PACKAGE_SUGGESTS "python3, tmux")
# Descriptions: the synopsis line, then paragraphs (CPack indents them).
set(CPACK_DEBIAN_SERVER_DESCRIPTION
"stand-in model server for testing LLM-agent systems
understudy stands in for the model over gRPC and over the HTTP APIs the
official SDKs speak (OpenAI Chat Completions and Responses, Anthropic
Messages, Google Gemini): it records a real multi-agent session once into
SQLite, replays it in CI byte for byte with no network, scripts answers
with scenario files, and asserts on the trace of every run.

This package holds the understudy and understudy-sim programs, the
shipped scenario packs, the JSON Schemas of the document formats and the
two reporters the simulated agent's tmux walk-through runs.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME understudy-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# What a user's `find_package(understudy)` finds in turn (understudyConfig),
# and the server the tests talk to.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "understudy (= ${PROJECT_VERSION}), libgrpc++-dev, libprotobuf-dev, libgmock-dev, libgtest-dev, libabsl-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION
"GoogleTest helpers and CMake package for understudy
C++ tests of LLM-agent systems start runs on an understudy server and state
what must hold of a run's trace with gMock matchers (HasAgentSequence,
HasToolCalls, SatisfiesSpec, ...); the checks run on the server.

This package holds the helper's headers and static libraries, the generated
gRPC stubs of the understudy.v1 API with their .proto files, and the CMake
package: find_package(understudy) gives the target understudy::testing.")

include(CPack)
