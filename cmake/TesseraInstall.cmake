# `cmake --install`: the libraries, their public headers (include/tessera/<level>/..., without the
# private ones in internal/ folders), the tessera binary, and the CMake package `tessera`
# (tesseraConfig.cmake, its version file, the targets tessera::core, tessera::gpu, ...), so that a
# project does find_package(tessera REQUIRED) and links tessera::gpu.
# Components: tessera_development (libraries, headers, package), tessera_runtime (the programs).
include(CMakePackageConfigHelpers)

set(TESSERA_EXPORTED_LIBRARIES core hw cluster k8s workload device sim_engine sim_gpu_options sim_gpu sim_mig
  sim_cluster nvml cuda gpu metrics tenant scenario mig experiment)
set(TESSERA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)

set(_tessera_library_targets)
foreach(lib ${TESSERA_EXPORTED_LIBRARIES})
  # tessera_gpu is exported as tessera::gpu, the name of its alias in the build.
  set_target_properties(tessera_${lib} PROPERTIES EXPORT_NAME ${lib})
  list(APPEND _tessera_library_targets tessera_${lib})
  # A sanitized build's archives call into the sanitizer's runtime: whoever links them needs it.
  if(TESSERA_SANITIZE_FLAGS)
    target_link_options(tessera_${lib} INTERFACE ${TESSERA_SANITIZE_FLAGS})
  endif()
endforeach()
install(TARGETS ${_tessera_library_targets} EXPORT tesseraTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tessera_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tessera_development)

# The CLI's and the daemon's headers belong to the program, the interposer's to its own .so.
install(DIRECTORY ${TESSERA_INCLUDE_DIR}/tessera ${TESSERA_GENERATED_INCLUDE_DIR}/tessera
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT tessera_development
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h"
  PATTERN "internal" EXCLUDE
  REGEX "/tessera/cli$" EXCLUDE
  REGEX "/tessera/daemon$" EXCLUDE
  REGEX "/tessera/dra$" EXCLUDE
  REGEX "/backends/interpose$" EXCLUDE
  REGEX "/backends/cuda/kernels$" EXCLUDE)

install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${TESSERA_INSTALL_CMAKEDIR}
  COMPONENT tessera_development)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
# Before 1.0 a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tesseraConfig.cmake
  ${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  DESTINATION ${TESSERA_INSTALL_CMAKEDIR} COMPONENT tessera_development)

install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tessera_runtime)
if(TARGET tessera_interpose)
  install(TARGETS tessera_interpose
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tessera_runtime)
endif()
