# TilecInstall.cmake - what `cmake --install` puts where, and what `pip
# install .` (scikit-build-core, pyproject.toml) puts inside the wheel.
#
# cmake --install build --prefix PREFIX:
#   bin/tilec                              the compiler CLI
#   lib/libtilert.so{,.0,.0.1.0}           the runtime, shared (exports tilert_* and tilec_*)
#   lib/libtilert.a                        the same runtime, static (compiler and CUDA
#                                          loader objects inside; link -ldl -lm)
#   include/tilec/tilert.h, tilec.h        the public headers
#   include/tilec/dlpack/dlpack.h          the DLPack header this runtime was built
#                                          against (tilert.h includes it); under
#                                          include/tilec so it never shadows a system copy
#   lib/cmake/tilec/tilecConfig*.cmake     find_package(tilec): tilec::tilert (shared),
#                                          tilec::tilert_static, tilec::tilec (the CLI)
#   lib/pkgconfig/tilert.pc                pkg-config tilert (--static adds -ldl -lm)
# Both the config file and the .pc file locate the prefix from their own path,
# so the installed tree can be moved (DESTDIR, tarballs).
#
# Nothing is read from the install tree at run time: the device headers NVRTC
# needs (runtime/device/*.cuh) are compiled into libtilert as strings
# (runtime/cuda/embed_header.cmake), and the C backend's output includes only
# libc headers. So the headers above are for building against the runtime only.
#
# Under scikit-build-core (SKBUILD is set) only what the Python package loads is
# installed, into the package folder: tilec/lib/libtilert.so,
# tilec/bin/tilec and tilec/kernels/{flash_attention,gemm,gemm_splitk,gemm_thin}.tile
# (python/tilec/_ffi.py, _cli.py, torch.py and splitk.py look there first).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(STRINGS ${PROJECT_SOURCE_DIR}/compiler/include/tilec.h _tilec_version_line
     REGEX "#define TILEC_VERSION_STRING ")
string(REGEX REPLACE ".*\"([^\"]+)\".*" "\\1" TILEC_VERSION "${_tilec_version_line}")

# The static runtime: the runtime's, the compiler's and the CUDA loader's
# objects in one archive, so a consumer links one library.
add_library(tilert_static STATIC
  $<TARGET_OBJECTS:tilert_objects> $<TARGET_OBJECTS:tilec> $<TARGET_OBJECTS:tilert_cuda>)
set_target_properties(tilert_static PROPERTIES OUTPUT_NAME tilert
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
target_link_libraries(tilert_static INTERFACE ${CMAKE_DL_LIBS} m)

if(SKBUILD)
  # The wheel: one file per binary (a wheel cannot hold symlinks), loaded by path.
  install(FILES $<TARGET_FILE:tilert> DESTINATION tilec/lib RENAME libtilert.so COMPONENT python)
  install(PROGRAMS $<TARGET_FILE:tilec_cli> DESTINATION tilec/bin COMPONENT python)
  # The flagship kernel behind tilec.torch.flash_attention, and the gemms
  # behind tilec.gemm (python/tilec/splitk.py).
  install(FILES ${PROJECT_SOURCE_DIR}/examples/flash_attention.tile ${PROJECT_SOURCE_DIR}/examples/gemm.tile
                ${PROJECT_SOURCE_DIR}/examples/gemm_splitk.tile ${PROJECT_SOURCE_DIR}/examples/gemm_thin.tile
                DESTINATION tilec/kernels
          COMPONENT python)
  return()
endif()

set(TILEC_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tilec)
set(TILEC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tilec)

install(TARGETS tilec_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tilert LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tilert_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/tilert.h
              ${PROJECT_SOURCE_DIR}/compiler/include/tilec.h
        DESTINATION ${TILEC_INSTALL_INCLUDEDIR})
install(FILES ${DLPACK_INCLUDE_DIR}/dlpack/dlpack.h DESTINATION ${TILEC_INSTALL_INCLUDEDIR}/dlpack)

# Relative paths from the config file and the .pc file to the rest of the tree.
file(RELATIVE_PATH TILEC_CMAKEDIR_TO_PREFIX
     ${CMAKE_INSTALL_PREFIX}/${TILEC_INSTALL_CMAKEDIR} ${CMAKE_INSTALL_PREFIX})
file(RELATIVE_PATH TILEC_PCDIR_TO_PREFIX
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TILEC_PCDIR_TO_PREFIX "${TILEC_PCDIR_TO_PREFIX}")
# Libraries a static link needs besides libtilert.a.
set(TILEC_STATIC_LIBS "")
foreach(l ${CMAKE_DL_LIBS} m)
  string(APPEND TILEC_STATIC_LIBS " -l${l}")
endforeach()
string(STRIP "${TILEC_STATIC_LIBS}" TILEC_STATIC_LIBS)
set(TILEC_SHARED_NAME ${CMAKE_SHARED_LIBRARY_PREFIX}tilert${CMAKE_SHARED_LIBRARY_SUFFIX})
set(TILEC_STATIC_NAME ${CMAKE_STATIC_LIBRARY_PREFIX}tilert${CMAKE_STATIC_LIBRARY_SUFFIX})

configure_file(${PROJECT_SOURCE_DIR}/cmake/tilecConfig.cmake.in
               ${CMAKE_CURRENT_BINARY_DIR}/tilecConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tilecConfigVersion.cmake
                                 VERSION ${TILEC_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tilecConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tilecConfigVersion.cmake
        DESTINATION ${TILEC_INSTALL_CMAKEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/tilert.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tilert.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tilert.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
