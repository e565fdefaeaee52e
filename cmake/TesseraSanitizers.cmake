# -DTESSERA_SANITIZE=address,undefined (or thread): every target of this build, the tests, their
# fakes and the interposer included, is compiled and linked with those sanitizers.
# `./run.sh test-asan` and `./run.sh test-tsan` configure it in build-asan/ and build-tsan/.
# Unlike the warnings, these flags are global: a sanitizer must see all code in the process, and
# static libraries built with it need its runtime where they are linked, so the exported targets
# carry the link option to a project that links the installed package (TesseraInstall.cmake).
set(TESSERA_SANITIZE "" CACHE STRING
  "Sanitizers for every target, comma-separated: address, undefined, leak, thread (empty: none)")

if(TESSERA_SANITIZE)
  string(REPLACE "," ";" _tessera_sanitizers "${TESSERA_SANITIZE}")
  foreach(s IN LISTS _tessera_sanitizers)
    if(NOT s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "TESSERA_SANITIZE: unknown sanitizer '${s}' in '${TESSERA_SANITIZE}'; "
                          "use address, undefined, leak or thread, comma-separated")
    endif()
  endforeach()
  if("thread" IN_LIST _tessera_sanitizers AND ("address" IN_LIST _tessera_sanitizers OR
                                               "leak" IN_LIST _tessera_sanitizers))
    message(FATAL_ERROR "TESSERA_SANITIZE='${TESSERA_SANITIZE}': thread cannot be combined with "
                        "address or leak; configure a separate build for each")
  endif()
  set(TESSERA_SANITIZE_FLAGS -fsanitize=${TESSERA_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _tessera_sanitizers)
    # A finding fails the test that made it instead of scrolling past in its output.
    list(APPEND TESSERA_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${TESSERA_SANITIZE_FLAGS})
  # GCC's manual: "sanitizers tend to increase the rate of false positive warnings, most notably
  # those around -Wmaybe-uninitialized" (GCC 12 at -O1 flags libstdc++'s own <regex>). The
  # uninstrumented builds keep that warning as an error.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(tessera_warnings INTERFACE -Wno-maybe-uninitialized)
  endif()
  add_link_options(${TESSERA_SANITIZE_FLAGS})
  # Clang links its runtime statically into executables only, so the shared libraries (the
  # interposer, linked --no-undefined, and the fakes) would have none. Linked shared as GCC does,
  # every object of a process uses the one copy, found through the runpath of the binaries.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    if("thread" IN_LIST _tessera_sanitizers)
      set(_tessera_runtime libclang_rt.tsan-x86_64.so)
    elseif("address" IN_LIST _tessera_sanitizers)
      set(_tessera_runtime libclang_rt.asan-x86_64.so)
    else()
      set(_tessera_runtime libclang_rt.ubsan_standalone-x86_64.so)
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_tessera_runtime}
      OUTPUT_VARIABLE _tessera_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(_tessera_runtime_dir "${_tessera_runtime}" DIRECTORY)
    add_link_options(-shared-libsan "LINKER:-rpath,${_tessera_runtime_dir}")
  endif()
  # Debug builds at -O1, as the sanitizers' documentation advises: -O0 makes the instrumented
  # suite much slower. Line tables only: a report's stack still names file and line, and full
  # debug information costs about a fifth of the compile time (measured on one k8s source).
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_compile_options($<$<CONFIG:Debug>:-O1> $<$<CONFIG:Debug>:-gline-tables-only>)
  else()
    add_compile_options($<$<CONFIG:Debug>:-O1> $<$<CONFIG:Debug>:-g1>)
  endif()
  # Code that cannot run instrumented (a library preloaded into other programs, a second copy of
  # a library in a namespace of its own) tests this and skips with its reason.
  add_compile_definitions(TESSERA_SANITIZED=1)
  message(STATUS "tessera: sanitizers ${TESSERA_SANITIZE} on every target")
endif()
