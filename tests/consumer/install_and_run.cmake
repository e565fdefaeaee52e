# cmake -DTESSERA_BUILD_DIR=... -DCONSUMER_SOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#       -DCXX_COMPILER=... [-DCXX_COMPILER_LAUNCHER=...] -P install_and_run.cmake
# Installs the development component of a built tessera into WORK_DIR/prefix (it builds nothing),
# configures and builds the consumer against it with find_package, and runs it.
foreach(var TESSERA_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_and_run.cmake: set -D${var}=...")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("installing tessera" ${CMAKE_COMMAND} --install ${TESSERA_BUILD_DIR} --prefix ${prefix}
  --component tessera_development)
# Relative to the prefix, so that a checkout under a folder named cli or internal passes.
file(GLOB_RECURSE installed LIST_DIRECTORIES true RELATIVE ${prefix}/include ${prefix}/include/*)
list(FILTER installed INCLUDE REGEX "(^|/)(internal|cli)(/|$)")
if(installed)
  list(JOIN installed "\n  " installed)
  message(FATAL_ERROR "private headers were installed:\n  ${installed}")
endif()
set(launcher)
if(CXX_COMPILER_LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER})
endif()
run_step("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR}
  -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${launcher})
run_step("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step("running the consumer" ${WORK_DIR}/build/tessera_consumer)
message("${step_output}")
