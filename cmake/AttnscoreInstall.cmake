# SPDX-License-Identifier: Apache-2.0
# cmake --install: the public headers, the library, the CMake package (attnscore::attnscore;
# SameMinorVersion before 1.0, then SameMajorVersion) and attnscore.pc. xsimd and every internal
# target are build-time only: the library links them through $<BUILD_INTERFACE:...>, so nothing
# of theirs is exported, and the per-level OBJECT libraries are compiled into the library itself.
include(CMakePackageConfigHelpers)

set(ATTNSCORE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnscore)

install(TARGETS attnscore EXPORT attnscoreTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/lib/include/attnscore/attnscore.h
              ${PROJECT_SOURCE_DIR}/lib/include/attnscore/attnscore.hpp
              ${PROJECT_BINARY_DIR}/lib/include/attnscore/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnscore)
# A static attnscore is C++ inside: a program linked by the C compiler also needs the C++ runtime,
# which is what the C++ compiler links beyond the C compiler's own libraries (libstdc++ and libm
# with GCC). The CMake package adds it for C-only projects, pkg-config in Libs.private.
set(ATTNSCORE_CXX_RUNTIME)
foreach(lib IN LISTS CMAKE_CXX_IMPLICIT_LINK_LIBRARIES)
  if(NOT lib IN_LIST CMAKE_C_IMPLICIT_LINK_LIBRARIES AND NOT lib MATCHES "^-" AND
     NOT lib IN_LIST ATTNSCORE_CXX_RUNTIME)
    list(APPEND ATTNSCORE_CXX_RUNTIME ${lib})
  endif()
endforeach()

install(EXPORT attnscoreTargets NAMESPACE attnscore:: DESTINATION ${ATTNSCORE_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/attnscoreConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/attnscoreConfig.cmake
                              INSTALL_DESTINATION ${ATTNSCORE_CMAKE_DIR})
# Before 1.0 a minor version may change the API (0.2.0 did): find_package(attnscore 0.1) must not
# accept 0.2, so 0.x packages match on MAJOR.MINOR, later ones on MAJOR.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ATTNSCORE_VERSION_COMPATIBILITY SameMinorVersion)
else()
  set(ATTNSCORE_VERSION_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnscoreConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY ${ATTNSCORE_VERSION_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/attnscoreConfig.cmake
              ${PROJECT_BINARY_DIR}/attnscoreConfigVersion.cmake
        DESTINATION ${ATTNSCORE_CMAKE_DIR})

# pkg-config: the runtime above, libm and pthread for `pkg-config --static`.
set(ATTNSCORE_PC_LIBS_PRIVATE)
foreach(lib IN LISTS ATTNSCORE_CXX_RUNTIME ITEMS m pthread)
  if(NOT "-l${lib}" IN_LIST ATTNSCORE_PC_LIBS_PRIVATE)
    list(APPEND ATTNSCORE_PC_LIBS_PRIVATE "-l${lib}")
  endif()
endforeach()
string(REPLACE ";" " " ATTNSCORE_PC_LIBS_PRIVATE "${ATTNSCORE_PC_LIBS_PRIVATE}")
# Relocatable: paths relative to the .pc file's own directory, so `cmake --install --prefix`
# anywhere gives a working file.
set(ATTNSCORE_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ATTNSCORE_PC_DIR ${CMAKE_INSTALL_DATADIR}/pkgconfig)
endif()
file(RELATIVE_PATH ATTNSCORE_PC_UP /${ATTNSCORE_PC_DIR} /)
string(REGEX REPLACE "/$" "" ATTNSCORE_PC_UP "${ATTNSCORE_PC_UP}")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(ATTNSCORE_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(ATTNSCORE_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/attnscore.pc.in ${PROJECT_BINARY_DIR}/attnscore.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/attnscore.pc DESTINATION ${ATTNSCORE_PC_DIR})
