// CHECK(call) for the test programs built with nvcc: a CUDA runtime call that fails prints the
// file, line, call and the runtime's message, and the calling function returns 1.
#pragma once

#include <cstdio>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)
